"""How the endpoint routes requests: KV_AWARE refused with the reason, prefix-aware settings that can work.

Sources: botocore's sagemaker model (RoutingStrategy, PrefixAwareRoutingConfig) and CloudFormation's
AWS::SageMaker::EndpointConfig resource schema (RoutingConfig.RoutingStrategy enum, as cfn-lint 1.58
ships it). docs/explanation/capacity-model.md "Routing".
"""

from __future__ import annotations

import re

from config.problems import Problem, refuse
from config.routing import derived_threshold
from config.schema import Catalog, EnvironmentConfig
from config.sections import is_none

# CloudFormation's resource schema enumerates these for RoutingConfig.RoutingStrategy: a template with
# any other value fails cfn-lint (E3030) and CloudFormation's validation.
CLOUDFORMATION_STRATEGIES = ("LEAST_OUTSTANDING_REQUESTS", "PREFIX_AWARE", "RANDOM")
# botocore: "KV_AWARE works only with supported containers, such as the SageMaker AI vLLM Deep Learning
# Container". No list of the others was found; the DLC's SageMaker images live in AWS's own ECR account.
KV_AWARE_CONTAINER = "the SageMaker AI vLLM Deep Learning Container"
SAGEMAKER_VLLM_DLC = re.compile(r"^763104351884\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/vllm:\S*sagemaker")


def check_routing(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    if cfg.routing_strategy == "KV_AWARE":
        return refuse("routing_strategy", kv_aware_refusal(catalog.serving_image.base_image))
    if not is_none(cfg.prefix_aware_routing) and cfg.routing_strategy != "PREFIX_AWARE":
        return refuse(
            "prefix_aware_routing",
            f"is read only with routing_strategy PREFIX_AWARE, got {cfg.routing_strategy}: remove it, or set "
            "routing_strategy: PREFIX_AWARE",
        )
    if cfg.routing_strategy != "PREFIX_AWARE":
        return []
    return _check_prefix_aware(cfg, catalog)


def kv_aware_refusal(base_image: str) -> str:
    """Why KV_AWARE cannot be deployed from here: CloudFormation, and (unless it is one) the container."""
    reasons = [
        "CloudFormation's AWS::SageMaker::EndpointConfig accepts RoutingStrategy "
        f"{', '.join(CLOUDFORMATION_STRATEGIES)} only (resource schema)"
    ]
    if not SAGEMAKER_VLLM_DLC.match(base_image):
        reasons.append(
            f'SageMaker runs KV_AWARE "only with supported containers, such as {KV_AWARE_CONTAINER}" '
            f"(SageMaker API), and this image is built FROM {base_image} (config/catalog.yaml serving_image)"
        )
    return f'KV_AWARE cannot be deployed: {"; and ".join(reasons)}. Use PREFIX_AWARE (docs/explanation/capacity-model.md "Routing")'


def _check_prefix_aware(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    given = cfg.prefix_aware_routing
    explicit = not is_none(given) and not is_none(given.concurrency_threshold)
    path = "prefix_aware_routing.concurrency_threshold"
    problems: list[Problem] = []
    for variant in cfg.variants:
        if not explicit:
            # An unknown type is config.checks.variants' to report, once.
            known = [t for t in variant.instance_types if t in catalog.instance_types]
            missing = [t for t in known if t not in cfg.planning.capacity]
            if missing:
                problems += refuse(
                    path,
                    f"not set, and planning.capacity has no concurrent_sequences for {', '.join(missing)} "
                    f"(variant '{variant.name}') to derive it from: set it, or measure with `bin/loadtest`",
                )
                continue
            if len(known) < len(variant.instance_types):
                continue  # nothing to derive from an unknown type; its problem is reported already
            threshold, source = derived_threshold(cfg, variant)
        else:
            threshold, source = given.concurrency_threshold, path
        if threshold > cfg.engine.max_num_seqs:
            problems += refuse(
                path,
                f"{threshold} ({source}) is above engine.max_num_seqs {cfg.engine.max_num_seqs}: requests "
                "would queue inside vLLM before SageMaker sends any to another instance; at most "
                f"{cfg.engine.max_num_seqs}",
            )
    return sorted(set(problems)) if problems else []
