"""`make test` lints every IAM policy of the synthesised templates (managed, inline, role, key, bucket and
topic policies), the CloudFormation execution policy and the stack-role boundary with parliament; each
finding is fixed or acknowledged, with its reason, in tests/iam_lint_acknowledged.yaml (the one place)."""

from __future__ import annotations

import json

import pytest

from constructs.execution_policy import execution_documents
from constructs.stack_role_boundary import boundary_document
from tests.iam_lint import POLICY_PROPERTIES, Stack, acknowledged, findings, policy_documents, unacknowledged
from tests.synthesised import Synthesised

MOTO_ACCOUNT, DEFAULT_REGION = "123456789012", "us-east-1"  # dev names neither


def stacks_of(synthesised: Synthesised) -> list[Stack]:
    cfg = synthesised.cfg
    return [
        Stack(stack_name, template.to_json(), "aws", cfg.region or DEFAULT_REGION, cfg.account or MOTO_ACCOUNT)
        for stack_name, template in (
            (synthesised.image_stack_name, synthesised.image),
            (synthesised.serving_stack_name, synthesised.serving),
            (synthesised.access_stack_name, synthesised.access),
        )
    ]


@pytest.fixture(scope="module")
def environments(prod, dev) -> list[Synthesised]:
    return [prod, dev, Synthesised("staging")]


@pytest.fixture(scope="module")
def linted(environments) -> tuple[int, list[str]]:
    """(how many documents, every finding line)."""
    documents = [doc for s in environments for doc in policy_documents(stacks_of(s))]
    documents += [(f"execution-policy-{n}", d) for n, d in enumerate(execution_documents("aws", MOTO_ACCOUNT), 1)]
    documents += [("stack-role-boundary", boundary_document("aws", MOTO_ACCOUNT))]
    return len(documents), [line for where, document in documents for line in findings(where, document)]


def test_every_policy_is_linted(linted, environments, prod) -> None:
    count, _ = linted
    kinds = {r["Type"] for t in (prod.image, prod.serving, prod.access) for r in t.to_json()["Resources"].values()} & {
        "AWS::IAM::ManagedPolicy",
        "AWS::IAM::Policy",
        "AWS::KMS::Key",
        "AWS::S3::BucketPolicy",
        "AWS::SNS::TopicPolicy",
    }
    assert kinds == {
        "AWS::IAM::ManagedPolicy",
        "AWS::IAM::Policy",
        "AWS::KMS::Key",
        "AWS::S3::BucketPolicy",
        "AWS::SNS::TopicPolicy",
    }
    with_policies = [
        r
        for synthesised in environments
        for t in (synthesised.image, synthesised.serving, synthesised.access)
        for r in t.to_json()["Resources"].values()
        if r["Type"] in POLICY_PROPERTIES or r["Type"] == "AWS::IAM::Role"
    ]
    inline = sum(
        len(r.get("Properties", {}).get("Policies", [])) for r in with_policies if r["Type"] == "AWS::IAM::Role"
    )
    documents = len([r for r in with_policies if r["Type"] != "AWS::IAM::Role"]) + inline
    assert count == documents + len(execution_documents("aws", MOTO_ACCOUNT)) + 1  # and the stack-role boundary


def test_every_finding_is_fixed_or_acknowledged(linted) -> None:
    _, lines = linted
    assert unacknowledged(lines, acknowledged()) == []


def test_every_acknowledgement_has_a_reason_and_is_still_needed(linted) -> None:
    _, lines = linted
    for entry in acknowledged():
        assert entry.get("reason", "").strip(), entry
        assert unacknowledged(lines, [entry]) != lines, f"stale acknowledgement, no finding uses it: {entry}"


def test_an_unacknowledged_finding_fails() -> None:
    """The operator policy of last turn: Application Auto Scaling writes on `*`."""
    document = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Scaling",
                "Effect": "Allow",
                "Action": ["application-autoscaling:PutScalingPolicy"],
                "Resource": "*",
            }
        ],
    }
    lines = findings("MangaAssist-prod-Serving/OperatorPolicy", document)
    assert lines == [
        'MangaAssist-prod-Serving/OperatorPolicy: RESOURCE_STAR ["application-autoscaling:PutScalingPolicy"]'
    ]
    assert unacknowledged(lines, acknowledged()) == lines
    assert json.loads(lines[0].split("RESOURCE_STAR ", 1)[1]) == ["application-autoscaling:PutScalingPolicy"]
