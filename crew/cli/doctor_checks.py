"""Can this machine run a challenge's preset? GPU, disk, hub access, lm-eval tasks, tools, model API.

`research-crew doctor` prints every check; `run` performs the quick ones (GPU, disk, hub metadata) before
preparing data and refuses to start what could not finish preparing. Each check is a verdict with what
was found and, when it is not fine, the fix.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from challenges.framework.api import ChallengeError, EnvironmentCheck
from challenges.framework.data import cache_root, is_prepared
from challenges.framework.loader import load_module
from challenges.framework.spec import Challenge, Preset
from crew.run.rundir import default_runs_root
from toolkit import limits

log = logging.getLogger(__name__)

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
GIB = 1 << 30
GPU_MEMORY_TOLERANCE = 0.95  # a "40 GB" A100 reports 39.4 GiB: cards within 5% of the preset count as enough
DOWNLOAD_SLACK = 1.10


@dataclass(frozen=True)
class Check:
    name: str
    verdict: str  # ok, warn, fail or skip
    detail: str
    fix: str = ""


def run_checks(challenge: Challenge, preset: Preset, model_spec: str | None = None, quick: bool = False,
               ) -> list[Check]:
    """Every check for the preset; `quick` keeps to those `run` needs before preparing (GPU, disk, hub)."""
    checks = [gpu_check(preset), disk_check(challenge, preset), requirements_check(challenge)]
    checks += hub_checks(challenge, preset)
    if quick:
        return checks
    checks += lm_eval_checks(challenge, preset)
    checks += challenge_checks(challenge, preset)
    checks += [sandbox_check(), network_check(), limits_check(preset), model_api_check(model_spec)]
    return checks


def failures(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.verdict == FAIL]


# -- GPU and disk ---------------------------------------------------------------------------------------


def gpu_check(preset: Preset) -> Check:
    if preset.gpus == 0:
        return Check("GPU", OK, "not needed: the preset runs on the CPU")
    cards = _cuda_cards()
    need = f"{preset.gpus} GPU(s)" + (f" with {preset.gpu_memory_gb:g} GB" if preset.gpu_memory_gb else "")
    if len(cards) < preset.gpus:
        from toolkit.gpus import gpu_status

        seen = gpu_status().splitlines()[0]
        return Check("GPU", FAIL, f"the preset needs {need}; torch can use {len(cards) or 'none'} here ({seen})",
                     "run on a machine with such a GPU and a CUDA build of torch, or choose a CPU preset "
                     "(--preset smoke)")
    small = [(n, m) for n, m in cards[: preset.gpus] if m < GPU_MEMORY_TOLERANCE * preset.gpu_memory_gb * GIB]
    found = ", ".join(f"{name} ({memory / GIB:.0f} GiB)" for name, memory in cards)
    if small:
        return Check("GPU", FAIL, f"the preset needs {need}; found {found}",
                     "run on a GPU with that much memory, or choose a smaller preset (--preset mini)")
    capped = preset.gpu_memory_gb and any(m > preset.gpu_memory_gb * GIB for _, m in cards)
    note = f"; jobs are capped at {preset.gpu_memory_gb:g} GiB per GPU, as on the reference machine" if capped else ""
    return Check("GPU", OK, f"{found} for {need}{note}")


def _cuda_cards() -> list[tuple[str, int]]:
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    return [(torch.cuda.get_device_name(i), torch.cuda.get_device_properties(i).total_memory)
            for i in range(torch.cuda.device_count())]


def disk_check(challenge: Challenge, preset: Preset) -> Check:
    root = cache_root()
    if is_prepared(challenge, preset.name):
        return Check("disk", OK, f"the data is already prepared under {root}")
    if not preset.disk_gb:
        return Check("disk", SKIP, "the preset states no disk need (disk_gb)")
    places = {_existing(root), _existing(default_runs_root().absolute())}
    short = []
    for place in sorted(places):
        free = shutil.disk_usage(place).free
        if free < preset.disk_gb * 1e9:
            short.append(f"{place} has {free / 1e9:.1f} GB free")
    if short:
        return Check("disk", FAIL, f"the preset needs {preset.disk_gb:g} GB (data, submissions, scored copies); "
                     + "; ".join(short), "free space there, or set RESEARCH_CREW_CACHE and RESEARCH_CREW_RUNS "
                     "to a larger disk")
    frees = ", ".join(f"{p}: {shutil.disk_usage(p).free / 1e9:.0f} GB free" for p in sorted(places))
    return Check("disk", OK, f"needs {preset.disk_gb:g} GB; {frees}")


def _existing(path: Path) -> Path:
    path = Path(path).absolute()
    while not path.exists():
        path = path.parent
    return path


def requirements_check(challenge: Challenge) -> Check:
    """The challenge's `[environment] requirements` against what is installed; nothing is installed here."""
    if not challenge.requirements:
        return Check("requirements", SKIP, "the challenge states no Python requirements")
    import os

    from challenges.framework.requirements import unmet

    missing = unmet(challenge.requirements, os.environ.get("PYTHONPATH", "").split(os.pathsep))
    if not missing:
        return Check("requirements", OK, f"met: {', '.join(challenge.requirements)}")
    listing = "; ".join(f"{spec} ({found})" for spec, found in missing)
    specs = " ".join(f"'{spec}'" for spec, _ in missing)
    return Check("requirements", FAIL, f"not met: {listing}",
                 f"run with --install-requirements (a folder of the run's own), install them yourself "
                 f"(pip install {specs}), or pass --skip-checks")


