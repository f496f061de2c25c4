"""The `vllm serve` command line the supervisor generates.

Flags checked against the vLLM 0.33.0 wheel: vllm/engine/arg_utils.py (engine flags) and
vllm/entrypoints/common/cli_args.py (frontend flags, --middleware, --lora-modules)."""

import pytest

from container.serving.engine_command import (
    ENGINE_SHUTDOWN_TIMEOUT_SECONDS,
    MIDDLEWARE_IMPORT_PATH,
    NO_QUANTIZATION,
    OFFLINE_ENVIRONMENT,
    engine_command,
    engine_environment,
)
from container.serving.settings import BASE_MODEL_NAME, Settings
from workbench.standin.engine import parse_args
from workbench.standin.harness import free_port, serving_env

# Every flag the generator may use, each present in vLLM 0.33.0's parser.
VLLM_033_FLAGS = {
    "--host", "--port", "--api-server-count", "--served-model-name", "--quantization",
    "--gpu-memory-utilization", "--max-model-len", "--max-num-seqs", "--max-num-batched-tokens",
    "--block-size", "--enable-prefix-caching", "--enable-lora", "--max-loras", "--max-lora-rank",
    "--lora-modules", "--middleware", "--enable-force-include-usage", "--enable-per-request-metrics",
    "--disable-uvicorn-access-log", "--uvicorn-log-level", "--shutdown-timeout",
}  # fmt: skip
# The seeds' flags that fail on current vLLM (DESIGN.md section 4).
REMOVED_FLAGS = {
    "--disable-log-requests", "--no-custom-all-reduce", "--use-v2-block-manager", "--num-lookahead-slots",
    "--swap-space", "--scheduler-delay-factor", "--model",
}  # fmt: skip


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env(serving_env(tmp_path, 8080, SERVING_HOST="0.0.0.0"))


def test_the_generated_command(settings):
    lora = settings.lora_dir
    assert engine_command(settings) == [
        "vllm", "serve", settings.model_dir,
        "--host", "0.0.0.0", "--port", "8080", "--api-server-count", "1",
        "--served-model-name", BASE_MODEL_NAME, "--quantization", "awq",
        "--gpu-memory-utilization", "0.92", "--max-model-len", "4096", "--max-num-seqs", "128",
        "--max-num-batched-tokens", "8192", "--block-size", "16", "--enable-prefix-caching",
        "--enable-lora", "--max-loras", "4", "--max-lora-rank", "16",
        "--lora-modules",
        f"manga_domain_v3={lora}/manga_domain_v3",
        f"general_support_v2={lora}/general_support_v2",
        f"jp_style_v1={lora}/jp_style_v1",
        "--middleware", MIDDLEWARE_IMPORT_PATH,
        "--enable-force-include-usage", "--enable-per-request-metrics",
        "--disable-uvicorn-access-log", "--uvicorn-log-level", "info",
        "--shutdown-timeout", str(ENGINE_SHUTDOWN_TIMEOUT_SECONDS),
    ]  # fmt: skip


def test_only_flags_valid_on_vllm_033_and_none_of_the_removed_ones(settings):
    flags = {arg for arg in engine_command(settings) if arg.startswith("--")}
    assert flags <= VLLM_033_FLAGS, flags - VLLM_033_FLAGS
    assert not flags & REMOVED_FLAGS


def test_all_adapters_follow_a_single_lora_modules_flag(settings):
    """vLLM's LoRAParserAction replaces the list on each --lora-modules, so a second flag would drop adapters."""
    command = engine_command(settings)
    assert command.count("--lora-modules") == 1
    parsed = parse_args(command[1:])
    assert [name for name, _ in parsed.lora_modules] == list(settings.adapters)
    repeated = parse_args(["serve", "m", "--enable-lora", "--lora-modules", "a=/a", "--lora-modules", "b=/b"])
    assert repeated.lora_modules == [("b", "/b")]


def test_an_unquantised_model_gets_no_quantization_flag(tmp_path):
    """vLLM reads the checkpoint's dtype; its CPU build (the real-engine tests) has no AWQ kernels."""
    command = engine_command(Settings.from_env(serving_env(tmp_path, 8080, SERVING_QUANTIZATION=NO_QUANTIZATION)))
    assert "--quantization" not in command and NO_QUANTIZATION not in command


def test_the_model_is_always_a_local_path(settings):
    """Without a model argument `vllm serve` falls back to a hub model, which network isolation forbids."""
    assert engine_command(settings)[2] == settings.model_dir


def test_the_engine_never_reaches_for_a_hub(settings):
    env = engine_environment(settings, {"PATH": "/usr/bin", "HF_HUB_OFFLINE": "0"})
    assert env["HF_HUB_OFFLINE"] == "1"
    assert {name: env[name] for name in OFFLINE_ENVIRONMENT} == OFFLINE_ENVIRONMENT
    assert env["PATH"] == "/usr/bin"
    assert env["VLLM_LOGGING_LEVEL"] == "INFO"


def test_the_stand_in_rejects_a_removed_flag_like_vllm_does():
    with pytest.raises(SystemExit) as caught:
        parse_args(["serve", "/m", "--disable-log-requests"])
    assert caught.value.code == 2


def test_port_follows_the_settings(tmp_path):
    port = free_port()
    command = engine_command(Settings.from_env(serving_env(tmp_path, port)))
    assert command[command.index("--port") + 1] == str(port)
