"""`model_data_kms_key_arn` (issue 50 §7): model-data buckets encrypted with a customer-managed key give the
execution role kms:Decrypt on that key, only through S3; without the field the role has no kms:Decrypt."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk.assertions import Match, Template

from stacks.environment import build_environment
from tests.shared_synthesis import CDK_CONTEXT

KEY = "arn:aws:kms:ap-northeast-1:222222222222:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def test_a_customer_key_for_model_data_is_decrypted_through_s3_only(prod) -> None:
    cfg = prod.cfg.model_copy(update={"model_data_kms_key_arn": KEY})
    app = cdk.App(context={**CDK_CONTEXT, "env": "prod"})
    _, serving = build_environment(app, cfg)
    Template.from_stack(serving).has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        {
                            "Sid": "ModelDataKeyThroughS3",
                            "Effect": "Allow",
                            "Action": "kms:Decrypt",
                            "Resource": KEY,
                            "Condition": {"StringEquals": {"kms:ViaService": "s3.ap-northeast-1.amazonaws.com"}},
                        }
                    ]
                )
            }
        },
    )


def test_without_the_field_the_role_decrypts_nothing(prod) -> None:
    statements = [
        s
        for policy in prod.serving.find_resources("AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "ModelDataKeyThroughS3"
    ]
    assert statements == []
