"""Where the stores live: the run's own folder and the global one shared by all runs."""

import os
from pathlib import Path

GLOBAL_DIR_ENV = "RESEARCH_CREW_MEMORY_DIR"


def global_memory_dir(override: Path | str | None = None) -> Path:
    """The global store folder: `override`, else $RESEARCH_CREW_MEMORY_DIR, else the user data dir."""
    if override is not None:
        return Path(override).expanduser()
    from_env = os.environ.get(GLOBAL_DIR_ENV)
    if from_env:
        return Path(from_env).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "research-crew" / "memory"


def run_memory_dir(run_dir: Path | str) -> Path:
    """The store folder inside a run directory."""
    return Path(run_dir) / "memory"
