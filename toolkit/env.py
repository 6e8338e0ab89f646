"""The environment the agents' commands see: the parent's, minus anything that looks like a secret."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping

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
