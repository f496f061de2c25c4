"""`bin/ops deploy` of production refuses an assumed capacity before touching anything; the override warns."""

from __future__ import annotations


def test_ops_deploy_refuses_an_assumed_capacity_before_any_aws_call(prod, cli, monkeypatch):
    monkeypatch.delenv("ACCEPT_ASSUMED_CAPACITY", raising=False)
    prod.register_scaling("primary")
    before = prod.scaling()
    cli.runtime.deployer = lambda env, released: 1 / 0  # never reached

    result = cli("deploy", "prod")

    assert result.exit_code == 4, result.output
    message = " ".join(result.stderr.split())
    # the moto world measured its ml.g4dn.xlarge; the fallback pool ml.g6.xlarge is still assumed
    assert "error: refusing to deploy prod (production): the capacity of 1 pool type(s) is assumed" in message
    assert "ml.g6.xlarge (primary (fallback), canary (fallback)): assumed: " in message
    assert 'ACCEPT_ASSUMED_CAPACITY="<why>" bin/ops deploy prod' in message
    assert prod.scaling() == before and "Deploying" not in result.output


def test_the_override_warns_and_deploys(prod, cli, monkeypatch):
    monkeypatch.setenv("ACCEPT_ASSUMED_CAPACITY", "INC-7: hotfix before the measurement")
    deployed = []
    cli.runtime.deployer = lambda env, released: deployed.append(env) or 0

    result = cli("deploy", "prod")

    assert result.exit_code == 0, result.output
    assert deployed == ["prod"]
    assert (
        "! ACCEPT_ASSUMED_CAPACITY: deploying prod on an assumed capacity of ml.g6.xlarge: "
        "'INC-7: hotfix before the measurement'"
    ) in " ".join(result.output.split())
