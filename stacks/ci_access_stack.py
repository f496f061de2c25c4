"""`MangaAssist-<env>-CiAccess`: what people and the pipeline wear on this environment, deployed by an
administrator only (issue 51): the Operator and Deployer policies, with data capture the CaptureReader policy
and the break-glass CaptureReader role, and with a `ci` section the account's GitHub OIDC provider (unless
`ci.oidc_provider` names the one that exists) and the role the deploy workflow assumes
(constructs/github_deploy_role.py).

Why here and not in the serving stack, nor in the bootstrap: a deploy must not change what a person may do.
The serving stack is deployed by the pipeline (`APPROVAL=never` on staging), and a policy it creates is one a
merged commit can widen for every human role that wears it; this stack is deployed with the administrator's
own credentials, so the execution policy, which now may create, version, attach or detach none of these
policies and write neither role (constructs/execution_policy_iam.py), is never used for it. The bootstrap
(ops/pipeline/execution_policy.py) could create them too, but it runs once per account before any stack
exists, while these policies name each environment's endpoint, repository, topics and capture bucket: here
they are CloudFormation resources, reviewed with `cdk diff`, checked by cdk-nag and the IAM linter, and
reference those resources exactly (CloudFormation exports of the image and serving stacks).

An administrator deploys it with their own credentials after the environment's first deploy and after each
change of `ci`, `data_capture.readers` or what the policies name (`make deploy-ci-access ENV=…`); `make deploy`
names the image and serving stacks only, so the pipeline never deploys the role it runs as, its trust, its
boundary or the policies people wear (docs/deploying.md "CI pipelines", docs/operations.md "Permissions").
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from config.naming import OUTPUT_CAPTURE_BUCKET_ARN, OUTPUT_CAPTURE_KEY_ARN, ci_access_stack_name, export_name
from config.schema import Ci, DataCapture, EnvironmentConfig
from constructs import Construct
from constructs.capture_reader_policy import CaptureReaderPolicy
from constructs.capture_reader_role import CaptureReaderRole
from constructs.deployer_policy import DeployerPolicy, model_data_buckets
from constructs.github_deploy_role import GITHUB_OIDC_HOST, STS_AUDIENCE, GitHubDeployRole, GitHubSubject
from constructs.operator_policy import OperatorPolicy, operator_scope_for_stack
from constructs.stack_role_boundary import apply_stack_role_boundary
from stacks.image_stack import ImageStack
from stacks.serving_stack import ServingStack

CREATE = "create"


@dataclass(frozen=True)
class ServedResources:
    """What the people's policies name, from the image and serving stacks."""

    endpoint_name: str
    repository_arn: str
    topic_arns: tuple[str, ...]  # the paging and ticket topics (`bin/ops verify` reads their subscriptions)
    capture_exports: tuple[str, str] | None  # the capture bucket's and key's ARN exports, when capture is on
    model_data_buckets: tuple[str, ...] = ()  # what `bin/ops preflight` reads with the Deployer policy


class CiAccessStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        env_name: str,
        served: ServedResources,
        data_capture: DataCapture,
        ci: Ci | None,
        **kwargs,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        scope_ = operator_scope_for_stack(env_name, served.endpoint_name, served.repository_arn, served.topic_arns)
        operator = OperatorPolicy(self, "Operator", operator_scope=scope_)
        deployer = DeployerPolicy(self, "Deployer", env_name=env_name, model_data_buckets=served.model_data_buckets)
        if served.capture_exports is not None:
            bucket, key = served.capture_exports
            reader = CaptureReaderPolicy(self, "CaptureReader", env_name=env_name, bucket_export=bucket, key_export=key)
            role = CaptureReaderRole(self, "CaptureReaderRole", env_name=env_name, config=data_capture)
            role.role.add_managed_policy(reader.policy)  # reading only: no Operator policy (issue 51)
            apply_stack_role_boundary(role)  # as the stack roles': the project's data only, no IAM
        if ci is not None:
            self._github_deploy(env_name, ci, [deployer.policy, operator.policy])

    def _github_deploy(self, env_name: str, ci: Ci, policies: list[iam.ManagedPolicy]) -> None:
        if ci.oidc_provider == CREATE:
            # No thumbprint: IAM verifies GitHub's JWKS endpoint with its library of trusted root CAs and
            # uses a thumbprint only for a certificate outside it (IAM API reference,
            # CreateOpenIDConnectProvider; ThumbprintList is optional).
            provider = iam.OidcProviderNative(
                self,
                "GitHubOidcProvider",
                url=f"https://{GITHUB_OIDC_HOST}",
                client_ids=[STS_AUDIENCE],
                # A failed first create leaves nothing behind; a deleted stack keeps the provider, which
                # other roles in the account may trust (name its ARN in `ci.oidc_provider` then).
                removal_policy=cdk.RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
            )
            provider_arn = provider.oidc_provider_arn
        else:
            provider_arn = ci.oidc_provider
        subject = GitHubSubject(ci.github_repository, ci.github_environment, ci.branch if ci.pin_branch else None)
        GitHubDeployRole(
            self, "GitHubDeploy", env_name=env_name, provider_arn=provider_arn, subject=subject, policies=policies
        )


def served_resources(cfg: EnvironmentConfig, image: ImageStack, serving: ServingStack) -> ServedResources:
    """What the access stack's policies name, from the environment's image and serving stacks (CloudFormation
    exports: a serving deploy that would replace a topic, the capture bucket or its key stops at the export
    in use)."""
    capture_exports = (
        export_name(serving.stack_name, OUTPUT_CAPTURE_BUCKET_ARN),
        export_name(serving.stack_name, OUTPUT_CAPTURE_KEY_ARN),
    )
    return ServedResources(
        endpoint_name=cfg.endpoint_name,
        repository_arn=image.image.repository.repository_arn,
        topic_arns=serving.topic_arns,
        capture_exports=capture_exports if serving.capture is not None else None,
        model_data_buckets=model_data_buckets(v.model_data_s3_uri for v in cfg.variants),
    )


def build_ci_access(
    scope: Construct, cfg: EnvironmentConfig, served: ServedResources, serving: cdk.Stack
) -> CiAccessStack:
    """The stack; it comes after the serving stack, whose resources its policies name."""
    if cfg.ci is not None and cfg.ci.oidc_provider != CREATE:
        provider_account = cfg.ci.oidc_provider.split(":")[4]
        if cfg.account and provider_account != cfg.account:
            raise ValueError(
                f"ci.oidc_provider is in account {provider_account}, not in {cfg.name}'s account {cfg.account}: "
                f"name this account's GitHub OIDC provider, or 'create'"
            )
    env = cdk.Environment(account=cfg.account, region=cfg.region) if cfg.account else None
    tags = cfg.tags.model_dump()
    pipeline = f", GitHub OIDC deploy role for {cfg.ci.github_repository}" if cfg.ci else ""
    stack = CiAccessStack(
        scope,
        ci_access_stack_name(cfg.name),
        env_name=cfg.name,
        served=served,
        data_capture=cfg.data_capture,
        ci=cfg.ci,
        env=env,
        # Deployed with the caller's own credentials, not CDK's bootstrap roles: CloudFormation then acts as
        # the administrator, not with the execution role `make bootstrap` scopes to the image and serving
        # stacks' resource types (no managed policy or OIDC provider among them), and the pipeline, which
        # may assume only the bootstrap roles, cannot deploy it (aws-cdk-lib CliCredentialsStackSynthesizer:
        # "all stack operations will be performed using the CLI's current credentials").
        synthesizer=cdk.CliCredentialsStackSynthesizer(),
        tags=tags,
        description=f"MangaAssist access ({cfg.name}): the policies and roles people wear{pipeline}",
    )
    stack.add_stack_dependency(serving, "its reader policy imports the capture bucket's and key's ARNs")
    for key, value in tags.items():
        cdk.Tags.of(stack).add(key, value)
    return stack
