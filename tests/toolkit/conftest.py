"""Fixtures for the toolkit tests: a fixed budget, and recorded HTTP responses at the requests boundary."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
from requests.structures import CaseInsensitiveDict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "toolkit"

# The root conftest puts tests/ on sys.path, where this folder (tests/toolkit, no __init__.py) would
# be found first as a namespace package named `toolkit`, shadowing the real one. Put the repository
# root ahead of it. (pytest's `pythonpath = ["."]` in pyproject.toml would do the same for every folder.)
_ROOT = str(Path(__file__).resolve().parents[2])
if sys.path[0] != _ROOT:
    sys.path.insert(0, _ROOT)


@dataclass
class FixedBudget:
    """A PhaseClock whose phase ends is `seconds` after creation."""

    seconds: float
    _start: float = field(default_factory=lambda: __import__("time").monotonic())

    def phase_left_s(self) -> float:
        import time

        return self.seconds - (time.monotonic() - self._start)


@dataclass
class Canned:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    error: Exception | None = None  # raised instead of answering (a network failure)


class RecordedHttp:
    """Stands in for the network under every requests adapter (used by both arxiv and PyGithub).

    Routes match on a substring of the URL; each route answers its canned responses in order and
    repeats the last one. Unmatched URLs fail the test loudly.
    """

    def __init__(self) -> None:
        self.routes: list[tuple[str, list[Canned]]] = []
        self.requests: list[requests.PreparedRequest] = []

    canned = Canned  # tests build responses as recorded_http.canned(...), not by importing conftest

    @staticmethod
    def fixture(name: str) -> bytes:
        return (FIXTURES / name).read_bytes()

    def add(self, url_part: str, *responses: Canned) -> None:
        self.routes.append((url_part, list(responses)))

    def file(self, url_part: str, name: str, status: int = 200, headers: dict[str, str] | None = None) -> None:
        types = {".json": "application/json", ".xml": "application/atom+xml", ".pdf": "application/pdf"}
        headers = {"Content-Type": types[Path(name).suffix], **(headers or {})}
        self.add(url_part, Canned(status, self.fixture(name), headers))

    def hits(self, url_part: str) -> int:
        return sum(url_part in _url(r) for r in self.requests)

    def send(self, request: requests.PreparedRequest, **_: object) -> requests.Response:
        self.requests.append(request)
        for part, responses in self.routes:
            if part in _url(request):
                canned = responses.pop(0) if len(responses) > 1 else responses[0]
                if canned.error is not None:
                    raise canned.error
                resp = requests.Response()
                resp.status_code = canned.status
                resp.headers = CaseInsensitiveDict(canned.headers)
                resp._content = canned.body
                resp._content_consumed = True
                resp.raw = io.BytesIO(canned.body)
                resp.url = request.url
                resp.request = request
                resp.encoding = "utf-8"
                return resp
        raise AssertionError(f"unexpected HTTP request in a test: {request.method} {request.url}")


def _url(request: requests.PreparedRequest) -> str:
    # PyGithub spells out the default port (https://api.github.com:443/...); routes leave it out.
    return (request.url or "").replace(":443/", "/")


@pytest.fixture
def recorded_http(monkeypatch: pytest.MonkeyPatch) -> RecordedHttp:
    http = RecordedHttp()

    def send(self: requests.adapters.HTTPAdapter, request: requests.PreparedRequest, **kwargs: object):
        return http.send(request, **kwargs)

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", send)
    return http


@pytest.fixture(params=["none", "bwrap"])
def sandbox(request: pytest.FixtureRequest):
    """Each process test runs twice: unconfined, and inside real bubblewrap (skipped where it cannot run)."""
    from toolkit.sandbox import SandboxPolicy, bwrap_problem

    if request.param == "none":
        return None
    problem = bwrap_problem()
    if problem:
        pytest.skip(f"needs a working bubblewrap: {problem}")
    return SandboxPolicy()


@pytest.fixture
def fixed_budget() -> type[FixedBudget]:
    return FixedBudget


@pytest.fixture
def sleeps() -> tuple[list[float], Callable[[float], None]]:
    """A fake sleep that records the waits instead of taking them."""
    waits: list[float] = []
    return waits, waits.append
