"""`bin/loadtest` on moto: refused while the endpoint is not InService (an update would be measured,
and autoscaling is blocked meanwhile), and nothing is sent."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber
from moto.sagemaker.models import sagemaker_backends

from tests.ops.test_emergency_invalid_config import TARGET_FIELD, invalid_prod  # noqa: F401 (a fixture)


def test_refused_while_the_endpoint_is_updating(prod, loadtest):
    endpoint = sagemaker_backends[prod.cfg.account][prod.cfg.region].endpoints[prod.endpoint]
    endpoint.endpoint_status = "Updating"
    refused = loadtest("prod", "--variant", "canary", "--allow-production", "--max-minutes", "0.1")
    assert refused.exit_code == 4, refused.output
    assert "mangaassist-llm-prod is Updating, not InService" in refused.stderr


def test_an_unknown_variant_is_a_usage_error(prod, loadtest):
    refused = loadtest("prod", "--variant", "nope", "--allow-production")
    assert refused.exit_code == 2
    assert "has no variant 'nope'" in refused.stderr


def test_an_access_denial_names_the_load_test_and_its_policies(prod, loadtest):
    """The load test runs on the ops CLI's error reporting: the policies it needs (ops/operations/permissions.py)
    under its own name, the capture reader's too for --workload capture."""
    sagemaker = boto3.client("sagemaker", region_name=prod.cfg.region)
    stub = Stubber(sagemaker)
    stub.add_client_error("describe_endpoint", "AccessDeniedException", "not authorized")
    loadtest.runtime.client_overrides["sagemaker"] = sagemaker
    with stub:
        refused = loadtest("prod", "--variant", "canary", "--allow-production", "--workload", "capture")
    assert refused.exit_code == 5, refused.output
    assert refused.stderr.strip().endswith(
        "; `bin/loadtest` needs MangaAssist-prod-Operator and MangaAssist-prod-CaptureReader "
        '(docs/reference/permissions.md, "Permissions")'
    )


def test_an_invalid_config_refuses_before_any_request(invalid_prod, loadtest):  # noqa: F811
    """Unlike rollback or status, the load test has no emergency path: an invalid config stops it."""
    result = loadtest("prod", "--variant", "canary", "--allow-production")
    assert result.exit_code == 2, result.output
    assert "invalid configuration, fix it first" in result.stderr and TARGET_FIELD in result.stderr
