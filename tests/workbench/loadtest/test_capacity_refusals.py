"""`ops capacity` on moto: refused while the endpoint is not InService (an update would be measured,
and autoscaling is blocked meanwhile), and nothing is sent."""

from __future__ import annotations

from moto.sagemaker.models import sagemaker_backends


def test_refused_while_the_endpoint_is_updating(prod, cli):
    endpoint = sagemaker_backends[prod.cfg.account][prod.cfg.region].endpoints[prod.endpoint]
    endpoint.endpoint_status = "Updating"
    refused = cli("capacity", "prod", "--variant", "canary", "--allow-production", "--max-minutes", "0.1")
    assert refused.exit_code == 4, refused.output
    assert "mangaassist-llm-prod is Updating, not InService" in refused.stderr


def test_an_unknown_variant_is_a_usage_error(prod, cli):
    refused = cli("capacity", "prod", "--variant", "nope", "--allow-production")
    assert refused.exit_code == 2
    assert "has no variant 'nope'" in refused.stderr