# -- what the preset downloads --------------------------------------------------------------------------


def preset_sources(challenge: Challenge, preset: str):
    """The `SOURCES[preset]` the challenge's prepare.py declares, or None."""
    if not challenge.has_prepare:
        return None
    sources = getattr(load_module(challenge.directory / "prepare.py"), "SOURCES", None) or {}
    return sources.get(preset)


def hub_checks(challenge: Challenge, preset: Preset) -> list[Check]:
    sources = preset_sources(challenge, preset.name)
    if sources is None or not (sources.models or sources.datasets):
        return [Check("hub", SKIP, "the preset downloads nothing from the hub")]
    if is_prepared(challenge, preset.name):
        return [Check("hub", OK, "the data is already prepared: nothing to download")]
    from challenges.lib.hub import model_report
    from challenges.lib.hub_access import HubUnavailable, inspect_dataset

    checks, total = [], 0
    items: list[tuple[str, Callable]] = [(f"model {m.repo}", lambda m=m: model_report(m)) for m in sources.models]
    items += [(f"dataset {d.repo}", lambda d=d: inspect_dataset(d)) for d in sources.datasets]
    for name, inspect in items:
        try:
            report = inspect()
        except HubUnavailable as err:
            checks.append(Check(name, FAIL, err.message, err.hint))
            if err.reason in ("network", "offline"):  # the rest would fail the same way
                checks += [Check(other, SKIP, "not checked: the hub is unreachable") for other, _ in items[
                    len(checks):]]
                return checks
            continue
        total += report.download_bytes
        checks.append(Check(name, OK, _describe(report)))
    checks.append(_download_check(preset, total))
    return checks


def _describe(report) -> str:
    parts = [f"{len(report.files)} file(s), {report.download_bytes / 1e9:.2f} GB at {report.revision}"]
    if report.created_at:
        parts.append(f"uploaded {report.created_at:%Y-%m-%d}")
    if report.parameters:
        parts.append(f"{report.parameters / 1e9:.2f}B parameters")
    return "; ".join(parts + report.notes)


def _download_check(preset: Preset, total: int) -> Check:
    stated = f"stated {preset.download_gb:g} GB" if preset.download_gb else "not stated (download_gb)"
    if preset.download_gb and total > DOWNLOAD_SLACK * preset.download_gb * 1e9:
        return Check("download size", WARN, f"{total / 1e9:.2f} GB to download, {stated}",
                     "update download_gb and disk_gb in challenge.toml")
    return Check("download size", OK, f"{total / 1e9:.2f} GB to download ({stated})")


def lm_eval_checks(challenge: Challenge, preset: Preset) -> list[Check]:
    sources = preset_sources(challenge, preset.name)
    if sources is None or not sources.lm_eval_tasks:
        return [Check("lm-eval tasks", SKIP, "the preset scores with no lm-eval hub task")]
    from challenges.lib.hub_access import HubDataset, HubUnavailable, inspect_dataset
    from challenges.lib.lm_eval_scoring import resolve_tasks

    resolved, unknown = resolve_tasks(sources.lm_eval_tasks)
    if unknown:
        return [Check("lm-eval tasks", FAIL, f"this lm-eval does not know {unknown}",
                      "install an lm-eval that has them (pip install -U lm-eval), or correct the names")]
    paths = sorted({path for pairs in resolved.values() for path, _ in pairs})
    counts = ", ".join(f"{name} ({len(pairs)} task(s))" for name, pairs in resolved.items())
    checks = [Check("lm-eval tasks", OK, f"{counts}; datasets: {', '.join(paths)}")]
    if is_prepared(challenge, preset.name):
        return checks
    for path in paths:
        try:
            report = inspect_dataset(HubDataset(path))
            checks.append(Check(f"lm-eval dataset {path}", OK, f"parquet, revision {report.revision}"))
        except HubUnavailable as err:
            checks.append(Check(f"lm-eval dataset {path}", FAIL, err.message, err.hint))
            if err.reason in ("network", "offline"):
                break
    return checks


