"""`MangaAssist-<env>-Operator`: the customer-managed policy an operator's role needs to run every
command of the ops CLI (`bin/ops`) on this environment, and nothing else.

The statements are built by `operator_statements` from plain strings, so the template and the test
that proves the policy (tests/ops/operator_policy_check.py: every AWS call each ops command makes in
the test suite, recorded with botocore's `before-parameter-build` hook and evaluated against these
statements by moto's IAM policy engine) read one definition.

Where a statement's resource is wider than one of our resources, the reason is in `WIDER`:
- CloudWatch GetMetricData and Application Auto Scaling's Describe* calls take no resource ARN at all.
- Application Auto Scaling's write calls take a scalable target's ARN, an ID assigned at
  registration that changes each time `ops deploy` deregisters and re-registers a variant.
- Endpoint configs and models get names CloudFormation generates on every blue/green deploy; the CLI
  only describes them.
- `ops status` and the guards list the alarms in ALARM (DescribeAlarms with StateValue) and keep the
  endpoint's own; a list call is not one alarm's.
- `ops deploy` runs `make deploy`, whose CDK CLI assumes the bootstrap stack's roles (qualifier
  hnb659fds, CDK's default); those roles, not the operator, hold CloudFormation's permissions.
`sts:GetCallerIdentity` (every command checks the account first) needs no permission.
Not here: `bedrock-import`, which works on an S3 artifact and a Bedrock role of its own, not on an
environment (docs/operations.md, "Bedrock Custom Model Import").
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, CfnOutput, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from config import naming
from constructs import Construct
from constructs.nag import acknowledge

CDK_QUALIFIER = "hnb659fds"  # the default bootstrap qualifier (cdk.json sets no other)

# Read-only: what an operator needs to look before acting.
ENDPOINT_READ = ["sagemaker:DescribeEndpoint"]
ENDPOINT_WRITE = ["sagemaker:UpdateEndpointWeightsAndCapacities"]  # shift, rollback, shift --to-config
ENDPOINT_INVOKE = ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"]  # smoke, capacity
SCALING = [
    "application-autoscaling:DescribeScalableTargets",
    "application-autoscaling:DescribeScalingPolicies",
    "application-autoscaling:DescribeScheduledActions",
    "application-autoscaling:DescribeScalingActivities",  # scaling-history; no resource-level permission
    # `ops deploy` moves a scaled variant's scaling aside and puts it back; `ops restore-scaling` too.
    "application-autoscaling:RegisterScalableTarget",
    "application-autoscaling:DeregisterScalableTarget",
    "application-autoscaling:PutScalingPolicy",
    "application-autoscaling:DeleteScalingPolicy",
    "application-autoscaling:PutScheduledAction",
    "application-autoscaling:DeleteScheduledAction",
]
IMAGES = ["ecr:DescribeImages", "ecr:BatchGetImage", "ecr:PutImage"]  # verify; release-tag


@dataclass(frozen=True)
class OperatorScope:
    """The environment's resources, as strings: CDK tokens in the stack, concrete names in the proof."""

    env_name: str
    partition: str
    region: str
    account: str
    endpoint_name: str
    repository_arn: str
    capture_bucket_arn: str | None
    key_arn: str

    def arn(self, service: str, resource: str, *, region: bool = True, account: bool = True) -> str:
        return (
            f"arn:{self.partition}:{service}:{self.region if region else ''}:{self.account if account else ''}:"
            f"{resource}"
        )


def operator_statements(scope: OperatorScope) -> list[dict]:
    """The policy's statements, IAM JSON."""
    # SageMaker writes ARNs with the resource name in lower case (DescribeEndpoint's EndpointArn).
    endpoint = scope.arn("sagemaker", f"endpoint/{scope.endpoint_name.lower()}")
    stacks = [
        scope.arn("cloudformation", f"stack/{name}/*")
        for name in (naming.serving_stack_name(scope.env_name), naming.image_stack_name(scope.env_name))
    ]
    statements = [
        _allow("Endpoint", ENDPOINT_READ + ENDPOINT_WRITE + ENDPOINT_INVOKE, [endpoint]),
        _allow(
            "EndpointConfigsAndModels",
            ["sagemaker:DescribeEndpointConfig", "sagemaker:DescribeModel"],
            [scope.arn("sagemaker", "endpoint-config/*"), scope.arn("sagemaker", "model/*")],
        ),
        _allow("Alarms", ["cloudwatch:DescribeAlarms"], [scope.arn("cloudwatch", "alarm:*")]),
        _allow("Metrics", ["cloudwatch:GetMetricData"], ["*"]),
        _allow("Scaling", SCALING, ["*"]),
        _allow("ImageRepository", IMAGES, [scope.repository_arn]),
        _allow("Stacks", ["cloudformation:DescribeStacks"], stacks),
        _allow(
            "CdkDeployRoles",
            ["sts:AssumeRole"],
            [scope.arn("iam", f"role/cdk-{CDK_QUALIFIER}-*-{scope.account}-{scope.region}", region=False)],
        ),
    ]
    if scope.capture_bucket_arn:  # `ops capacity --workload capture` replays what data capture stored
        statements += [
            _allow("CaptureList", ["s3:ListBucket"], [scope.capture_bucket_arn]),
            _allow("CaptureRead", ["s3:GetObject"], [f"{scope.capture_bucket_arn}/*"]),
            _allow("CaptureDecrypt", ["kms:Decrypt"], [scope.key_arn]),  # the capture bucket's SSE-KMS key
        ]
    return statements


