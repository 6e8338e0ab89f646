"""Checks a challenge folder file by file and field by field; every problem names the fix."""

from __future__ import annotations

import ast
import re
import string
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from challenges.framework.spec import PLACEHOLDERS, Challenge, Metric, Preset, default_score_minutes
from checkpoints.env_names import declared_name_problem

TOP_KEYS = {"name", "title", "source", "metric", "submission", "rules", "presets", "baseline", "environment",
            "feedback", "prepare"}
METRIC_KEYS = {"name", "direction", "success_threshold", "sentinels"}
PROXY_METRIC_KEYS = METRIC_KEYS | {"note"}
BASELINE_KEYS = {"command", "reference_score"}
FEEDBACK_CHOICES = ("dev", "none")
PRESET_KEYS = {"hours", "gpus", "gpu_memory_gb", "description", "score_minutes", "disk_gb", "download_gb",
               "baseline_seeds", "max_processes", "max_memory_gb", "disk_reserve_gb", "metric", "env"}
# A folder name on a case-sensitive file system and a URL path segment: `house-price`, `my_task`, `MNIST2`.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
NAME_RULE = "letters, digits, - and _, starting with a letter or digit (e.g. house-price or my_task)"
SCORE_SIG = "submission, ctx"


@dataclass(frozen=True)
class Problem:
    file: str
    field: str
    message: str
    fix: str

    def __str__(self) -> str:
        where = f"{self.file} {self.field}".strip()
        return f"{where}: {self.message} (fix: {self.fix})"


def validate(folder: Path) -> tuple[Challenge | None, list[Problem]]:
    """Return the parsed challenge (None when invalid) and every problem found."""
    folder = Path(folder)
    if not folder.is_dir():
        return None, [Problem(str(folder), "", "is not a folder", "give the path of a challenge folder")]
    problems: list[Problem] = []
    raw = _read_toml(folder / "challenge.toml", problems)
    _check_task(folder, problems)
    _check_functions(folder / "scorer.py", {"score": SCORE_SIG, "check": SCORE_SIG}, {"score"}, problems)
    if (folder / "prepare.py").exists():
        _check_functions(folder / "prepare.py", {"prepare": "ctx"}, {"prepare"}, problems)
    if raw is None:
        return None, problems
    challenge = _parse(folder, raw, problems)
    return (challenge if not problems else None), problems


def _read_toml(path: Path, problems: list[Problem]) -> dict[str, Any] | None:
    if not path.is_file():
        problems.append(Problem("challenge.toml", "", "is missing", "create it (see `research-crew challenges new`)"))
        return None
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        problems.append(Problem("challenge.toml", "", f"is not valid TOML: {err}", "correct the syntax there"))
    except UnicodeDecodeError:
        problems.append(Problem("challenge.toml", "", "is not UTF-8 text", "save it as UTF-8"))
    return None


def _check_task(folder: Path, problems: list[Problem]) -> None:
    task = folder / "task.md"
    if not task.is_file():
        problems.append(Problem("task.md", "", "is missing", "write the task as the supervisor should read it"))
    elif not task.read_text(encoding="utf-8", errors="replace").strip():
        problems.append(Problem("task.md", "", "is empty", "write the task as the supervisor should read it"))


