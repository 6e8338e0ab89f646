"""A local stand-in for the Anthropic Messages API and the OpenAI Chat Completions API, for tests.

It listens on 127.0.0.1 (a free port), serves POST /v1/messages and POST /v1/chat/completions, checks
every request as the real services do (crew/agent/models/protocol/) and answers from a script. Point the
official SDKs or our clients at it: ANTHROPIC_BASE_URL=server.url, or openai:MODEL@{server.openai_base_url}.

The script has one list of answers per role, played in order; the role of a request is read from its
system prompt (by default the crew's "You are the supervisor|engineer|scout ..."; pass role_of= to change
it). It is the `replay:` script format (crew/agent/replay.py), so a run's trace.jsonl plays too:

    supervisor:
      - tool_calls: [{name: delegate, arguments: {role: engineer, subtask: train, minutes: 5}}]
    engineer:
      - thought: "I will look at the data first."      # text before the tool calls (`text` works too)
        tool_calls: [{name: run_bash, arguments: {command: ls data}}]
      - thinking: "the loss is flat"                   # a thinking block (with a signature) first
        text: "Training stalled at step 1200."        # a final text: stop_reason end_turn
        output_tokens: 350                             # else characters / 4 of the answer
      - tool_calls: [{name: write_file, arguments: {path: a.py, content: "..."}}]
        stop_reason: max_tokens                        # cut off: the last input is half written
      - refusal: "I can't help with that."             # stop_reason refusal (OpenAI: message.refusal)
        refusal_category: frontier_llm                 # stop_details.category (optional)
      - fault: 429                                     # HTTP 429 rate_limit_error instead of an answer
        retry_after: 1                                 # seconds, sent as the Retry-After header
      - fault: 529                                     # overloaded_error (OpenAI: 503); 500: api_error
      - error: connection                              # the replay kinds: rate_limit, overloaded, outage,
      - text: done                                     #   connection (the socket closes, no answer)
        delay_s: 2                                     # answer after a pause

Tool calls get fresh ids (toolu_01..., call_...) unless the script gives `id:`. An answer longer than the
request's max_tokens is cut off the same way as `stop_reason: max_tokens`. Usage counts characters / 4:
input, cache reads and writes from the cache_control breakpoints (tests/apiserver/cache.py; pass
clock= to move time past a TTL, min_cache_tokens= for another model's minimum), output.

A request the real service would refuse gets its real answer (400, or 401 without a key) and is recorded
in `violations`. A request the script cannot answer (no role matched, the role's answers used up, a
stream asked for) gets a 400 whose message starts with "apiserver:" and is recorded in `script_problems`.
Every request is in `exchanges` (server.requests(role) filters them; Exchange.last_user_text() is what
the model was last told). The `api_server` fixture (fixture.py) starts one per call and fails the test at
teardown on any violation or script problem the test did not declare.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from crew.agent.models.protocol import (
    ProtocolError,
    anthropic_error_body,
    anthropic_request_errors,
    openai_error_body,
    openai_request_errors,
)
from tests.apiserver.cache import AnthropicCache, OpenAICache
from tests.apiserver.responses import Ids, Reply, anthropic_fault, anthropic_message, openai_completion, openai_fault
from tests.apiserver.script import RoleOf, Script, ScriptError, crew_role

log = logging.getLogger(__name__)
ROUTES = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}
DROP: Reply = (0, {}, {})  # close the connection without answering


def _text(content: Any) -> str:
    """The readable text of a message's content: text blocks and tool results, in order."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            parts.append(_text(block.get("content")))
        elif isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


@dataclass
class Exchange:
    """One request and what the server answered."""

    api: str  # "anthropic" or "openai"
    request: dict[str, Any]
    role: str | None = None
    answer: int | None = None  # position of the answer in the role's script
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)
    errors: list[ProtocolError] = field(default_factory=list)  # why the real service would refuse it

    @property
    def system(self) -> str:
        if self.api == "anthropic":
            return _text(self.request.get("system"))
        first = (self.request.get("messages") or [{}])[0]
        return _text(first.get("content")) if first.get("role") in ("system", "developer") else ""

    def last_user_text(self) -> str:
        """What the model was last told: the text of the trailing user (and tool) messages."""
        tail = []
        for msg in reversed(self.request.get("messages") or []):
            if msg.get("role") not in ("user", "tool"):
                break
            tail.append(_text(msg.get("content")))
        return "\n".join(reversed(tail))


