"""Every role of every synthesised template has a permissions boundary; the image and serving stacks'
roles and the break-glass reader have `MangaAssistGuard-StackRoleBoundary`, which allows every action those
roles are granted on the resources they are granted it on, denies IAM and KMS administration whatever a
role's policies say (issue 38), and keeps a role a deploy creates, with any inline policy, to the project's
own resources (issue 51)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from config.access import PROJECT_TAG_KEY, PROJECT_TAG_VALUE, STACK_ROLE_BOUNDARY
from constructs.stack_role_boundary import ROLE_ACTIONS, boundary_document
from tests.deploy_calls import SUFFIX, DeployResolver
from tests.iam_lint import Stack
from tests.operator_policy_check import allowed, authorization_reference, resource_types
from tests.shared_synthesis import cloud_assembly

WIDE = {"Effect": "Allow", "Action": "*", "Resource": "*"}
ACCOUNT, REGION = "222222222222", "ap-northeast-1"
OURS = {f"aws:ResourceTag/{PROJECT_TAG_KEY}": PROJECT_TAG_VALUE}  # what IAM sees of a resource the stacks tag


def synthesised(env_name: str) -> dict[str, dict]:
    """Every stack of the environment, the CI access stack included, as the app builds them (the run's
    shared synthesis, tests/shared_synthesis.py)."""
    assembly = cloud_assembly(env_name)
    return {
        path.name.removesuffix(".template.json"): json.loads(path.read_text())
        for path in assembly.glob("*.template.json")
    }


@pytest.fixture(scope="module")
def templates() -> dict[str, dict]:
    return {name: t for env in ("dev", "staging", "prod") for name, t in synthesised(env).items()}


def roles_without_boundary(template: dict) -> list[str]:
    return [
        lid
        for lid, r in template["Resources"].items()
        if r["Type"] == "AWS::IAM::Role" and not r.get("Properties", {}).get("PermissionsBoundary")
    ]


def test_every_role_of_every_template_has_a_boundary(templates) -> None:
    assert any(name.endswith("-CiAccess") for name in templates)
    roles = [lid for t in templates.values() for lid, r in t["Resources"].items() if r["Type"] == "AWS::IAM::Role"]
    assert len(roles) >= 20
    assert {name: roles_without_boundary(t) for name, t in templates.items() if roles_without_boundary(t)} == {}


def test_the_check_finds_a_role_without_one() -> None:
    stack = cdk.Stack(cdk.App(), "Unbounded")
    iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    assert roles_without_boundary(Template.from_stack(stack).to_json()) == ["Role1ABCC5F0"]


def test_the_image_and_serving_roles_and_the_reader_have_the_guard_boundary(templates) -> None:
    for name, template in templates.items():
        for lid, resource in template["Resources"].items():
            if resource["Type"] == "AWS::IAM::Role" and not lid.startswith("GitHubDeployRole"):
                # (the pipeline's role keeps its own, narrower boundary: constructs/github_deploy_role.py)
                text = str(resource["Properties"]["PermissionsBoundary"])
                assert f"policy/{STACK_ROLE_BOUNDARY}" in text, (name, lid, text)


class NamedResolver(DeployResolver):
    """ARNs as CloudFormation names the resources (tests/deploy_calls.py), buckets and repositories too:
    `<stack>-<logical id>-<suffix>` in lower case (observed, as the boundary's `mangaassist-*` relies on)."""

    LOWER = ("AWS::S3::Bucket", "AWS::ECR::Repository")

    def lower_name(self, stack: Stack, logical_id: str) -> str:
        return f"{stack.name}-{logical_id}-{SUFFIX}".lower()[:63]

    def _arn(self, stack: Stack, name: str, resource_type: str) -> str:
        if resource_type in self.LOWER:
            return super()._arn(stack, name, resource_type).replace(name.lower(), self.lower_name(stack, name))
        return super()._arn(stack, name, resource_type)

    def _ref(self, stack: Stack, name: str) -> str:
        if stack.template.get("Resources", {}).get(name, {}).get("Type") in self.LOWER:
            return self.lower_name(stack, name)
        return super()._ref(stack, name)


def bounded_documents(stack: Stack) -> Iterator[dict]:
    """Every policy document a role with the guard boundary holds: inline, DefaultPolicy, attached managed."""
    resources = stack.template["Resources"]
    bounded = {
        lid
        for lid, r in resources.items()
        if r["Type"] == "AWS::IAM::Role"
        and STACK_ROLE_BOUNDARY in json.dumps(r["Properties"].get("PermissionsBoundary"))
    }
    worn = {ref.get("Ref") for lid in bounded for ref in resources[lid]["Properties"].get("ManagedPolicyArns", [])}
    for lid, resource in resources.items():
        properties = resource.get("Properties", {})
        if lid in bounded:
            yield from (inline["PolicyDocument"] for inline in properties.get("Policies", []))
        roles = {ref.get("Ref") for ref in properties.get("Roles", []) if isinstance(ref, dict)}
        if (resource["Type"] == "AWS::IAM::Policy" and roles & bounded) or lid in worn:
            yield properties["PolicyDocument"]


def role_grants(env_name: str) -> tuple[list[tuple[str, str, dict]], set[str]]:
    """(action, resource ARN, what IAM sees of the resource) for every statement a bounded role of the
    environment holds, each action pattern expanded (the Service Authorization Reference's names); and the
    action patterns as the policies write them."""
    stacks = [Stack(name, t, "aws", REGION, ACCOUNT) for name, t in synthesised(env_name).items()]
    resolver = NamedResolver(stacks)
    tagged = {}  # the ARN of each resource the stacks tag as the project's
    for stack in stacks:
        for lid, resource in stack.template["Resources"].items():
            tags = resource.get("Properties", {}).get("Tags")
            if isinstance(tags, list) and {"Key": PROJECT_TAG_KEY, "Value": PROJECT_TAG_VALUE} in tags:
                tagged[resolver.resolve(stack, {"Fn::GetAtt": [lid, "Arn"]})] = OURS
    grants, written = [], set()
    for stack in stacks:
        for statement in (s for d in bounded_documents(stack) for s in resolver.resolve(stack, d)["Statement"]):
            written |= set(_as_list(statement["Action"]))
            for action in (a for pattern in _as_list(statement["Action"]) for a in expanded(pattern)):
                arns = [arn for arn in _as_list(statement["Resource"]) if applies(action, arn)]
                grants += [(action, arn, tagged.get(arn, {})) for arn in arns]
    return grants, written


def applies(action: str, arn: str) -> bool:
    """Whether IAM ever checks `action` against `arn`: the ARN has the format of one of the action's resource
    types (a grant may list a bucket and its objects for object and bucket actions alike)."""
    prefix = action.split(":")[0]
    types = [t for t, _ in resource_types(action)[0]]
    if arn == "*" or not types:
        return arn == "*" or not types
    formats = [authorization_reference()[prefix]["resources"][t] for t in types]
    return any(re.fullmatch(_format_regex(f), arn) for f in formats)


def _format_regex(arn_format: str) -> str:
    """`arn:${Partition}:s3:::${BucketName}/${ObjectName}` as a regular expression (a bucket name has no '/')."""
    parts = re.split(r"(\$\{[^}]+\})", arn_format)
    return "".join(
        ("[^/]+" if part == "${BucketName}" else ".+") if part.startswith("${") else re.escape(part) for part in parts
    )


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def expanded(action: str) -> list[str]:
    """The actions a pattern covers, from the Service Authorization Reference (parliament's copy)."""
    prefix, name = action.split(":")
    privileges = authorization_reference()[prefix]["privileges"]
    return [f"{prefix}:{p}" for p in privileges if allowed([{**WIDE, "Action": action}], f"{prefix}:{p}", "*", {})]


@pytest.mark.parametrize("env_name", ["prod", "dev"])
def test_the_boundary_allows_every_grant_of_the_bounded_roles_on_its_resource(env_name) -> None:
    """What each bounded role is granted, on the resource it is granted it on, with the tag the stacks give
    that resource: the boundary keeps all of it (else the role would be refused in AWS)."""
    boundary = boundary_document("aws", ACCOUNT)["Statement"]
    grants, written = role_grants(env_name)
    assert {"s3:GetObject", "kms:Encrypt", "codebuild:StartBuild", "ecr:PutImage", "states:StartExecution"} <= {
        action for action, _, _ in grants
    }
    refused = {
        f"{a} on {arn}"
        for a, arn, context in grants
        if not allowed(boundary, a, arn, context) and not (a in UNUSED_REPORT_GRANTS and ":report-group/" in arn)
    }
    assert sorted(refused) == []
    if env_name == "prod":  # prod has data capture: every kind of bounded role
        assert set(ROLE_ACTIONS) - written == set(), "ROLE_ACTIONS names an action no bounded role is granted"


# CDK grants a CodeBuild project's role its report groups (`report-group/<project>-*`) whether or not the
# buildspec declares reports; ours declares none (constructs/image_repository.py BUILDSPEC), and CodeBuild
# creates report groups without the project's tag, so the boundary refuses them, deliberately.
UNUSED_REPORT_GRANTS = {
    "codebuild:BatchPutCodeCoverages",
    "codebuild:BatchPutTestCases",
    "codebuild:CreateReport",
    "codebuild:CreateReportGroup",
    "codebuild:UpdateReport",
}


@pytest.mark.parametrize(
    "action",
    [
        "iam:CreateRole",
        "iam:AttachRolePolicy",
        "iam:PutRolePolicy",
        "iam:PassRole",
        "iam:CreatePolicyVersion",
        "iam:DeleteRolePermissionsBoundary",
        "iam:CreateAccessKey",
        "kms:PutKeyPolicy",
        "kms:CreateGrant",
        "kms:ScheduleKeyDeletion",
        "kms:DisableKey",
    ],
)
def test_no_role_policy_can_give_a_stack_role_iam_or_kms_administration(action) -> None:
    """A role's effective permissions need the boundary's Allow too: it has none of these, and its Deny
    holds even if the Allow statement were widened to everything."""
    boundary = boundary_document("aws", ACCOUNT)["Statement"]
    assert not allowed(boundary, action, "*", OURS)
    assert not allowed([*boundary, WIDE], action, "*", OURS)


# Issue 51: a role a deploy creates, with any inline policy (`WIDE`) and any trust, against the boundary.
ELSEWHERE = [
    ("read another team's object", "s3:GetObject", "arn:aws:s3:::payroll-exports/2026/11.csv", {}),
    ("list another team's bucket", "s3:ListBucket", "arn:aws:s3:::payroll-exports", {}),
    ("write another team's object", "s3:PutObject", "arn:aws:s3:::payroll-exports/x", {}),
    ("start another team's build", "codebuild:StartBuild", f"arn:aws:codebuild:{REGION}:{ACCOUNT}:project/Release", {}),
    (
        "start it with another tag",
        "codebuild:StartBuild",
        f"arn:aws:codebuild:{REGION}:{ACCOUNT}:project/Release",
        {f"aws:ResourceTag/{PROJECT_TAG_KEY}": "Payroll"},
    ),
    (
        "write an SSM parameter outside the project",
        "ssm:PutParameter",
        f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/payroll/db",
        {},
    ),
    (
        "write one on the project's own path",
        "ssm:PutParameter",
        f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/mangaassist/prod/rollback-floor/primary",
        {},
    ),
    (
        "decrypt with another team's key",
        "kms:Decrypt",
        f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        {},
    ),
    (
        "shift another endpoint's weights",
        "sagemaker:UpdateEndpointWeightsAndCapacities",
        f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:endpoint/payroll-model",
        {},
    ),
    (
        "shift this project's endpoint's weights",
        "sagemaker:UpdateEndpointWeightsAndCapacities",
        f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:endpoint/mangaassist-llm-prod",
        {},
    ),
    (
        "invoke another team's function",
        "lambda:InvokeFunction",
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:payroll-run",
        {},
    ),
    (
        "run another team's state machine",
        "states:StartExecution",
        f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:Payroll",
        {},
    ),
    ("push to another team's repository", "ecr:PutImage", f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/payroll", {}),
    ("register another service's scaling", "application-autoscaling:RegisterScalableTarget", "*", {}),
    ("tag another team's key as ours", "kms:TagResource", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234", {}),
]


@pytest.mark.parametrize(("step", "action", "resource", "context"), ELSEWHERE, ids=[e[0] for e in ELSEWHERE])
def test_a_role_a_deploy_creates_reaches_nothing_outside_the_project(step, action, resource, context) -> None:
    assert not allowed([*boundary_document("aws", ACCOUNT)["Statement"]], action, resource, context), step


PROJECTS_OWN = [
    (
        "read a capture object",
        "s3:GetObject",
        "arn:aws:s3:::mangaassist-prod-serving-datacapturebucket-x/capture/1",
        {},
    ),
    ("decrypt with the project's key", "kms:Decrypt", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234", OURS),
    ("start the image build", "codebuild:StartBuild", f"arn:aws:codebuild:{REGION}:{ACCOUNT}:project/Release", OURS),
    (
        "invoke a provider function",
        "lambda:InvokeFunction",
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:MangaAssist-prod-Image-x",
        {},
    ),
]


@pytest.mark.parametrize(("step", "action", "resource", "context"), PROJECTS_OWN, ids=[e[0] for e in PROJECTS_OWN])
def test_the_same_calls_on_the_projects_own_resources_are_allowed(step, action, resource, context) -> None:
    """The refusals above are for the resource, not the action: on the project's own, each is allowed."""
    assert allowed(boundary_document("aws", ACCOUNT)["Statement"], action, resource, context), step


def test_model_data_outside_the_projects_buckets_is_refused(problems) -> None:
    """The boundary reads only `mangaassist-*` buckets: a model elsewhere would fail at endpoint creation, so
    the synth refuses it first."""

    def mutate(raw: dict) -> None:
        raw["variants"][0]["model_data_s3_uri"] = "s3://ml-team-models/llama/"

    (found,) = problems(mutate)
    assert found.startswith("variants[0].model_data_s3_uri: the model data must be in a bucket named mangaassist-")
