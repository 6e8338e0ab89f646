"""GitHub repository/code search and file reading (PyGithub): cached, rate-limit aware, never raising."""

from __future__ import annotations

import logging
import os
import time
from itertools import islice
from pathlib import Path
from typing import Any

from toolkit.netutil import DiskCache, GiveUp, RetryPolicy, with_retries

log = logging.getLogger(__name__)

KINDS = ("repositories", "code")
_DESCRIPTION_CHARS = 200


def _rate_limit_wait(err: Exception) -> float | None:
    """Seconds GitHub asks us to wait, from Retry-After or X-RateLimit-Reset; None if not a rate limit."""
    from github import GithubException, RateLimitExceededException

    if not isinstance(err, GithubException):
        return None
    headers = {k.lower(): v for k, v in (err.headers or {}).items()}
    limited = (
        isinstance(err, RateLimitExceededException)
        or err.status == 429
        or (err.status == 403 and str(headers.get("x-ratelimit-remaining", "")) == "0")
    )
    if not limited:
        return None
    try:
        return max(float(headers["retry-after"]), 1.0)
    except (KeyError, ValueError):
        pass
    try:
        return max(float(headers["x-ratelimit-reset"]) - time.time(), 1.0)
    except (KeyError, ValueError):
        return 0.0  # limited, but no hint: plain backoff


def _classify(err: Exception) -> float | None:
    import requests
    from github import GithubException

    wait = _rate_limit_wait(err)
    if wait is not None:
        return wait
    if isinstance(err, GithubException) and err.status in (500, 502, 503, 504):
        return 0.0
    if isinstance(err, (requests.ConnectionError, requests.Timeout)):
        return 0.0
    return None


class GithubTools:
    def __init__(
        self,
        cache_dir: Path,
        *,
        token: str | None = None,
        policy: RetryPolicy | None = None,
        timeout_s: int = 20,
        seconds_between_requests: float = 0.25,
    ) -> None:
        self.cache = DiskCache(cache_dir / "github")
        # Read here, in the crew's process; commands never see it (scrubbed_env).
        self.token = token if token is not None else os.environ.get("GITHUB_TOKEN") or None
        self.policy = policy or RetryPolicy()
        self.timeout_s = timeout_s
        self.seconds_between_requests = seconds_between_requests

    def _client(self, per_page: int = 30, lazy: bool = False) -> Any:
        from github import Auth, Github

        return Github(
            auth=Auth.Token(self.token) if self.token else None,
            retry=None,  # our backoff decides how long a wait is worth it
            timeout=self.timeout_s,
            per_page=per_page,
            seconds_between_requests=self.seconds_between_requests,
            lazy=lazy,
        )

    def _call(self, key: list[Any], fetch: Any, what: str) -> str:
        cached = self.cache.get(key)
        if cached is not None:
            return str(cached)
        try:
            text = with_retries(fetch, _classify, self.policy, "GitHub")
        except GiveUp as err:
            return f"GitHub {what} failed: {err.message}."
        except Exception as err:  # a tool result, never an exception that ends a run
            return self._explain(err, what)
        self.cache.put(key, text)
        return text

    def _explain(self, err: Exception, what: str) -> str:
        from github import BadCredentialsException, GithubException, UnknownObjectException

        if isinstance(err, UnknownObjectException):
            return f"GitHub {what}: not found (404). Check the owner/name and path spelling."
        if isinstance(err, BadCredentialsException):
            return f"GitHub {what} failed: GITHUB_TOKEN was rejected (401)."
        if isinstance(err, GithubException):
            message = err.data.get("message") if isinstance(err.data, dict) else err.data
            return f"GitHub {what} failed: HTTP {err.status}: {message}"
        log.warning("GitHub %s failed: %r", what, err)
        return f"GitHub {what} failed: {type(err).__name__}: {err}"

    def search(self, query: str, kind: str, max_results: int) -> str:
        if kind not in KINDS:
            return f"kind must be one of {', '.join(KINDS)}; got {kind!r}."
        if kind == "code" and not self.token:
            return (
                "GitHub code search needs a GITHUB_TOKEN (GitHub requires sign-in for it); search repositories instead."
            )
        n = max(1, min(max_results, 50))

        def fetch() -> str:
            gh = self._client(per_page=n)
            if kind == "repositories":
                results = gh.search_repositories(query)
                items = [_repo_line(r) for r in islice(results, n)]
            else:
                results = gh.search_code(query)
                items = [_code_line(c) for c in islice(results, n)]
            total = results.totalCount if items else 0
            if not items:
                return f"GitHub {kind}: no results for {query!r}."
            head = f"GitHub {kind}: showing {len(items)} of {total:,} result(s) for {query!r}"
            return head + "\n" + "\n".join(f"{i}. {line}" for i, line in enumerate(items, 1))

        return self._call(["search", kind, query, n], fetch, f"{kind} search")

    def read_file(self, repo: str, path: str, ref: str | None, max_chars: int) -> str:
        if repo.count("/") != 1 or not all(repo.split("/")):
            return f"repo must be 'owner/name'; got {repo!r}."

        def fetch() -> str:
            # Lazy: get_repo makes no request, so reading a file costs one request, not two.
            repository = self._client(lazy=True).get_repo(repo)
            contents = (
                repository.get_contents(path.strip("/"), ref=ref) if ref else repository.get_contents(path.strip("/"))
            )
            if isinstance(contents, list):
                names = sorted(f"{c.path}{'/' if c.type == 'dir' else ''}" for c in contents)
                return f"{repo}:{path} is a folder with {len(names)} entries:\n" + "\n".join(names)
            if contents.encoding != "base64" or not contents.content:
                return (
                    f"{repo}:{path} ({contents.size:,} bytes) is too large for the contents API; "
                    f"download it from {contents.download_url} with run_bash if you need it."
                )
            return _render_file(repo, path, contents.decoded_content, max_chars)

        return self._call(["file", repo, path, ref, max_chars], fetch, f"read of {repo}:{path}")


def _repo_line(r: Any) -> str:
    description = (r.description or "").strip()
    if len(description) > _DESCRIPTION_CHARS:
        description = description[:_DESCRIPTION_CHARS] + " [...]"
    updated = r.updated_at.date().isoformat() if r.updated_at else "?"
    return (
        f"{r.full_name} · ★{r.stargazers_count:,} · {r.language or 'n/a'} · updated {updated}\n"
        f"   {description or '(no description)'}\n   {r.html_url}"
    )


def _code_line(c: Any) -> str:
    return f"{c.repository.full_name}: {c.path}\n   {c.html_url}"


def _render_file(repo: str, path: str, data: bytes, max_chars: int) -> str:
    if b"\0" in data[:8192]:
        return f"{repo}:{path} is a binary file ({len(data):,} bytes); not shown."
    text = data.decode("utf-8", errors="replace")
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    header = f"{repo}:{path} ({len(data):,} bytes, {lines} lines)"
    if len(text) > max_chars:
        header += f" [showing the first {max_chars:,} characters; {len(text) - max_chars:,} cut]"
        text = text[:max_chars]
    return header + "\n" + text
