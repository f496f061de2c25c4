"""cdk-nag (AwsSolutions + NIST 800-53 R5) on the prod app, as `make synth` runs it."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3

from config import load_environment
from stacks.environment import add_compliance_checks, build_environment


def _prod_app(cdk_context: dict) -> tuple[cdk.App, cdk.Stack]:
    app = cdk.App(context={**cdk_context, "env": "prod"})
    _, serving = build_environment(app, load_environment("prod"))
    add_compliance_checks(app)
    return app, serving


def test_prod_has_no_unacknowledged_findings(cdk_context) -> None:
    app, _ = _prod_app(cdk_context)
    app.synth()  # raises ValidationFailed on any unacknowledged finding


def test_an_unacknowledged_finding_fails_synth(cdk_context) -> None:
    """Proves the packs are wired: a bucket without SSL enforcement or logging must be refused."""
    app, serving = _prod_app(cdk_context)
    s3.Bucket(serving, "CarelessBucket")
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
