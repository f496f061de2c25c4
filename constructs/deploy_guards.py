"""`make deploy`'s refusals in the template itself, so a plain `cdk deploy -c env=prod` meets them too
(issue 50 §6): CloudFormation template Rules "validate parameter values before CloudFormation creates or
updates any resources" (CloudFormation User Guide, "CloudFormation template Rules syntax"); a failed
assertion fails the change set with its AssertDescription.

- Assumed capacity (config/capacity_evidence.py): a production environment with assumed pool types gets a
  rule on the parameter `AcceptAssumedCapacity`, empty by default, which `make deploy` fills from
  ACCEPT_ASSUMED_CAPACITY (or `cdk deploy --parameters MangaAssist-prod-Serving:AcceptAssumedCapacity=...`).
  The CDK CLI reuses a parameter's previous value (aws-cdk ParameterValues: `UsePreviousValue`), so an
  accepted stack stays accepted until measured. Only a stack with the rule declares the parameter
  (CloudFormation refuses an undeclared one): `python -m ops.pipeline.assumed_capacity ENV --cdk-parameter`.
- Paging placeholder (config/alerting.py): a production environment paging a placeholder gets a rule that
  always fails; that template alone tells cfn-lint to skip W8003 ("will always return False").
- Not the peak-window guard: a rule never sees the clock, and a custom resource run on every deploy needs a
  property that changes every synth, a diff in every review. It stays in `make deploy` and `bin/ops deploy`
  (docs/how-to/deploy.md "Deploy windows").
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import CfnParameter, CfnRule, CfnRuleAssertion, Fn, Stack

from config.naming import PARAMETER_ACCEPT_ASSUMED_CAPACITY as ACCEPT_PARAMETER


@dataclass(frozen=True)
class DeployGuardsProps:
    """What a production environment's deploy must not go on (empty: no rule); stacks/serving_props.py."""

    env_name: str
    config_file: str  # where the paging destination is set, named in the refusal
    assumed_types: tuple[str, ...] = ()  # pool types whose capacity is assumed, not measured
    paging_placeholders: tuple[str, ...] = ()  # paging destinations that reach nobody


def add_deploy_guards(stack: Stack, props: DeployGuardsProps) -> None:
    assumed = props.assumed_types
    if assumed:
        accepted = CfnParameter(
            stack,
            ACCEPT_PARAMETER,
            type="String",
            default="",
            description="Why this production deploy may go on an assumed capacity (make deploy: ACCEPT_ASSUMED_CAPACITY)",
        )
        CfnRule(
            stack,
            "NoDeployOnAssumedCapacity",
            assertions=[
                CfnRuleAssertion(
                    assert_=Fn.condition_not(Fn.condition_equals(accepted.value_as_string, "")),
                    assert_description=f"{props.env_name} is production and the capacity of {', '.join(assumed)} is assumed: "
                    "measure it (bin/loadtest), or deploy with the parameter "
                    f"{stack.stack_name}:{ACCEPT_PARAMETER}=<why> (make deploy: ACCEPT_ASSUMED_CAPACITY)",
                )
            ],
        )
    found = props.paging_placeholders
    if found:
        stack.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W8003"]}})  # the rule below fails on purpose
        CfnRule(
            stack,
            "NoProductionPagingPlaceholder",
            assertions=[
                CfnRuleAssertion(
                    assert_=Fn.condition_equals("placeholder", "replaced"),
                    assert_description=f"{props.env_name} is production and pages a placeholder that reaches nobody "
                    f"({'; '.join(found)}): put the on-call destination in {props.config_file}",
                )
            ],
        )
