"""`MangaAssist-<env>-Deployer`: what `make deploy` (and so `bin/ops deploy`) needs beyond the operator
policy: to assume the CDK bootstrap roles of this environment's account and region, nothing else.

The CDK CLI does the deploy with those roles, not with the caller's own permissions: it uploads the
file assets with the file-publishing role, reads the deployed stacks with the lookup role and asks
CloudFormation to deploy with the deploy role, which passes CloudFormation the execution role. What
CloudFormation may then create is the execution role's policy, which `make bootstrap` scopes to the
resource types the two stacks create (constructs/execution_policy.py). The roles are the ones the
synthesised cloud assembly names (tests/stacks/test_deployer_policy.py compares them); their names are
the bootstrap template's, `cdk-<qualifier>-<role>-<account>-<region>` (AWS CDK v2 Developer Guide,
"Bootstrapping your environment"). `make deploy`'s own steps before and after the CDK CLI
(ops/pipeline/deploy_window.py, ops/pipeline/record_deployed.py) read and write local files only.
`bin/ops deploy` needs the operator policy as well: it moves scaling aside and back around the deploy.
`bin/ops preflight` (make deploy's first step) reads, read-only: the account's SageMaker quotas and its
cost-allocation tags (neither action has a resource type: Service Authorization Reference), and the
model-data buckets' region, default encryption and listing, by bucket ARN (issue 50 §2).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from aws_cdk import Aws, CfnOutput
from aws_cdk import aws_iam as iam

from config.access import DEPLOYER, policy_name
from constructs import Construct
from constructs.nag import acknowledge

CDK_QUALIFIER = "hnb659fds"  # the default bootstrap qualifier (cdk.json sets no other)
# The bootstrap roles the CDK CLI assumes for this app: no container image assets, so no image-publishing role.
CDK_ROLES = ("deploy-role", "file-publishing-role", "lookup-role")
OUTPUT_DEPLOYER_POLICY_ARN = "DeployerPolicyArn"


@dataclass(frozen=True)
class DeployerScope:
    env_name: str
    partition: str
    region: str
    account: str
    model_data_buckets: tuple[str, ...] = field(default=())  # what `bin/ops preflight` reads


PREFLIGHT_ACCOUNT_READS = (
    "ce:ListCostAllocationTags",
    "servicequotas:ListAWSDefaultServiceQuotas",
    "servicequotas:ListServiceQuotas",
)
PREFLIGHT_BUCKET_READS = ("s3:GetBucketLocation", "s3:GetEncryptionConfiguration", "s3:ListBucket")


def model_data_buckets(uris: Iterable[str]) -> tuple[str, ...]:
    """The buckets of the variants' `s3://BUCKET/prefix/` model data, sorted, each once."""
    return tuple(sorted({uri.removeprefix("s3://").split("/", 1)[0] for uri in uris}))


def cdk_role_arn(scope: DeployerScope, role: str) -> str:
    return f"arn:{scope.partition}:iam::{scope.account}:role/cdk-{CDK_QUALIFIER}-{role}-{scope.account}-{scope.region}"


def deployer_statements(scope: DeployerScope) -> list[dict]:
    """The policy's statements, IAM JSON: each role by its whole ARN, no wildcard."""
    roles = [cdk_role_arn(scope, role) for role in CDK_ROLES]
    statements = [
        {"Sid": "CdkBootstrapRoles", "Effect": "Allow", "Action": ["sts:AssumeRole"], "Resource": roles},
        {"Sid": "PreflightAccountReads", "Effect": "Allow", "Action": list(PREFLIGHT_ACCOUNT_READS), "Resource": "*"},
    ]
    if scope.model_data_buckets:
        buckets = [f"arn:{scope.partition}:s3:::{bucket}" for bucket in scope.model_data_buckets]
        statements.append(
            {"Sid": "PreflightModelData", "Effect": "Allow", "Action": list(PREFLIGHT_BUCKET_READS), "Resource": buckets}
        )
    return statements


class DeployerPolicy(Construct):
    """The managed policy, named for the environment, and a stack output with its ARN."""

    def __init__(self, scope: Construct, id: str, *, env_name: str, model_data_buckets: tuple[str, ...] = ()) -> None:
        super().__init__(scope, id)
        deployer_scope = DeployerScope(env_name, Aws.PARTITION, Aws.REGION, Aws.ACCOUNT_ID, model_data_buckets)
        document = {"Version": "2012-10-17", "Statement": deployer_statements(deployer_scope)}
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            managed_policy_name=policy_name(env_name, DEPLOYER),
            description=f"make deploy ENV={env_name}: assume the CDK bootstrap roles of its account and region",
            document=iam.PolicyDocument.from_json(document),
        )
        acknowledge(
            self.policy,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "bin/ops preflight: ListServiceQuotas, ListAWSDefaultServiceQuotas and ListCostAllocationTags have no "
            "resource type (Service Authorization Reference); read-only",
        )
        CfnOutput(scope, OUTPUT_DEPLOYER_POLICY_ARN, value=self.policy.managed_policy_arn)
