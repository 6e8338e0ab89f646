"""Recorded HTTP exchanges served through httpx2.MockTransport (the SDKs' HTTP layer), capturing requests."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crew_models"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


@dataclass
class Reply:
    status: int = 200
    body: str = ""  # a fixture file name
    headers: dict[str, str] = field(default_factory=dict)
    raise_error: Exception | None = None  # a transport failure instead of a response


@dataclass
class Recorder:
    """Serves replies in order (the last one repeats) and keeps every request's JSON body and headers."""

    replies: list[Reply]
    bodies: list[dict] = field(default_factory=list)
    requests: list[httpx2.Request] = field(default_factory=list)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        self.bodies.append(json.loads(request.content))
        reply = self.replies[min(len(self.requests) - 1, len(self.replies) - 1)]
        if reply.raise_error is not None:
            raise reply.raise_error
        headers = {"content-type": "application/json", **reply.headers}
        return httpx2.Response(reply.status, json=fixture(reply.body) if reply.body else {}, headers=headers)

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))


class FakeTime:
    """A clock and sleep pair: sleeping advances the clock instantly and records the delay."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
