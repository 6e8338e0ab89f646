"""The `api_server` fixture: a scripted protocol-exact API server for one test (see server.py).

    def test_something(api_server):
        server = api_server({"engineer": [{"text": "done"}]})
        # ANTHROPIC_BASE_URL, OPENAI_BASE_URL and both API keys now point at the server
        ...
        assert "WRAP-UP" in server.requests("supervisor")[-1].last_user_text()

At teardown the test fails if any request broke the protocol (unless started with
expect_violations=True, which instead requires at least one) or if the script was missing an answer
(unless allow_script_problems=True). Use it elsewhere with `from tests.apiserver.fixture import api_server`
in a conftest.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.apiserver.server import ApiServer, Exchange

TEST_KEY = "sk-apiserver-test"


def _describe(exchange: Exchange, index: int) -> str:
    last = (exchange.request.get("messages") or [None])[-1]
    return (f"  {exchange.api} request #{index} ({exchange.role or 'role unknown'}): {exchange.errors[0].message}\n"
            f"    last message: {json.dumps(last)[:300]}")


def teardown_report(server: ApiServer, expect_violations: bool, allow_script_problems: bool) -> list[str]:
    """What makes the test fail: unexpected violations (or none when one was expected), script problems."""
    problems = []
    violations = [_describe(e, server.exchanges.index(e)) for e in server.violations]
    if violations and not expect_violations:
        problems.append("requests the real API would refuse:\n" + "\n".join(violations))
    if expect_violations and not violations:
        problems.append("the test expected a protocol violation and the server saw none")
    if server.script_problems and not allow_script_problems:
        problems.append("script problems:\n" + "\n".join(f"  {p}" for p in server.script_problems))
    return problems


@pytest.fixture
def api_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., ApiServer]]:
    started: list[tuple[ApiServer, bool, bool]] = []

    def start(script: Any, *, expect_violations: bool = False, allow_script_problems: bool = False,
              **options: Any) -> ApiServer:
        """Start a server playing `script` (options go to ApiServer) and point the environment at it."""
        server = ApiServer(script, **options).start()
        started.append((server, expect_violations, allow_script_problems))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        return server

    yield start
    problems = []
    for server, expect_violations, allow_script_problems in started:
        server.stop()
        problems += teardown_report(server, expect_violations, allow_script_problems)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
