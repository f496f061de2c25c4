"""Settings come from the SERVING_* environment the CDK app sets (container/serving/contract.py)."""

import pytest

from container.serving import contract as c
from container.serving.settings import BASE_MODEL_NAME, Settings, SettingsError
from workbench.standin.harness import free_port, serving_env


@pytest.fixture
def env(tmp_path):
    return serving_env(tmp_path, free_port())


def test_the_environment_the_cdk_app_produces_is_accepted(env):
    settings = Settings.from_env(env)
    assert settings.adapters == ("manga_domain_v3", "general_support_v2", "jp_style_v1")
    assert settings.prompt_token_budget == 4096 - 600
    assert settings.http_drain_seconds == 15 - 5


def test_every_contract_variable_is_read(env):
    """A variable the CDK app sets but the image ignores would be a silent misconfiguration."""
    names = [value for name, value in vars(c).items() if name.startswith("ENV_")]
    defaults = {
        c.ENV_LOG_LEVEL: ("log_level", "info"),
        c.ENV_ENGINE_STALL_SECONDS: ("engine_stall_seconds", 30),
        c.ENV_UNHEALTHY_EXIT_SECONDS: ("unhealthy_exit_seconds", c.DEFAULT_UNHEALTHY_EXIT_SECONDS),
        c.ENV_ADMISSION_DEADLINE_MS: ("admission_deadline_ms", None),  # unset: no admission check
    }
    for name in names:
        if name in defaults:  # optional: empty means the default, a bad value is still refused
            field, default = defaults[name]
            assert getattr(Settings.from_env({**env, name: ""}), field) == default
            broken = {**env, name: "-1"}
        else:
            broken = {**env, name: ""}
        with pytest.raises(SettingsError) as caught:
            Settings.from_env(broken)
        assert any(name in problem for problem in caught.value.problems), name


def test_all_problems_are_reported_at_once_each_naming_the_variable(env):
    broken = {
        **env,
        c.ENV_MAX_LORA_RANK: "7",
        c.ENV_DRAIN_SECONDS: "40",
        c.ENV_GPU_MEMORY_UTILIZATION: "1.5",
        c.ENV_MAX_MODEL_LEN: "lots",
        c.ENV_LORA_ADAPTERS: f"good_one,bad name,{BASE_MODEL_NAME}",
    }
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(broken)
    problems = caught.value.problems
    assert len(problems) == 6, problems
    expected = [
        (c.ENV_MAX_LORA_RANK, "'7'"),
        (c.ENV_DRAIN_SECONDS, "'40'"),
        (c.ENV_GPU_MEMORY_UTILIZATION, "'1.5'"),
        (c.ENV_MAX_MODEL_LEN, "'lots'"),
        (c.ENV_LORA_ADAPTERS, "'bad name'"),
        (c.ENV_LORA_ADAPTERS, repr(BASE_MODEL_NAME)),
    ]
    for name, value in expected:
        assert any(name in problem and value in problem for problem in problems), (name, problems)


def test_the_generation_reserve_must_leave_room_for_a_prompt(env):
    with pytest.raises(SettingsError, match="SERVING_GENERATION_RESERVE_TOKENS must be less than"):
        Settings.from_env({**env, c.ENV_GENERATION_RESERVE_TOKENS: "4096"})


def test_a_drain_budget_that_leaves_no_time_to_stop_the_engine_is_refused(env):
    with pytest.raises(SettingsError, match="SERVING_DRAIN_SECONDS must be more than 5"):
        Settings.from_env({**env, c.ENV_DRAIN_SECONDS: "5"})
