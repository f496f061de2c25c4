"""parliament (an IAM policy linter that knows AWS's actions, resource ARN formats and condition keys, from
its copy of the Service Authorization Reference) on every policy document of the synthesised templates.

Policies are linted as they would read once deployed: CloudFormation's intrinsic functions are resolved
to strings (pseudo-parameters to the environment's values, `Ref`/`Fn::GetAtt` of a resource to a name or
ARN of that resource type's format, `Fn::ImportValue` to the exporting stack's output), so parliament can
match each ARN against the formats the actions accept.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parliament import analyze_policy_string
from ruamel.yaml import YAML

ACKNOWLEDGED = Path(__file__).resolve().parent / "iam_lint_acknowledged.yaml"

# The ARN of a resource of each type the templates reference in a policy; {name} is its logical ID.
ARN_FORMATS = {
    "AWS::S3::Bucket": "arn:{p}:s3:::{name}",
    "AWS::KMS::Key": "arn:{p}:kms:{r}:{a}:key/{name}",
    "AWS::Lambda::Function": "arn:{p}:lambda:{r}:{a}:function:{name}",
    "AWS::SNS::Topic": "arn:{p}:sns:{r}:{a}:{name}",
    "AWS::IAM::Role": "arn:{p}:iam::{a}:role/{name}",
    "AWS::IAM::ManagedPolicy": "arn:{p}:iam::{a}:policy/{name}",
    "AWS::StepFunctions::StateMachine": "arn:{p}:states:{r}:{a}:stateMachine:{name}",
    "AWS::CodeBuild::Project": "arn:{p}:codebuild:{r}:{a}:project/{name}",
    "AWS::Logs::LogGroup": "arn:{p}:logs:{r}:{a}:log-group:{name}:*",
    "AWS::ECR::Repository": "arn:{p}:ecr:{r}:{a}:repository/{name}",
    "AWS::SageMaker::Endpoint": "arn:{p}:sagemaker:{r}:{a}:endpoint/{name}",
    "AWS::SageMaker::EndpointConfig": "arn:{p}:sagemaker:{r}:{a}:endpoint-config/{name}",
    "AWS::SageMaker::Model": "arn:{p}:sagemaker:{r}:{a}:model/{name}",
    "AWS::CloudWatch::Alarm": "arn:{p}:cloudwatch:{r}:{a}:alarm:{name}",
    "AWS::Events::Rule": "arn:{p}:events:{r}:{a}:rule/{name}",
    "AWS::Budgets::Budget": "arn:{p}:budgets::{a}:budget/{name}",
}
REF_IS_ARN = {"AWS::SNS::Topic", "AWS::StepFunctions::StateMachine", "AWS::IAM::ManagedPolicy"}
POLICY_PROPERTIES = {
    "AWS::IAM::ManagedPolicy": ("PolicyDocument",),
    "AWS::IAM::Policy": ("PolicyDocument",),
    "AWS::S3::BucketPolicy": ("PolicyDocument",),
    "AWS::SNS::TopicPolicy": ("PolicyDocument",),
    "AWS::KMS::Key": ("KeyPolicy",),
}


@dataclass
class Stack:
    name: str
    template: dict
    partition: str
    region: str
    account: str


class Resolver:
    """CloudFormation values -> strings, for the stacks of one environment (imports resolve across them)."""

    def __init__(self, stacks: list[Stack]) -> None:
        self.stacks = stacks

    def resolve(self, stack: Stack, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(stack, v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1 or not next(iter(value)).startswith(("Fn::", "Ref")):
            return {k: self.resolve(stack, v) for k, v in value.items()}
        ((function, argument),) = value.items()
        return getattr(self, "_" + function.replace("::", "_").lower())(stack, argument)

    def _ref(self, stack: Stack, name: str) -> str:
        pseudo = {"AWS::Partition": stack.partition, "AWS::Region": stack.region, "AWS::AccountId": stack.account}
        pseudo |= {"AWS::URLSuffix": "amazonaws.com", "AWS::StackName": stack.name}
        if name in pseudo:
            return pseudo[name]
        resource_type = stack.template["Resources"][name]["Type"]
        return self._arn(stack, name, resource_type) if resource_type in REF_IS_ARN else name.lower()

    def _fn_getatt(self, stack: Stack, argument: list[str]) -> str:
        name, attribute = argument
        if attribute != "Arn":
            return name.lower()
        return self._arn(stack, name, stack.template["Resources"][name]["Type"])

    def _arn(self, stack: Stack, name: str, resource_type: str) -> str:
        values = {"p": stack.partition, "r": stack.region, "a": stack.account, "name": name.lower()}
        return ARN_FORMATS[resource_type].format(**values)

    def _fn_join(self, stack: Stack, argument: list) -> str:
        separator, parts = argument
        return separator.join(str(self.resolve(stack, p)) for p in parts)

    def _fn_sub(self, stack: Stack, argument: str | list) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        for key, replacement in variables.items():
            text = text.replace("${" + key + "}", str(self.resolve(stack, replacement)))
        while "${" in text:
            start = text.index("${")
            key = text[start + 2 : text.index("}", start)]
            name, _, attribute = key.partition(".")
            value = self._fn_getatt(stack, [name, attribute]) if attribute else self._ref(stack, name)
            text = text.replace("${" + key + "}", value)
        return text

    def _fn_select(self, stack: Stack, argument: list) -> str:
        index, values = argument
        return self.resolve(stack, values)[int(index)]

    def _fn_split(self, stack: Stack, argument: list) -> list[str]:
        separator, text = argument
        return str(self.resolve(stack, text)).split(separator)

    def _fn_importvalue(self, stack: Stack, name: Any) -> str:
        name = self.resolve(stack, name)
        for other in self.stacks:
            for output in other.template.get("Outputs", {}).values():
                if self.resolve(other, output.get("Export", {}).get("Name")) == name:
                    return self.resolve(other, output["Value"])
        raise KeyError(f"no stack exports {name}")

    def _fn_if(self, stack: Stack, argument: list) -> Any:
        return self.resolve(stack, argument[1])


def policy_documents(stacks: list[Stack]) -> Iterator[tuple[str, dict]]:
    """(where, document) for every policy in the stacks: `Stack/LogicalId[/PolicyName]`."""
    resolver = Resolver(stacks)
    for stack in stacks:
        for logical_id, resource in stack.template["Resources"].items():
            properties = resource.get("Properties", {})
            for key in POLICY_PROPERTIES.get(resource["Type"], ()):
                yield f"{stack.name}/{logical_id}", resolver.resolve(stack, properties[key])
            for inline in properties.get("Policies", []) if resource["Type"] == "AWS::IAM::Role" else []:
                yield (
                    f"{stack.name}/{logical_id}/{inline['PolicyName']}",
                    resolver.resolve(stack, inline["PolicyDocument"]),
                )


def findings(where: str, document: dict) -> list[str]:
    """parliament's findings as `where: ISSUE detail` lines, community auditors included."""
    policy = analyze_policy_string(json.dumps(document), include_community_auditors=True)
    return [f"{where}: {f.issue} {json.dumps(f.detail, sort_keys=True, default=str)}" for f in policy.findings]


def acknowledged() -> list[dict]:
    """tests/iam_lint_acknowledged.yaml: each entry an `issue`, a `where` (fnmatch pattern), a `reason`."""
    return YAML(typ="safe", pure=True).load(ACKNOWLEDGED.read_text()) or []


def unacknowledged(lines: list[str], entries: list[dict]) -> list[str]:
    from fnmatch import fnmatchcase

    def known(line: str) -> bool:
        where, _, rest = line.partition(": ")
        issue, _, detail = rest.partition(" ")
        return any(
            e["issue"] == issue and fnmatchcase(where, e["where"]) and e.get("detail", "*") in (detail, "*")
            for e in entries
        )

    return [line for line in lines if not known(line)]
