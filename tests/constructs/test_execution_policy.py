"""The CloudFormation execution policy `make bootstrap` installs (constructs/execution_policy.py) covers
every resource type the synthesised stacks create, with what CloudFormation's handler for that type
declares it calls (the registry schema), and names no other resource type."""

from __future__ import annotations

import json
import subprocess
from fnmatch import fnmatchcase
from pathlib import Path

import botocore.session
import pytest

from config.access import ROLE_PATH_ROOT, STACK_ROLE_BOUNDARY
from config.naming import PROJECT
from constructs.execution_policy import (
    EXPLICIT,
    MAX_POLICY_CHARS,
    NOT_IAM_ACTIONS,
    NOT_NEEDED,
    POLICY_NAME,
    RESOURCE_TYPES,
    as_iam_action,
    execution_actions,
    execution_documents,
    handler_permissions,
    needed,
    registry_schema,
)
from tests.synthesised import Synthesised

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def templates(prod, dev) -> list[tuple[str, dict]]:
    staging = Synthesised("staging")
    return [
        (stack_name, template.to_json())
        for synthesised in (prod, dev, staging)
        for stack_name, template in (
            (synthesised.image_stack_name, synthesised.image),
            (synthesised.serving_stack_name, synthesised.serving),
        )
    ]


def resource_types(templates) -> set[str]:
    return {resource["Type"] for _, template in templates for resource in template["Resources"].values()}


def test_the_policy_names_exactly_the_resource_types_the_stacks_create(templates) -> None:
    created = resource_types(templates)
    assert created - set(RESOURCE_TYPES) == set(), "a stack creates a type the execution policy does not cover"
    assert set(RESOURCE_TYPES) - created == set(), "the execution policy covers a type no stack creates"


def test_each_type_gets_what_its_cloudformation_handlers_call(templates) -> None:
    actions = set(execution_actions())
    for resource_type in sorted(resource_types(templates)):
        declared = handler_permissions(resource_type)
        assert declared, f"{resource_type}: no handler permissions in the registry schema and none in EXPLICIT"
        assert {as_iam_action(a) for a in declared if needed(a)} - {None} <= actions, resource_type
        if resource_type not in EXPLICIT:  # the registry schema is the source, not a list from memory
            handlers = registry_schema(resource_type)["handlers"]
            assert {p for h in handlers.values() for p in h.get("permissions", [])} >= {
                a for a in declared if needed(a)
            }


def test_each_action_left_out_is_one_a_handler_declares_and_has_a_reason() -> None:
    declared = {a for t in RESOURCE_TYPES for a in handler_permissions(t)}
    assert set(NOT_NEEDED) <= declared, "NOT_NEEDED lists an action no handler of ours declares"
    assert all(reason for reason in NOT_NEEDED.values())


def test_documents_fit_iams_limits_and_scope_iam_to_the_projects_names() -> None:
    documents = execution_documents("aws", "222222222222")
    assert 1 <= len(documents) <= 10  # managed policies per role (IAM quotas)
    for document in documents:
        assert len(json.dumps(document, separators=(",", ":"))) <= MAX_POLICY_CHARS
    statements = [s for d in documents for s in d["Statement"]]
    assert not [a for s in statements for a in s["Action"] if "*" in a], "no wildcard actions"
    iam_allows = [s for s in statements if s["Effect"] == "Allow" and s["Action"][0].startswith("iam:")]
    writable = [r for s in iam_allows for r in s["Resource"]]
    assert all(
        r.startswith(f"arn:aws:iam::222222222222:role{ROLE_PATH_ROOT}")
        or "/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/" in r
        for r in writable
    ), writable
    # The guard policies, what people and the pipeline wear and CDK's roles match none of them (fnmatch, like
    # IAM's `*`): no managed policy is writable at all (issue 51).
    protected = [
        f"arn:aws:iam::222222222222:policy/{POLICY_NAME}-1",
        f"arn:aws:iam::222222222222:policy/{STACK_ROLE_BOUNDARY}",
        f"arn:aws:iam::222222222222:role/{PROJECT}-prod-GitHubDeploy",
        f"arn:aws:iam::222222222222:role/{PROJECT}-prod-CaptureReader",
        f"arn:aws:iam::222222222222:policy/{PROJECT}-prod-GitHubDeployBoundary",
        f"arn:aws:iam::222222222222:policy/{PROJECT}-prod-Operator",
        "arn:aws:iam::222222222222:role/cdk-hnb659fds-cfn-exec-role-222222222222-ap-northeast-1",
    ]
    assert not [(p, r) for p in protected for r in writable if fnmatchcase(p, r)]
    assert not POLICY_NAME.startswith(f"{PROJECT}-") and not STACK_ROLE_BOUNDARY.startswith(f"{PROJECT}-")
    (invoke,) = [s for s in statements if s["Sid"] == "Lambda"]
    assert invoke["Resource"] == [f"arn:aws:lambda:*:222222222222:function:{PROJECT}-*"]


def test_roles_and_functions_get_names_the_execution_policy_lets_cloudformation_write(templates) -> None:
    """IAM and Lambda statements are scoped by name: CloudFormation names a resource without an explicit
    name after its stack (`<stack>-<logical id>-<suffix>`), so each role must be unnamed (or named under
    its stack), each function under the project's prefix; no managed policy (issue 51: the access stack's)."""
    allowed = {
        "AWS::IAM::Role": lambda stack, name: name.startswith(f"{stack}-"),
        "AWS::Lambda::Function": lambda stack, name: name.startswith(f"{PROJECT}-"),
    }
    names = {"AWS::IAM::Role": "RoleName", "AWS::Lambda::Function": "FunctionName"}
    assert not [lid for _, t in templates for lid, r in t["Resources"].items() if r["Type"] == "AWS::IAM::ManagedPolicy"]
    for stack_name, template in templates:
        assert stack_name.startswith(f"{PROJECT}-")
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] not in names:
                continue
            name = resource.get("Properties", {}).get(names[resource["Type"]], f"{stack_name}-{logical_id}")
            assert isinstance(name, str) and allowed[resource["Type"]](stack_name, name), (stack_name, logical_id, name)


def test_make_bootstrap_passes_the_policies_to_cdk_bootstrap() -> None:
    recipe = subprocess.run(
        ["make", "-n", "--no-print-directory", "bootstrap", "ENV=prod"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "-m ops.pipeline.execution_policy prod" in recipe
    assert '--cloudformation-execution-policies "$policies"' in recipe
    own = subprocess.run(
        ["make", "-n", "--no-print-directory", "bootstrap", "ENV=prod", "EXECUTION_POLICIES=arn:aws:iam::2:policy/P"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # The account's own execution policies, and the stack-role boundary all the same (every stack role names it).
    assert 'policies="arn:aws:iam::2:policy/P"' in own and "-m ops.pipeline.execution_policy prod --boundary-only" in own


def test_api_names_a_handler_declares_are_granted_as_the_iam_action_aws_checks() -> None:
    s3 = botocore.session.get_session().get_service_model("s3")
    declared = {a for t in RESOURCE_TYPES for a in handler_permissions(t)}
    assert set(NOT_IAM_ACTIONS) <= declared
    for permission, action in NOT_IAM_ACTIONS.items():
        operation = permission.split(":")[1]
        if (
            action
            and operation in s3.operation_names
            and f"<code>{action}</code>" in s3.operation_model(operation).documentation
        ):
            assert action in execution_actions()
        assert permission not in execution_actions()