def _check_functions(
    path: Path, signatures: dict[str, str], required: set[str], problems: list[Problem]
) -> None:
    """Parse (never import) a module and check its functions and their parameter counts."""
    if not path.is_file():
        problems.append(Problem(path.name, "", "is missing", f"add {path.name} defining {', '.join(sorted(required))}"))
        return
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as err:
        problems.append(Problem(path.name, f"line {err.lineno}", f"has a syntax error: {err.msg}", "correct it"))
        return
    defined = {
        node.name: node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    for name in sorted(required - defined.keys()):
        problems.append(
            Problem(path.name, name, "is not defined", f"define `def {name}({signatures[name]})` at top level")
        )
    for name, node in defined.items():
        if name not in signatures:
            continue
        count = len(node.args.posonlyargs) + len(node.args.args)
        expected = signatures[name].count(",") + 1
        if count != expected:
            problems.append(Problem(path.name, name, f"takes {count} parameters, expected {expected}",
                                    f"write it as `def {name}({signatures[name]})`"))


def _parse(folder: Path, raw: dict[str, Any], problems: list[Problem]) -> Challenge | None:
    fields = _Fields(problems)
    fields.unknown_keys(raw, TOP_KEYS, "")
    name = fields.text(raw, "name", "")
    if name and not NAME_PATTERN.match(name):
        fields.add("name", f"'{name}' is not a valid challenge name", f"use {NAME_RULE}")
    if name and name != folder.name:
        fields.add("name", f"'{name}' differs from the folder name '{folder.name}'", "make them the same")
    title = fields.text(raw, "title", "")
    metric = _parse_metric(fields, fields.table(raw, "metric", ""), "[metric].", METRIC_KEYS, 0.10)
    submission = fields.text(fields.table(raw, "submission", ""), "description", "[submission].")
    rules = fields.table(raw, "rules", "", required=False)
    allowed = fields.strings(rules, "allowed", "[rules].")
    forbidden = fields.strings(rules, "forbidden", "[rules].")
    presets = _parse_presets(fields, fields.table(raw, "presets", ""), metric.success_threshold)
    baseline_raw = fields.table(raw, "baseline", "", required=False)
    fields.unknown_keys(baseline_raw, BASELINE_KEYS, "[baseline].")
    command = _parse_baseline(folder, fields, baseline_raw)
    reference = fields.number(baseline_raw, "reference_score", "[baseline].", default=float("nan"))
    reference_score = None if reference != reference else reference  # NaN: not given
    requirements = _parse_requirements(fields, fields.table(raw, "environment", "", required=False))
    feedback = fields.table(raw, "feedback", "", required=False)
    fields.unknown_keys(feedback, {"agents"}, "[feedback].")
    agent_feedback = str(feedback.get("agents", "dev"))
    if agent_feedback not in FEEDBACK_CHOICES:
        fields.add("[feedback].agents", f"is {agent_feedback!r}, neither 'dev' nor 'none'",
                   'set agents = "dev" (agents see dev scores) or "none" (blind: agents see no score)')
    prepare_raw = fields.table(raw, "prepare", "", required=False)
    fields.unknown_keys(prepare_raw, {"env", "paths"}, "[prepare].")
    prepare_env = fields.strings(prepare_raw, "env", "[prepare].")
    prepare_paths = fields.strings(prepare_raw, "paths", "[prepare].")
    seeded = [p.name for p in presets.values() if p.baseline_seeds > 1]
    if seeded and command and "{seed}" not in command:
        fields.add("[baseline].command", f"has no {{seed}}, and preset(s) {', '.join(seeded)} set baseline_seeds",
                   "pass the seed to the recipe (e.g. --seed {seed}), or drop baseline_seeds")
    if problems:
        return None
    return Challenge(
        name=name, title=title, directory=folder.resolve(), source=str(raw.get("source", "")),
        metric=metric, submission=submission, presets=presets,
        allowed=tuple(allowed), forbidden=tuple(forbidden), baseline_command=command,
        reference_score=reference_score, requirements=tuple(requirements), agent_feedback=agent_feedback,
        prepare_env=tuple(prepare_env), prepare_paths=tuple(prepare_paths),
    )


def _parse_metric(fields: _Fields, raw: dict[str, Any], prefix: str, keys: set[str],
                  default_threshold: float) -> Metric:
    fields.unknown_keys(raw, keys, prefix)
    name = fields.text(raw, "name", prefix)
    direction = fields.text(raw, "direction", prefix)
    if direction and direction not in ("max", "min"):
        fields.add(f"{prefix}direction", f"'{direction}' is neither 'max' nor 'min'",
                   'set direction = "max" (higher is better) or "min"')
    threshold = fields.number(raw, "success_threshold", prefix, default=default_threshold, minimum=0.0)
    return Metric(name, direction, threshold, tuple(fields.numbers(raw, "sentinels", prefix)))


def _parse_presets(fields: _Fields, table: dict[str, Any], threshold: float) -> dict[str, Preset]:
    if not table and "presets" not in fields.reported:
        fields.add("[presets]", "defines no preset", "add at least [presets.smoke] with hours and gpus")
    presets = {}
    for preset_name, body in table.items():
        prefix = f"[presets.{preset_name}]."
        if not isinstance(body, dict):
            fields.add(prefix[:-1], "is not a table", f"write it as [presets.{preset_name}] with hours = ...")
            continue
        fields.unknown_keys(body, PRESET_KEYS, prefix)
        hours = fields.number(body, "hours", prefix, minimum=0.0, exclusive=True)
        preset = Preset(
            name=preset_name,
            hours=hours,
            gpus=int(fields.number(body, "gpus", prefix, default=0, minimum=0, integer=True)),
            gpu_memory_gb=fields.number(body, "gpu_memory_gb", prefix, default=0.0, minimum=0.0),
            description=str(body.get("description", "")),
            score_minutes=fields.number(body, "score_minutes", prefix, default=default_score_minutes(hours) or 1.0,
                                        minimum=0.0, exclusive=True),
            disk_gb=fields.number(body, "disk_gb", prefix, default=0.0, minimum=0.0),
            download_gb=fields.number(body, "download_gb", prefix, default=0.0, minimum=0.0),
            baseline_seeds=int(fields.number(body, "baseline_seeds", prefix, default=1, minimum=1, integer=True)),
            max_processes=int(fields.number(body, "max_processes", prefix, default=2048, minimum=1, integer=True)),
            max_memory_gb=fields.number(body, "max_memory_gb", prefix, default=0.0, minimum=0.0),
            disk_reserve_gb=fields.number(body, "disk_reserve_gb", prefix, default=2.0, minimum=0.0),
            env=_parse_env(fields, body, prefix),
        )
        if "metric" in body:  # a stated proxy for this preset; `note` says why
            proxy = fields.table(body, "metric", prefix)
            preset = replace(preset, metric=_parse_metric(fields, proxy, f"{prefix}metric.", PROXY_METRIC_KEYS,
                                                          threshold),
                             metric_note=str(proxy.get("note", "")))
        if hours > 0 and preset.budget_s < preset.min_budget_s:
            fields.add(f"{prefix}hours", f"is {hours:g} ({preset.budget_s / 60:g} min), too short for its own scoring "
                       f"reserve of {preset.score_minutes:g} min: a run needs at least twice that "
                       f"({preset.min_budget_s / 60:g} min)",
                       f"raise hours to at least {preset.min_budget_s / 3600:.3g} or lower score_minutes")
        presets[preset_name] = preset
    return presets


def _parse_env(fields: _Fields, body: dict[str, Any], prefix: str) -> tuple[tuple[str, str], ...]:
    """A preset's `env = { NAME = "value" }`: what the agents' commands and jobs get besides the allowlist."""
    table = fields.table(body, "env", prefix, required=False)
    env = []
    for name, value in table.items():
        problem = declared_name_problem(name)
        if problem:
            fields.add(f"{prefix}env.{name}", problem, f"remove {name} from {prefix}env (agents' commands get it "
                       "from the machine or from research-crew, or must not get it at all)")
        elif not isinstance(value, str):
            fields.add(f"{prefix}env.{name}", f"must be text, got {value!r}", f'write {name} = "{value}"')
        else:
            env.append((name, value))
    return tuple(env)


def _parse_requirements(fields: _Fields, table: dict[str, Any]) -> list[str]:
    fields.unknown_keys(table, {"requirements"}, "[environment].")
    requirements = fields.strings(table, "requirements", "[environment].")
    from packaging.requirements import InvalidRequirement, Requirement

    for text in requirements:
        try:
            Requirement(text)
        except InvalidRequirement as err:
            fields.add("[environment].requirements", f"{text!r} is not a pip specifier: {err}",
                       'write it as pip would take it, e.g. "seaborn>=0.13" or "numpy<2.4"')
    return requirements


def _parse_baseline(folder: Path, fields: _Fields, table: dict[str, Any]) -> str | None:
    if not table or ("command" not in table and "reference_score" in table):
        return None
    command = fields.text(table, "command", "[baseline].")
    if not command:
        return None
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(command) if name is not None}
    except ValueError as err:
        fields.add("[baseline].command", f"has a malformed placeholder: {err}", "use {data_dir}-style braces")
        return None
    for name in sorted(names - set(PLACEHOLDERS)):
        fields.add("[baseline].command", f"uses unknown placeholder {{{name}}}",
                   f"use only {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    for token in command.split():
        if token.endswith(".py") and "{" not in token and not (folder / token).is_file():
            fields.add("[baseline].command", f"runs {token}, which is not in the challenge folder",
                       f"add {token} or correct the command")
    return command


class _Fields:
    """Typed field access that records a Problem instead of raising."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        self.reported: set[str] = set()

    def add(self, field: str, message: str, fix: str) -> None:
        self.reported.add(field.strip("[]."))
        self.problems.append(Problem("challenge.toml", field, message, fix))

    def unknown_keys(self, table: dict[str, Any], known: set[str], prefix: str) -> None:
        for key in sorted(set(table) - known):
            self.add(f"{prefix}{key}", "is not a known field", f"remove it or use one of: {', '.join(sorted(known))}")

    def table(self, raw: dict[str, Any], key: str, prefix: str, required: bool = True) -> dict[str, Any]:
        value = raw.get(key)
        if value is None:
            if required:
                self.add(f"[{prefix}{key}]", "is missing", f"add a [{key}] table")
            return {}
        if not isinstance(value, dict):
            self.add(f"{prefix}{key}", "is not a table", f"write it as a [{key}] table")
            return {}
        return value

    def text(self, raw: dict[str, Any], key: str, prefix: str) -> str:
        value = raw.get(key)
        if value is None:
            self.add(f"{prefix}{key}", "is missing", f'add {key} = "..."')
            return ""
        if not isinstance(value, str) or not value.strip():
            self.add(f"{prefix}{key}", f"must be non-empty text, got {value!r}", f'write {key} = "..."')
            return ""
        return value

    def strings(self, raw: dict[str, Any], key: str, prefix: str) -> list[str]:
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.add(f"{prefix}{key}", f"must be a list of text, got {value!r}", f'write {key} = ["..."]')
            return []
        return value

    def numbers(self, raw: dict[str, Any], key: str, prefix: str) -> list[float]:
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                                  for v in value):
            self.add(f"{prefix}{key}", f"must be a list of numbers, got {value!r}", f"write {key} = [1e10]")
            return []
        return [float(v) for v in value]

    def number(self, raw: dict[str, Any], key: str, prefix: str, default: float | None = None,
               minimum: float | None = None, exclusive: bool = False, integer: bool = False) -> float:
        value = raw.get(key, default)
        kind = "a whole number" if integer else "a number"
        if value is None:
            self.add(f"{prefix}{key}", "is missing", f"add {key} = <{kind}>")
            return 0.0
        if isinstance(value, bool) or not isinstance(value, int | float) or (integer and not isinstance(value, int)):
            self.add(f"{prefix}{key}", f"must be {kind}, got {value!r}", f"write {key} = <{kind}>")
            return 0.0
        if minimum is not None and (value < minimum or (exclusive and value == minimum)):
            bound = f"greater than {minimum:g}" if exclusive else f"at least {minimum:g}"
            self.add(f"{prefix}{key}", f"is {value}, must be {bound}", f"set {key} to a value {bound}")
        return float(value)
