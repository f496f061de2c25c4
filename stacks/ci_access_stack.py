"""`MangaAssist-<env>-CiAccess`, synthesised only for an environment whose config has a `ci` section: the
account's GitHub OIDC provider (unless `ci.oidc_provider` names the one that exists) and the role the
deploy workflow assumes (constructs/github_deploy_role.py).

An administrator deploys it with their own credentials, once and after each change of `ci` (`make
deploy-ci-access ENV=…`, after the environment's first deploy: the role attaches the Deployer and Operator
policies the serving stack creates); `make deploy` names the image and serving stacks only, so the
pipeline never deploys the role it runs as, nor its trust or its boundary (docs/deploying.md "CI pipelines").
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from config.naming import ci_access_stack_name
from config.schema import Ci, EnvironmentConfig
from constructs import Construct
from constructs.github_deploy_role import GITHUB_OIDC_HOST, STS_AUDIENCE, GitHubDeployRole, GitHubSubject

CREATE = "create"


class CiAccessStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, *, env_name: str, ci: Ci, **kwargs) -> None:
        super().__init__(scope, id, **kwargs)
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
        GitHubDeployRole(self, "GitHubDeploy", env_name=env_name, provider_arn=provider_arn, subject=subject)


def build_ci_access(scope: Construct, cfg: EnvironmentConfig, serving: cdk.Stack) -> CiAccessStack | None:
    """The stack when `cfg.ci` is set; it comes after `serving`, whose policies its role attaches."""
    if cfg.ci is None:
        return None
    provider_account = cfg.ci.oidc_provider.split(":")[4] if cfg.ci.oidc_provider != CREATE else None
    if cfg.account and provider_account and provider_account != cfg.account:
        raise ValueError(
            f"ci.oidc_provider is in account {provider_account}, not in {cfg.name}'s account {cfg.account}: "
            f"name this account's GitHub OIDC provider, or 'create'"
        )
    env = cdk.Environment(account=cfg.account, region=cfg.region) if cfg.account else None
    tags = cfg.tags.model_dump()
    stack = CiAccessStack(
        scope,
        ci_access_stack_name(cfg.name),
        env_name=cfg.name,
        ci=cfg.ci,
        env=env,
        # Deployed with the caller's own credentials, not CDK's bootstrap roles: CloudFormation then acts as
        # the administrator, not with the execution role `make bootstrap` scopes to the image and serving
        # stacks' resource types (no OIDC provider among them), and the pipeline, which may assume only the
        # bootstrap roles, cannot deploy it (aws-cdk-lib CliCredentialsStackSynthesizer: "all stack
        # operations will be performed using the CLI's current credentials").
        synthesizer=cdk.CliCredentialsStackSynthesizer(),
        tags=tags,
        description=f"MangaAssist CI access ({cfg.name}): GitHub OIDC deploy role for {cfg.ci.github_repository}",
    )
    stack.add_stack_dependency(serving, "the role attaches the Deployer and Operator policies of the serving stack")
    for key, value in tags.items():
        cdk.Tags.of(stack).add(key, value)
    return stack