class ApiServer:
    """The server and what it saw. start() and stop(), or use it as a context manager."""

    def __init__(self, script: Mapping[str, Sequence[Any]] | str | Path, *, role_of: RoleOf = crew_role,
                 clock: Callable[[], float] = time.monotonic, min_cache_tokens: int = 1024, seed: int = 0) -> None:
        self.script = Script.load(script)
        self.role_of = role_of
        self.anthropic_cache = AnthropicCache(clock, min_cache_tokens)
        self.openai_cache = OpenAICache(clock)
        self.ids = Ids(random.Random(seed))
        self.exchanges: list[Exchange] = []
        self.script_problems: list[str] = []
        self._lock = threading.Lock()
        self._httpd: _Server | None = None

    # -- lifecycle
    def start(self) -> ApiServer:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.api = self
        self._httpd = httpd
        threading.Thread(target=httpd.serve_forever, args=(0.05,), name="apiserver", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The Anthropic base URL (the SDK appends /v1/messages)."""
        assert self._httpd is not None, "start() the server first"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI base URL (the SDK appends /chat/completions)."""
        return self.url + "/v1"

    # -- what happened
    @property
    def violations(self) -> list[Exchange]:
        return [e for e in self.exchanges if e.errors]

    def requests(self, role: str | None = None, api: str | None = None) -> list[Exchange]:
        return [e for e in self.exchanges if (role is None or e.role == role) and (api is None or e.api == api)]

    # -- answering
    def handle(self, api: str, body: Any, headers: Mapping[str, str]) -> Reply:
        exchange = Exchange(api, body if isinstance(body, dict) else {"invalid": body})
        with self._lock:
            self.exchanges.append(exchange)
        reply = self._answer(exchange, body, headers)
        exchange.status, exchange.response = reply[0], reply[2]
        return reply

    def _answer(self, exchange: Exchange, body: Any, headers: Mapping[str, str]) -> Reply:
        api = exchange.api
        if api == "anthropic" and not (headers.get("x-api-key") or headers.get("authorization")):
            exchange.errors = [ProtocolError("x-api-key header is required", status=401, type="authentication_error")]
            return self._refuse(exchange)
        if api == "anthropic" and not headers.get("anthropic-version"):
            exchange.errors = [ProtocolError("anthropic-version: header is required")]
            return self._refuse(exchange)
        if api == "openai" and not headers.get("authorization", "").startswith("Bearer "):
            exchange.errors = [ProtocolError("You didn't provide an API key. You need to provide your API key in an "
                                             "Authorization header using Bearer auth (i.e. Authorization: Bearer "
                                             "YOUR_KEY).", status=401)]
            return self._refuse(exchange)
        exchange.errors = anthropic_request_errors(body) if api == "anthropic" else openai_request_errors(body)
        if exchange.errors:
            return self._refuse(exchange)
        if body.get("stream"):
            return self._problem(exchange, "streaming is not scripted; call without stream=True")
        exchange.role = self.role_of(exchange.system)
        if exchange.role is None:
            return self._problem(exchange, f"no role matches the system prompt {exchange.system[:80]!r}")
        served = self.script.next(exchange.role)
        if served is None:
            count = len(self.script.answers.get(exchange.role, []))
            return self._problem(exchange, f"the script has no answer #{count + 1} for role '{exchange.role}' "
                                           f"(it has {count})")
        exchange.answer, answer = served
        if answer.delay_s:
            time.sleep(answer.delay_s)
        if answer.fault == 0:
            return DROP
        if answer.fault is not None:
            if api == "anthropic":
                return anthropic_fault(answer.fault, answer.retry_after, self.ids.request())
            return openai_fault(answer.fault, answer.retry_after, str(body.get("model")))
        try:
            if api == "anthropic":
                usage = self.anthropic_cache.account(body)
                return 200, {"request-id": self.ids.request()}, anthropic_message(answer, body, usage, self.ids)
            prompt, cached = self.openai_cache.account(body)
            return 200, {}, openai_completion(answer, body, prompt, cached, self.ids, int(time.time()))
        except ScriptError as err:
            return self._problem(exchange, str(err))

    def _refuse(self, exchange: Exchange) -> Reply:
        error = exchange.errors[0]
        log.info("apiserver: %s request refused: %s", exchange.api, error.message)
        if exchange.api == "anthropic":
            request_id = self.ids.request()
            return error.status, {"request-id": request_id}, anthropic_error_body(error, request_id)
        return error.status, {}, openai_error_body(error)

    def _problem(self, exchange: Exchange, message: str) -> Reply:
        with self._lock:
            self.script_problems.append(f"{exchange.api} request #{self.exchanges.index(exchange)}: {message}")
        error = ProtocolError(f"apiserver: {message}")
        if exchange.api == "anthropic":
            return 400, {}, anthropic_error_body(error)
        return 400, {}, openai_error_body(error)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a client's idle keep-alive connection must not hold up stop()
    api: ApiServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("apiserver: connection from %s ended", client_address, exc_info=True)  # a client went away


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs expect

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        api = ROUTES.get(self.path.split("?")[0])
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        if api is None:
            self._send(404, {}, {"type": "error", "error": {"type": "not_found_error", "message": "Not found"}})
            return
        try:
            body = json.loads(raw or b"null")
        except json.JSONDecodeError as err:
            body = f"invalid JSON: {err}"
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, reply_headers, reply = self.server.api.handle(api, body, headers)
        if status == 0:
            self.close_connection = True  # the client sees the connection drop
            return
        self._send(status, reply_headers, reply)

    def _send(self, status: int, headers: Mapping[str, str], body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        log.debug("apiserver: " + format, *args)
