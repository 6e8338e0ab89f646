"""Rules on environment variable names that both the toolkit (what agents' commands inherit) and the challenge
validator (what a preset may declare for them) apply: which names look like secrets, which the toolkit passes
from the crew's environment or sets itself. Here, below both, so that the two agree."""

from __future__ import annotations

import functools
import re

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
# Set by the toolkit itself for every command, or able to load code from elsewhere into it.
TOOLKIT_NAMES = frozenset({
    "HOME", "TMPDIR", "PWD", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONSAFEPATH",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND",
})
CREW_PREFIX = "RESEARCH_CREW_"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def declared_name_problem(name: str) -> str | None:
    """Why a challenge may not declare `name` for the agents' commands (None when it may)."""
    if not _NAME.match(name):
        return f"'{name}' is not a variable name (letters, digits and _, not starting with a digit)"
    if is_secret_name(name):
        return f"'{name}' looks like the name of a secret (key, token, password); agents are never given secrets"
    if name in AGENT_ENV_NAMES or name.startswith(AGENT_ENV_PREFIXES):
        return f"'{name}' is passed to agents from the machine's own environment, so the machine's value decides it"
    if name in TOOLKIT_NAMES or name.upper().startswith(CREW_PREFIX):
        return f"'{name}' is set by research-crew itself for every command (or would load code from elsewhere)"
    return None
