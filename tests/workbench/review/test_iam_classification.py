"""The review's IAM classification (workbench/review/iam.py) on prod's real synthesised templates, edited the way a
change would edit them: an asset hash inside an ARN is no change; a new or widened sts:AssumeRole or
iam:PassRole, or a `*` resource, is "IAM broadened" with what was added."""

from __future__ import annotations

import copy
import json
import re

import pytest

from tests.synthesised import Synthesised
from workbench.review.consequences import deploy_consequences
from workbench.review.iam import ASSET_HASH, iam_changes
from workbench.review.stack_diff import StackDiff

IMAGE, SERVING = "MangaAssist-prod-Image", "MangaAssist-prod-Serving"


@pytest.fixture(scope="module")
def prod() -> Synthesised:
    return Synthesised("prod")


def policy_of(template: dict, logical_id_prefix: str) -> list[dict]:
    """The statements of the one policy resource whose logical ID starts with the prefix."""
    (resource,) = [r for lid, r in template["Resources"].items() if lid.startswith(logical_id_prefix)]
    return resource["Properties"]["PolicyDocument"]["Statement"]


def iam_lines(base: dict, head: dict, stack: str = SERVING) -> list[str]:
    return iam_changes(base, head).lines(stack)


def test_an_asset_hash_changed_inside_an_arn_is_no_iam_change(prod) -> None:
    base = prod.image.to_json()
    statements = json.dumps(policy_of(base, "ImageBuildRoleDefaultPolicy"))
    assert re.search(r"/[0-9a-f]{64}\.zip", statements)  # the source zip's S3 object ARN carries its hash
    head = json.loads(ASSET_HASH.sub("0" * 63 + "1", json.dumps(base)))  # a container/ change: new hashes
    assert head != base

    assert iam_changes(base, head).broadened == [] and iam_changes(base, head).added == []
    diff = StackDiff(IMAGE, iam=iam_changes(base, head))
    assert not [c for c in deploy_consequences("prod", None, None, [diff], None) if "IAM" in c]


@pytest.mark.parametrize(
    ("policy", "statement", "added"),
    [
        ("ModelsExecutionRole", {"Action": "sts:AssumeRole", "Resource": "arn:aws:iam::222222222222:role/cdk-deploy"},
         "sts:AssumeRole on arn:aws:iam::222222222222:role/cdk-deploy"),
        # iam:PassRole also through a wildcard
        ("CapacityWatchRole", {"Action": "iam:Pass*", "Resource": {"Fn::GetAtt": ["ModelsExecutionRole71BC3EA4", "Arn"]}},
         "iam:Pass* on ${ModelsExecutionRole71BC3EA4.Arn}"),
        ("ModelsExecutionRole", {"Action": ["s3:GetObject", "s3:ListBucket"], "Resource": "*"},
         "s3:GetObject, s3:ListBucket on *"),
    ],
)  # fmt: skip
def test_a_new_assume_role_pass_role_or_star_statement_is_broadening(prod, policy, statement, added) -> None:
    base = prod.serving.to_json()
    head = copy.deepcopy(base)
    policy_of(head, f"{policy}DefaultPolicy").append({**statement, "Effect": "Allow"})

    assert iam_lines(base, head) == [f"IAM broadened in {SERVING}: {policy}: {added}"]


def test_a_widened_assume_role_names_only_what_was_added(prod) -> None:
    """A role that may already assume the CDK deploy roles; one more resource widens it."""
    base = prod.serving.to_json()
    deploy_roles = "arn:aws:iam::222222222222:role/cdk-hnb659fds-deploy-role-222222222222-ap-northeast-1"
    policy_of(base, "CapacityWatchRoleDefaultPolicy").append(
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Resource": deploy_roles}
    )
    head = copy.deepcopy(base)
    policy_of(head, "CapacityWatchRoleDefaultPolicy")[-1]["Resource"] = [
        deploy_roles,
        "arn:aws:iam::222222222222:role/admin",
    ]

    assert iam_lines(base, head) == [
        f"IAM broadened in {SERVING}: CapacityWatchRole: sts:AssumeRole on arn:aws:iam::222222222222:role/admin"
    ]


def test_a_new_principal_trusted_to_assume_a_role_is_broadening(prod) -> None:
    base = prod.serving.to_json()
    head = copy.deepcopy(base)
    (role,) = [r for lid, r in head["Resources"].items() if lid.startswith("CapacityWatchRole") and "Policy" not in lid]
    role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] = {
        "Service": "lambda.amazonaws.com",
        "AWS": "arn:aws:iam::999999999999:root",
    }

    assert iam_lines(base, head) == [
        f"IAM broadened in {SERVING}: CapacityWatchRole: sts:AssumeRole by AWS arn:aws:iam::999999999999:root"
    ]


def test_a_narrow_new_permission_is_listed_but_not_broadening(prod) -> None:
    base = prod.serving.to_json()
    head = copy.deepcopy(base)
    policy_of(head, "CapacityWatchRoleDefaultPolicy").append(
        {"Action": "sagemaker:DescribeEndpointConfig", "Effect": "Allow", "Resource": "arn:aws:sagemaker:x:1:ec/a"}
    )
    policy_of(head, "ModelsExecutionRoleDefaultPolicy").append({"Action": "*", "Effect": "Deny", "Resource": "*"})

    assert iam_lines(base, head) == [
        f"IAM permissions added in {SERVING} (no sts:AssumeRole, iam:PassRole or `*` resource): "
        "CapacityWatchRole: sagemaker:DescribeEndpointConfig on arn:aws:sagemaker:x:1:ec/a"
    ]
