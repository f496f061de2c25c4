"""An IAM path per project and environment (`/mangaassist/<env>/`) on every role the image and serving
stacks create, so that the execution policy can scope roles by path instead of by name (issue 50 §1).

A role without `RoleName` gets a name CloudFormation generates, `<stack>-<logical id>-<suffix>` cut to IAM's
64 characters: public names show the stack part cut to 25 (`DataSagemakerAutomationSt-LambdaSagemakerServiceRol-…`),
so `MangaAssist-staging-Serving-ModelsExecutionRole…` becomes `MangaAssist-staging-Servi-…` and a policy on
`role/MangaAssist-*-Serving-*` refuses its CreateRole. The format is observed, not documented; a role's path
is never cut (`Path`: 1-512 characters, "/" at both ends, part of the role's ARN: IAM User Guide, "IAM
identifiers", and the CreateRole API reference). Path is create-only: an existing role moved under it is
replaced on the next deploy.
"""

from __future__ import annotations

import jsii
from aws_cdk import Aspects, IAspect
from aws_cdk import aws_iam as iam

from config.access import role_path
from constructs import Construct, IConstruct


@jsii.implements(IAspect)
class _RolePath:
    def __init__(self, path: str) -> None:
        self.path = path

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, iam.CfnRole) and node.path is None:
            node.path = self.path


def apply_role_path(scope: Construct, env_name: str) -> None:
    """Every `AWS::IAM::Role` in `scope` (CDK's own, e.g. custom resource providers', included) gets the path."""
    Aspects.of(scope).add(_RolePath(role_path(env_name)))
