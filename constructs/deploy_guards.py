"""`make deploy`'s refusals in the template itself, so that a plain `cdk deploy -c env=prod` meets them too
(issue 50 §6): CloudFormation template Rules, which "validate parameter values before CloudFormation creates
or updates any resources", on stack creation and on update (CloudFormation User Guide, "CloudFormation
template Rules syntax"). A failed assertion fails the change set with its AssertDescription: nothing changes.

- Assumed capacity (config/capacity_evidence.py): a production environment whose pool types are assumed
  declares a rule on the parameter `AcceptAssumedCapacity`, empty by default; `make deploy` fills it from
  ACCEPT_ASSUMED_CAPACITY, `cdk deploy --parameters MangaAssist-prod-Serving:AcceptAssumedCapacity="<why>"`
  does the same by hand. The reason stays in the stack's parameters (DescribeStacks shows it); the CDK CLI
  reuses a parameter's previous value when none is given (aws-cdk ParameterValues: `UsePreviousValue`), so
  an accepted stack stays accepted until the types are measured. Only a stack with the rule declares the
  parameter (the CLI sends a parameter the template lacks on, and CloudFormation refuses it): `make deploy`
  passes it only then (`python -m ops.pipeline.assumed_capacity ENV --cdk-parameter`).
- Paging placeholder (config/alerting.py): a production environment that pages a placeholder gets a rule
  that always fails: no override, as in `make deploy`. cfn-lint's W8003 ("will always return False") is
  what it is for, so that template alone tells cfn-lint to skip W8003 (template Metadata `cfn-lint`).
- The peak-window guard is not here: a rule sees parameters and the template, never the clock; a custom
  resource runs only when its properties change, so one that runs on every deploy needs a property that
  changes on every synth (a timestamp), which would make every `cdk diff` and review show a change. It stays
  in `make deploy` and `bin/ops deploy`; docs/how-to/deploy.md "Deploy windows" says so where `cdk deploy` appears.
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