def _allow(sid: str, actions: list[str], resources: list[str]) -> dict:
    return {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources}


class OperatorPolicy(Construct):
    """The managed policy, named for the environment, and a stack output with its ARN."""

    def __init__(
        self, scope: Construct, id: str, *, operator_scope: OperatorScope, capture_bucket: s3.IBucket | None
    ) -> None:
        super().__init__(scope, id)
        document = {"Version": "2012-10-17", "Statement": operator_statements(operator_scope)}
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            managed_policy_name=naming.operator_policy_name(operator_scope.env_name),
            description=f"Everything the ops CLI (bin/ops) needs on {operator_scope.env_name}; attach it to operators' roles",
            document=iam.PolicyDocument.from_json(document),
        )
        CfnOutput(scope, naming.OUTPUT_OPERATOR_POLICY_ARN, value=self.policy.managed_policy_arn)
        self._acknowledge_wider_resources(operator_scope.env_name, capture_bucket)

    def _acknowledge_wider_resources(self, env_name: str, capture_bucket: s3.IBucket | None) -> None:
        # cdk-nag prints the ARNs as written: with CloudFormation's pseudo-parameters.
        pseudo = "arn:<AWS::Partition>:{service}:<AWS::Region>:<AWS::AccountId>:{resource}"
        wider = {
            "*": "GetMetricData and Application Auto Scaling's Describe* take no resource; its write calls take a "
            "scalable target ARN assigned at registration, which changes each time ops deploy re-registers a variant",
            pseudo.format(service="sagemaker", resource="endpoint-config/*"): "endpoint config names are generated "
            "by CloudFormation on every blue/green deploy; the CLI only describes them",
            pseudo.format(service="sagemaker", resource="model/*"): "model names are generated by CloudFormation on "
            "every deploy that changes a model; the CLI only describes them",
            pseudo.format(service="cloudwatch", resource="alarm:*"): "ops lists the alarms in ALARM (DescribeAlarms "
            "by state) and keeps the endpoint's own; read-only",
            f"arn:<AWS::Partition>:iam::<AWS::AccountId>:role/cdk-{CDK_QUALIFIER}-*-<AWS::AccountId>-<AWS::Region>": (
                "ops deploy runs make deploy, whose CDK CLI assumes the bootstrap stack's deploy, publishing and "
                "lookup roles; they hold CloudFormation's permissions, not the operator"
            ),
        }
        for stack in (naming.serving_stack_name(env_name), naming.image_stack_name(env_name)):
            wider[pseudo.format(service="cloudformation", resource=f"stack/{stack}/*")] = (
                "a stack's ARN ends in an ID CloudFormation assigns at creation; the name before it is ours"
            )
        if capture_bucket is not None:
            logical_id = Stack.of(self).get_logical_id(capture_bucket.node.default_child)
            wider[f"<{logical_id}.Arn>/*"] = (
                "data capture writes one object per batch under generated keys; the operator reads them all"
            )
        for resource, reason in wider.items():
            acknowledge(self.policy, f"AwsSolutions::AwsSolutions-IAM5[Resource::{resource}]", reason)


def operator_scope_for_stack(
    env_name: str, endpoint_name: str, repository_arn: str, capture_bucket_arn: str | None, key_arn: str
) -> OperatorScope:
    """The scope in a stack: partition, region and account as CloudFormation pseudo-parameters."""
    return OperatorScope(
        env_name=env_name,
        partition=Aws.PARTITION,
        region=Aws.REGION,
        account=Aws.ACCOUNT_ID,
        endpoint_name=endpoint_name,
        repository_arn=repository_arn,
        capture_bucket_arn=capture_bucket_arn,
        key_arn=key_arn,
    )
