"""The environment the agents' commands see. Inside the sandbox: only what an allowlist names (agent_env);
without it, the parent's minus anything that looks like a secret (scrubbed_env)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from checkpoints.env_names import AGENT_ENV_NAMES, AGENT_ENV_PREFIXES, KNOWN_SECRETS, is_secret_name

__all__ = ["AGENT_ENV_NAMES", "AGENT_ENV_PREFIXES", "KNOWN_SECRETS", "agent_env", "is_secret_name", "scrubbed_env",
           "without_credentials"]


def scrubbed_env(
    base: Mapping[str, str] | None = None,
    *,
    extra: Mapping[str, str] | None = None,
    also_remove: Iterable[str] = (),
) -> dict[str, str]:
    """A copy of `base` (default: this process's environment) without secrets, plus `extra`.

    `extra` is applied after scrubbing, so a caller can deliberately pass a non-secret value on.
    """
    source = os.environ if base is None else base
    removed = {n.upper() for n in also_remove}
    env = {k: v for k, v in source.items() if not is_secret_name(k) and k.upper() not in removed}
    if extra:
        env.update(extra)
    return env


_URL_NAMES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "HF_ENDPOINT")


def without_credentials(url: str) -> str:
    """A URL (or space-separated URLs) with any user:password@ removed."""
    cleaned = []
    for part in url.split():
        parsed = urlsplit(part)
        if parsed.username is not None or parsed.password is not None:
            host = parsed.hostname or ""
            part = urlunsplit(parsed._replace(netloc=host + (f":{parsed.port}" if parsed.port else "")))
        cleaned.append(part)
    return " ".join(cleaned)


def agent_env(base: Mapping[str, str], *, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An agent's environment built from an allowlist of `base` (never a secret, whatever its name), URLs
    without credentials, plus `extra` (what the toolkit or the preset sets on purpose)."""
    env = {}
    for name, value in base.items():
        if (name in AGENT_ENV_NAMES or name.startswith(AGENT_ENV_PREFIXES)) and not is_secret_name(name):
            env[name] = without_credentials(value) if name.upper() in _URL_NAMES else value
    env.update(extra or {})
    return env
