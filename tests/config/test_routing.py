"""Routing for conversations (issue 29 §2): prod synthesises with PREFIX_AWARE and its derived settings,
CloudFormation's schema takes the template and refuses KV_AWARE, the config refuses KV_AWARE with the
reason, and the default prefix length is held to the request body `bin/loadtest` sends."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from cfnlint.api import ManualArgs, lint
from ruamel.yaml import YAML

from config import load_config_file
from config.checks.routing import CLOUDFORMATION_STRATEGIES, kv_aware_refusal
from config.loader import ENVIRONMENTS_DIR
from config.routing import DEFAULT_PREFIX_LENGTH, PREFIX_LENGTH_RANGE
from stacks.environment import build_environment
from workbench.loadtest.workload import DEFAULT_WORKLOAD, Workload

ROOT = Path(__file__).resolve().parents[2]
PROD = YAML(typ="safe", pure=True).load((ENVIRONMENTS_DIR / "prod.yaml").read_text())
LINT_ARGS = ManualArgs(regions=["ap-northeast-1"])


def endpoint_config(template: dict) -> dict:
    (config,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::EndpointConfig"]
    return config["Properties"]


@pytest.fixture(scope="module")
def prefix_aware_prod(tmp_path_factory: pytest.TempPathFactory) -> dict:
    raw = copy.deepcopy(PROD)
    raw["routing_strategy"] = "PREFIX_AWARE"
    path = tmp_path_factory.mktemp("routing") / "prod.yaml"
    with path.open("w") as handle:
        YAML().dump(raw, handle)
    cfg = load_config_file(path, "prod")
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    app = cdk.App(context={**context, "env": "prod"}, outdir=str(tmp_path_factory.mktemp("cdk.out")))
    _, serving = build_environment(app, cfg)
    return Template.from_stack(serving).to_json()


def test_prod_synthesises_prefix_aware_routing_with_derived_settings(prefix_aware_prod) -> None:
    routing = [v["RoutingConfig"] for v in endpoint_config(prefix_aware_prod)["ProductionVariants"]]
    # 16: planning.capacity's concurrent_sequences (assumed, the batch the objective allows), both pool types
    expected = {"PrefixLength": DEFAULT_PREFIX_LENGTH, "ConcurrencyThreshold": 16}
    assert routing == [{"RoutingStrategy": "PREFIX_AWARE", "PrefixAwareRoutingConfig": expected}] * 2


def test_cloudformations_schema_takes_the_template_and_refuses_kv_aware(prefix_aware_prod) -> None:
    """cfn-lint's copy of the AWS::SageMaker::EndpointConfig schema: when it learns KV_AWARE this fails,
    and config.checks.routing's CloudFormation reason must be revisited."""
    errors = [m for m in lint(json.dumps(prefix_aware_prod), config=LINT_ARGS) if m.rule.id.startswith("E")]
    assert [(m.rule.id, m.message) for m in errors] == []
    # KV_AWARE on the endpoint config alone: E3030 is the schema's check of the resource's own properties,
    # and the whole template was linted just above (a second lint of it costs ~1.3 s of CPU).
    kv_aware = {
        "Resources": {
            name: copy.deepcopy(resource)
            for name, resource in prefix_aware_prod["Resources"].items()
            if resource["Type"] == "AWS::SageMaker::EndpointConfig"
        }
    }
    for variant in endpoint_config(kv_aware)["ProductionVariants"]:
        variant["RoutingConfig"] = {"RoutingStrategy": "KV_AWARE"}
    found = {m.message for m in lint(json.dumps(kv_aware), config=LINT_ARGS) if m.rule.id == "E3030"}
    assert found == {f"'KV_AWARE' is not one of {list(CLOUDFORMATION_STRATEGIES)}"}


