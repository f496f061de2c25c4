"""One environment = the image stack plus the serving stack, both tagged from config."""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks

from config import naming
from config.access import PROJECT_TAG_KEY, PROJECT_TAG_VALUE
from config.schema import EnvironmentConfig
from constructs import Construct
from constructs.role_path import apply_role_path
from constructs.stack_role_boundary import apply_stack_role_boundary
from stacks.image_stack import ImageStack
from stacks.serving_stack import ServingStack

# The resource types the stack-role boundary recognises by the project's tag (constructs/stack_role_boundary.py).
PROJECT_TAGGED = (
    "AWS::KMS::Key",
    "AWS::CodeBuild::Project",
    "AWS::StepFunctions::StateMachine",
    "AWS::ECR::Repository",
)


def build_environment(
    scope: Construct, cfg: EnvironmentConfig, *, guarded: bool = True
) -> tuple[ImageStack, ServingStack]:
    env = cdk.Environment(account=cfg.account, region=cfg.region) if cfg.account else None
    tags = cfg.tags.model_dump()
    image = ImageStack(
        scope,
        naming.image_stack_name(cfg.name),
        cfg=cfg,
        env=env,
        tags=tags,
        description=f"MangaAssist LLM serving image ({cfg.name})",
    )
    serving = ServingStack(
        scope,
        naming.serving_stack_name(cfg.name),
        cfg=cfg,
        image=image.image,
        guarded=guarded,
        env=env,
        tags=tags,
        description=f"MangaAssist LLM SageMaker endpoint ({cfg.name})",
    )
    # Explicit, not only implied by the repository reference: models are created after the image stack
    # has built the image they name.
    serving.add_stack_dependency(image, "the serving models pull the image the image stack builds")
    for stack in (image, serving):
        # Every role either stack creates is capped by the bootstrap's boundary (issue 38): CloudFormation's
        # execution policy refuses a role without it.
        apply_stack_role_boundary(stack)
        apply_role_path(stack, cfg.name)  # the execution policy scopes roles by path, not by a name CFN may cut
        for key, value in tags.items():
            cdk.Tags.of(stack).add(key, value)
        # What the boundary tells the project's keys, builds, state machines and repositories by (issue 51):
        # only on those types, whose tags change in place (an endpoint config's would replace it).
        cdk.Tags.of(stack).add(PROJECT_TAG_KEY, PROJECT_TAG_VALUE, include_resource_types=list(PROJECT_TAGGED))
    return image, serving


def add_compliance_checks(app: cdk.App) -> None:
    """cdk-nag packs run during synth; an unacknowledged finding fails it."""
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app), NIST80053R5Checks(app))
