"""The environment the agents' commands see. Inside the sandbox: only what an allowlist names (agent_env);
without it, the parent's minus anything that looks like a secret (scrubbed_env)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

# Named explicitly so they go even if the name heuristic below were ever loosened.
KNOWN_SECRETS = frozenset(
    {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}
)

# Matched per name segment (split on non-alphanumerics) so that e.g. TOKENIZERS_PARALLELISM survives
# while HF_HUB_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASSWORD and MYAPIKEY do not.
_SECRET_WORDS = ("KEY", "KEYS", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD")
_SECRET_SEGMENT = re.compile(r"^(?:[A-Z0-9]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)S?|PASSPHRASE|CREDENTIALS?|AUTH|PAT)$")


@functools.lru_cache(maxsize=4096)  # names repeat on every call; the regex work need not
def is_secret_name(name: str) -> bool:
    """True when an environment variable's name looks like it holds a key, token, secret or password."""
    upper = name.upper()
    if upper in KNOWN_SECRETS:
        return True
    segments = [s for s in re.split(r"[^A-Z0-9]+", upper) if s]
    return any(seg in _SECRET_WORDS or _SECRET_SEGMENT.match(seg) for seg in segments)


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


# What an agent's command inherits from the crew's environment, by name: the search path, the locale, GPU and
# thread settings, the hub's endpoint, cache-less offline flags, and package and proxy addresses (stripped of
# any user:password). Everything else (keys, database URLs, the crew's own settings) stays with the crew.
AGENT_ENV_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONUNBUFFERED", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
    "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM", "HF_ENDPOINT", "HF_HUB_OFFLINE",
    "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY", "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy",
})
AGENT_ENV_PREFIXES = ("LC_", "CUDA_", "NCCL_", "NVIDIA_")
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