def test_kv_aware_is_refused_with_the_reason(problems) -> None:
    found = problems(lambda raw: raw.update(routing_strategy="KV_AWARE"))
    assert found == [
        "routing_strategy: KV_AWARE cannot be deployed: CloudFormation's AWS::SageMaker::EndpointConfig accepts "
        "RoutingStrategy LEAST_OUTSTANDING_REQUESTS, PREFIX_AWARE, RANDOM only (resource schema); and SageMaker "
        'runs KV_AWARE "only with supported containers, such as the SageMaker AI vLLM Deep Learning Container" '
        "(SageMaker API), and this image is built FROM vllm/vllm-openai:v0.33.0 (config/catalog.yaml "
        'serving_image). Use PREFIX_AWARE (docs/explanation/capacity-model.md "Routing")'
    ]


def test_on_a_sagemaker_vllm_dlc_only_cloudformation_stands_in_the_way() -> None:
    message = kv_aware_refusal("763104351884.dkr.ecr.ap-northeast-1.amazonaws.com/vllm:server-sagemaker-cuda-v1")
    assert "CloudFormation" in message
    assert "supported containers" not in message


def test_prefix_aware_settings_are_checked(problems) -> None:
    def explicit(raw: dict) -> None:
        raw["routing_strategy"] = "PREFIX_AWARE"
        raw["prefix_aware_routing"] = {"prefix_length": 512, "concurrency_threshold": 200}

    assert problems(explicit) == [
        "prefix_aware_routing.prefix_length: Input should be greater than or equal to 1024, got 512",
        "prefix_aware_routing.concurrency_threshold: 200 (prefix_aware_routing.concurrency_threshold) is above "
        "engine.max_num_seqs 128: requests would queue inside vLLM before SageMaker sends any to another "
        "instance; at most 128",
    ]
    least = {"routing_strategy": "LEAST_OUTSTANDING_REQUESTS", "prefix_aware_routing": {"prefix_length": 4096}}
    assert problems(lambda raw: raw.update(least)) == [
        "prefix_aware_routing: is read only with routing_strategy PREFIX_AWARE, got LEAST_OUTSTANDING_REQUESTS: "
        "remove it, or set routing_strategy: PREFIX_AWARE"
    ]


def test_a_pool_type_the_catalog_knows_gets_a_derived_figure_and_the_threshold_follows_it(problems) -> None:
    """Issue 52: every type whose hardware the catalog knows has an assumed figure derived for the environment
    (config.domain.calibration: ml.g4dn.xlarge's KV cache holds 15 sequences at the p95 context), so the threshold
    derives from the weakest pool type without a figure in the file."""

    def g4dn_fallback(raw: dict) -> None:
        raw["routing_strategy"] = "PREFIX_AWARE"
        raw["variants"][1]["fallback_instance_types"] = ["ml.g4dn.xlarge"]
        raw["endpoint_instance_quotas"]["ml.g4dn.xlarge"] = 88

    assert [p for p in problems(g4dn_fallback) if p.startswith("prefix_aware_routing")] == []


def test_the_default_prefix_length_covers_the_system_prompt_and_stays_inside_the_first_turn() -> None:
    """Recomputed from the bodies `bin/loadtest` sends: past the user turn's first bytes in every body (so
    conversations differ), before the end of the shortest first user turn (so every later turn, which
    repeats the first one and appends to it, starts with the same PrefixLength bytes)."""
    bodies = Workload.load(DEFAULT_WORKLOAD).bodies(seed=0)
    starts, ends = [], []
    for _ in range(2000):
        body = next(bodies)
        encoded = json.dumps(body).encode()  # as workbench/loadtest/load.py sends it
        user = json.dumps(body["messages"][-1]["content"]).encode()
        start = encoded.index(user) + 1  # after the opening quote
        starts.append(start)
        ends.append(start + len(user) - 2)
    low, high = PREFIX_LENGTH_RANGE
    assert low <= DEFAULT_PREFIX_LENGTH <= high
    assert max(starts) + 128 <= DEFAULT_PREFIX_LENGTH <= min(ends)  # at least 128 bytes of the user's own text
