"""Spec -> client, missing keys, specs that are not ours, and the price table with its override."""

import pytest

from crew.agent.models import (
    AnthropicClient,
    CallUsage,
    ModelError,
    OpenAIClient,
    RetryingClient,
    cost_usd,
    make_client,
    price_for,
)
from crew.agent.models.usage import PRICES_ENV
from crew.errors import EXIT_BAD_INPUT, CrewError


def test_specs_build_retrying_clients(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    anthropic = make_client("anthropic:claude-sonnet-4-6")
    assert isinstance(anthropic, RetryingClient) and isinstance(anthropic.inner, AnthropicClient)
    assert anthropic.model == "claude-sonnet-4-6"
    openai = make_client("openai:gpt-4.1", max_attempts=3)
    assert isinstance(openai.inner, OpenAIClient) and openai.max_attempts == 3
    local = make_client("openai:qwen2.5@http://localhost:8000/v1")
    assert local.model_info["family"] == "unknown"


@pytest.mark.parametrize(("spec", "variable"), [("anthropic:claude-sonnet-4-6", "ANTHROPIC_API_KEY"),
                                                ("openai:gpt-4.1", "OPENAI_API_KEY")])
def test_missing_key_names_the_variable(monkeypatch, spec, variable):
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ModelError) as info:
        make_client(spec)
    assert variable in str(info.value) and info.value.exit_code == EXIT_BAD_INPUT


def test_local_server_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert make_client("openai:llama3@http://127.0.0.1:8080/v1").model_info["function_calling"]


@pytest.mark.parametrize("spec", ["baseline", "replay:/tmp/trace.jsonl"])
def test_baseline_and_replay_are_not_built_here(spec):
    with pytest.raises(ValueError):
        make_client(spec)


def test_bad_spec_is_a_crew_error():
    with pytest.raises(CrewError):
        make_client("gemini:pro")


def test_prices_match_snapshots_and_default():
    sonnet = price_for("claude-sonnet-4-6")
    assert (sonnet.input, sonnet.output, sonnet.cache_read, sonnet.cache_write) == (3.0, 15.0, 0.3, 3.75)
    assert price_for("claude-sonnet-4-5-20250929") == price_for("claude-sonnet-4-5")
    assert price_for("gpt-4.1-mini").input == 0.40 and price_for("gpt-4.1").input == 2.0
    assert price_for("some-local-model") == price_for("default")
    usage = CallUsage(input=1_000_000, output=1_000_000, cache_read=1_000_000, cache_write=1_000_000)
    assert cost_usd("claude-sonnet-4-6", usage) == pytest.approx(3 + 15 + 0.3 + 3.75)
    assert CallUsage(1, 2, 3, 4) + CallUsage(10, 20, 30, 40) == CallUsage(11, 22, 33, 44)


def test_price_override_file(monkeypatch, tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text('[llama3]\ninput = 0\noutput = 0\n\n["claude-sonnet-4-6"]\ninput = 1.5\noutput = 7.5\n')
    monkeypatch.setenv(PRICES_ENV, str(path))
    assert cost_usd("llama3", CallUsage(10**6, 10**6)) == 0.0
    assert price_for("claude-sonnet-4-6").cache_read == 1.5  # cache prices default to input
    assert price_for("gpt-4.1").input == 2.0  # untouched entries stay built in
    monkeypatch.setenv(PRICES_ENV, str(tmp_path / "missing.toml"))
    with pytest.raises(ModelError):
        price_for("x")