# -- tools and the model API ----------------------------------------------------------------------------


def challenge_checks(challenge: Challenge, preset: Preset) -> list[Check]:
    """Checks the challenge's scorer asks for (`environment_checks(preset)`, e.g. a Lean toolchain)."""
    try:
        scorer = load_module(challenge.directory / "scorer.py")
    except Exception as err:  # a broken scorer is validate's business; say so here too
        return [Check("scorer", FAIL, f"scorer.py does not import: {type(err).__name__}: {err}",
                      f"run `research-crew challenges validate {challenge.name}` and fix scorer.py")]
    make = getattr(scorer, "environment_checks", None)
    if make is None:
        return []
    found: list[EnvironmentCheck] = make(preset.name)
    return [Check(c.name, c.verdict, c.detail, c.fix) for c in found]


def sandbox_check() -> Check:
    """bubblewrap is installed and can make a sandbox here (user namespaces allowed)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Check("sandbox", FAIL, "bubblewrap (bwrap) is not installed",
                     "install it (apt install bubblewrap / dnf install bubblewrap), or run with --sandbox none "
                     "(recorded as an integrity warning)")
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent",
            "true"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as err:
        return Check("sandbox", FAIL, f"bwrap could not run: {err}", "check the bubblewrap installation")
    if proc.returncode != 0:
        return Check("sandbox", FAIL, f"bwrap cannot make a sandbox here: {proc.stderr.strip()[:200]}",
                     "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu "
                     "kernel.apparmor_restrict_unprivileged_userns=0), or run with --sandbox none")
    return Check("sandbox", OK, f"{bwrap} makes a sandbox (user, pid, network namespaces)")


def network_check() -> Check:
    """--agent-network egress (the default) needs slirp4netns."""
    if shutil.which("slirp4netns") is None:
        return Check("agent network", WARN, "slirp4netns is not installed: --agent-network egress (the default) "
                     "cannot run", "install it (apt install slirp4netns), or run with --agent-network off or host")
    return Check("agent network", OK, "egress through slirp4netns, without the host's loopback")


def limits_check(preset: Preset) -> Check:
    """Which resource limits apply to agents' commands on this machine (toolkit/limits.py)."""
    memory = int(preset.max_memory_gb * 2**30) if preset.max_memory_gb else None
    if memory is None and not preset.gpus:
        import psutil

        memory = psutil.virtual_memory().total
    lines = limits.describe(preset.max_processes, memory)
    verdict = WARN if any("NOT limited" in line for line in lines) else OK
    return Check("limits", verdict, "; ".join(lines + [f"jobs stop below {preset.disk_reserve_gb:g} GB free disk"]),
                 "delegate a pids cgroup to the crew's user (systemd: Delegate=yes), install util-linux"
                 if verdict == WARN else "")


def model_api_check(spec_text: str | None) -> Check:
    from crew.agent.models.usage import load_prices
    from crew.agent.specs import KEY_VARIABLES, default_spec, parse_spec
    from crew.errors import CrewError

    try:
        spec, why = (parse_spec(spec_text), "--model") if spec_text else default_spec()
    except CrewError as err:
        return Check("model API", FAIL, err.message, err.hint)
    if spec.kind == "baseline":
        return Check("model API", OK, why if spec_text is None else "baseline policy, no LLM (--model baseline)")
    if spec.kind == "replay":
        exists = Path(spec.model).is_file()
        return Check("model API", OK if exists else FAIL, f"replay of {spec.model}",
                     "" if exists else "give the path of a recorded trajectory")
    import os

    key = KEY_VARIABLES[spec.kind]
    if not os.environ.get(key) and not spec.base_url:
        return Check("model API", FAIL, f"{spec} needs {key}, which is not set",
                     f"export {key}=... (keys come only from the environment)")
    priced = [name for name in load_prices() if name != "default" and spec.model.startswith(name)]
    if not priced and not spec.base_url:
        return Check("model API", WARN, f"{spec}: {key} is set; the model name matches no known price table, so "
                     "costs are estimated at the default price", "check the model name's spelling")
    where = f" at {spec.base_url}" if spec.base_url else f"; {key} is set"
    return Check("model API", OK, f"{spec}{where} (the name is not verified against the API without a call)")


def preflight_problem(checks: list[Check]) -> ChallengeError | None:
    """The error `run` raises when a quick check failed, or None."""
    failed = failures(checks)
    if not failed:
        return None
    lines = "\n  ".join(f"{c.name}: {c.detail}" + (f" (fix: {c.fix})" if c.fix else "") for c in failed)
    return ChallengeError(f"this machine cannot prepare the preset:\n  {lines}",
                          "fix the above (see `research-crew doctor CHALLENGE --preset P`), or pass --skip-checks "
                          "to start anyway")
