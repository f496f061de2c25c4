"""`MangaAssist-<env>-GitHubDeploy`: the role .github/workflows/deploy.yml assumes for one environment through
GitHub's OIDC provider, with no long-lived key (docs/how-to/deploy.md "CI pipelines").

Trust: `sts:AssumeRoleWithWebIdentity` from the account's OIDC provider for token.actions.githubusercontent.com,
for a token whose `aud` is sts.amazonaws.com and whose `sub` names this repository, GitHub environment and,
with `pin_branch`, branch: `repo:ORG/REPO:environment:ENV`, continued `:ref:refs/heads/BRANCH` with the
subject template `["repo", "context", "ref"]` (GitHub Docs, "OpenID Connect reference"), compared with
StringEquals.

Permissions: the environment's Deployer and Operator policies, capped by a boundary to assuming the CDK
roles and the calls `bin/ops verify` and `bin/ops smoke` make (`VERIFY_AND_SMOKE_ACTIONS`; IAM User Guide,
"Permissions boundaries for IAM entities"): the pipeline cannot shift traffic, change scaling or tag images,
even when a deploy changes the two policies. tests/ops/test_github_deploy_role.py proves it.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, CfnOutput, Duration
from aws_cdk import aws_iam as iam

from config.access import GITHUB_DEPLOY, GITHUB_DEPLOY_BOUNDARY, policy_name
from constructs import Construct
from constructs.deployer_policy import PREFLIGHT_BUCKET_READS, DeployerScope, deployer_statements
from constructs.nag import acknowledge

GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"
STS_AUDIENCE = "sts.amazonaws.com"  # aws-actions/configure-aws-credentials' default `audience` input
ROLE = GITHUB_DEPLOY
BOUNDARY = GITHUB_DEPLOY_BOUNDARY
OUTPUT_ROLE_ARN = "GitHubDeployRoleArn"
# A first deploy of an environment takes 25-50 min; the CDK CLI re-assumes its bootstrap roles (chained
# sessions last at most 1 h) from these credentials, so they must outlive the deploy: the workflow asks
# for 2 h (`role-duration-seconds: 7200`), which the role's maximum must allow.
MAX_SESSION = Duration.hours(2)

# What `bin/ops verify` and `bin/ops smoke` call, as IAM authorises it (the calls recorded by
# tests/ops/test_github_deploy_role.py): verify reads the stacks' outputs, the endpoint, its config and
# models, the rollback alarms, each variant's image in ECR and the alarm topics' subscriptions; smoke
# describes the endpoint and invokes it, plain and streamed (InvokeEndpointWithResponseStream is
# authorised as sagemaker:InvokeEndpoint: SageMaker API reference).
VERIFY_AND_SMOKE_ACTIONS = (
    "cloudformation:DescribeStacks",
    "cloudwatch:DescribeAlarms",
    "cloudwatch:GetMetricData",  # verify: does every metric a rollback alarm reads have data
    "ecr:DescribeImages",
    "sagemaker:DescribeEndpoint",
    "sagemaker:DescribeEndpointConfig",
    "sagemaker:DescribeModel",
    "sagemaker:InvokeEndpoint",
    "sns:ListSubscriptionsByTopic",
)
BOUNDARY_WILDCARD_REASON = (
    "a permissions boundary caps actions, it grants nothing: the attached Operator policy names this "
    "environment's resources for them, and the boundary keeps the pipeline to the reads and the "
    "invocation bin/ops verify and smoke make"
)


@dataclass(frozen=True)
class GitHubSubject:
    repository: str  # owner/name, or owner@ID/name@ID
    environment: str  # the GitHub environment of the deploy job
    branch: str | None  # None: GitHub's default subject, without the branch

    def claim(self) -> str:
        """The `sub` claim GitHub writes for a job of this repository in this environment (on this branch)."""
        subject = f"repo:{self.repository}:environment:{self.environment}"
        return f"{subject}:ref:refs/heads/{self.branch}" if self.branch else subject


def trust_conditions(subject: GitHubSubject) -> dict:
    """The trust policy's condition: this audience and exactly this subject."""
    return {
        "StringEquals": {
            f"{GITHUB_OIDC_HOST}:aud": STS_AUDIENCE,
            f"{GITHUB_OIDC_HOST}:sub": subject.claim(),
        }
    }


def boundary_statements(scope: DeployerScope) -> list[dict]:
    """The boundary's statements, IAM JSON: the Deployer's own, verify's and smoke's actions, and the model-data
    reads of `bin/ops preflight` (the Deployer policy names the buckets: constructs/deployer_policy.py)."""
    return [
        *deployer_statements(scope),
        {"Sid": "VerifyAndSmoke", "Effect": "Allow", "Action": list(VERIFY_AND_SMOKE_ACTIONS), "Resource": ["*"]},
        {"Sid": "PreflightModelData", "Effect": "Allow", "Action": list(PREFLIGHT_BUCKET_READS), "Resource": ["*"]},
    ]


class GitHubDeployRole(Construct):
    """The role, its boundary, and a stack output with the role's ARN (the GitHub variable AWS_DEPLOY_ROLE_ARN)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        env_name: str,
        provider_arn: str,
        subject: GitHubSubject,
        policies: list[iam.IManagedPolicy],
    ) -> None:
        super().__init__(scope, id)
        deployer_scope = DeployerScope(env_name, Aws.PARTITION, Aws.REGION, Aws.ACCOUNT_ID)
        self.boundary = iam.ManagedPolicy(
            self,
            "Boundary",
            managed_policy_name=policy_name(env_name, BOUNDARY),
            description=f"Permissions boundary of {policy_name(env_name, ROLE)}: make deploy, bin/ops verify and smoke",
            document=iam.PolicyDocument.from_json(
                {"Version": "2012-10-17", "Statement": boundary_statements(deployer_scope)}
            ),
        )
        acknowledge(self.boundary, "AwsSolutions::AwsSolutions-IAM5[Resource::*]", BOUNDARY_WILDCARD_REASON)
        self.role = iam.Role(
            self,
            "Role",
            role_name=policy_name(env_name, ROLE),
            description=f"GitHub Actions deploy of {env_name} ({subject.claim()})",
            assumed_by=iam.WebIdentityPrincipal(provider_arn, trust_conditions(subject)),
            managed_policies=policies,  # the Deployer and Operator policies, of the same stack
            permissions_boundary=self.boundary,
            max_session_duration=MAX_SESSION,
        )
        CfnOutput(scope, OUTPUT_ROLE_ARN, value=self.role.role_arn)
