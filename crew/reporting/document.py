"""The report's content, once, as sections of facts, tables, plots and code; markdown and HTML only render it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crew.reporting import plots
from crew.reporting.history import RunHistory
from crew.run.durations import format_duration
from crew.run.events import ModelResponse, ToolResults
from crew.run.rundir import RunDir
from crew.run.sandboxing import network_mode, sandbox_record
from crew.run.score_sets import FULL, on_set

QUIET_KINDS = (ModelResponse, ToolResults)  # counted, not listed: the trace has them in full
LOG_TAIL_LINES = 15


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    title: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    text: str = ""
    plot: tuple[str, bytes] | None = None  # (file stem, PNG)
    tables: list[tuple[str, Table]] = field(default_factory=list)  # (caption, table)
    code: list[str] = field(default_factory=list)
    collapsed: bool = False  # long lists: folded in the HTML


@dataclass
class Document:
    title: str
    sections: list[Section]


def build_document(h: RunHistory, title: str, with_plots: bool = True) -> Document:
    return Document(title, [_summary(h), *_final_pick(h), _plan(h, with_plots), _evaluations(h, with_plots),
                            _curves(h, with_plots), _experiments(h), _hypotheses(h),
                            _usage(h, with_plots), _claims(h), _events(h), *_baseline_log(h)])


def _summary(h: RunHistory) -> Section:
    r, snap = h.result, h.snapshot
    note = f" ({r['note']})" if r.get("note") else ""
    sub = r.get("submission")
    tokens = r.get("tokens") or snap.tokens
    facts = [
        ("status", f"{r.get('status', snap.state)}{note}"),
        ("challenge", f"{snap.config.get('challenge')} ({r.get('preset', snap.config.get('preset'))} preset)"),
        ("model", str((r.get("models") or {}).get("model", snap.config.get("model")))),
        ("metric", _metric(r.get("metric") or snap.metric)),
        ("score", f"{on_set(r.get('score'), FULL)}, baseline policy: {on_set(r.get('baseline_score'), FULL)}, "
                  f"improvement: {pct(r.get('improvement'))}{_noise(r)}"),
        ("time", f"{format_duration(r.get('elapsed_s', snap.elapsed_s))} of "
                 f"{format_duration(r.get('budget_s', snap.budget_s))}"),
        ("steps", f"{r.get('steps', snap.steps)}, resumes: {r.get('resumes', snap.resumes)}"),
        ("tokens", ", ".join(f"{k} {int(v):,}" for k, v in tokens.items())),
        ("cost", f"${float(r.get('cost_usd', snap.cost_usd)):.4f}"),
        ("submission", f"{sub['evaluation']}: `{sub['path']}` (sha256 {sub['sha256'][:16]}…)" if sub else "none"),
        ("sandbox", _sandbox(r.get("sandbox") or sandbox_record(snap.config))),
    ]
    return Section("Summary", facts=facts)


def _metric(metric: dict[str, str]) -> str:
    """result.json holds the metric even when nothing was scored (the trace's evaluations then hold none)."""
    return f"{metric.get('name', '?')} ({metric.get('direction', '?')})"


def _noise(r: dict[str, Any]) -> str:
    noise = r.get("baseline_noise")
    if not noise:
        return ""
    band = f"baseline seeds {', '.join(num(s) for s in noise['seed_scores'])}, spread {num(noise['spread'])}"
    return f" — WITHIN BASELINE NOISE ({band})" if r.get("within_baseline_noise") else f" ({band})"


def _final_pick(h: RunHistory) -> list[Section]:
    """How the submission was chosen: the held-out scores of the top dev records (crew/run/final_pick.py)."""
    r = h.result
    pick, scores = r.get("pick"), r.get("scores")
    if not pick or not scores:
        return []
    split = scores.get("split") or {}
    facts = [("chosen by", "held-out score among the top dev records" if pick["by"] == "held-out"
              else "dev score (no held-out pick)"),
             ("submission", f"{pick['evaluation']}: dev {num(scores['dev'])}, held-out {num(scores['heldout'])}, "
                            f"full {num(scores['full'])} ({split.get('dev_items', 0)} dev / "
                            f"{split.get('heldout_items', 0)} held-out items)"),
             ("dev-best", f"{pick['dev_best']}" + (" (not submitted)" if pick["differs_from_dev_best"] else "")),
             ("supervisor's choice", f"{pick['supervisor_choice'] or 'none'}"
              + (" (overruled)" if pick.get("differs_from_supervisor") else ""))]
    if pick.get("note") or split.get("note"):
        facts.append(("note", "; ".join(n for n in (pick.get("note"), split.get("note")) if n)))
    table = Table(["evaluation", "dev", "held-out", "full"],
                  [[c["evaluation"] + (" (submitted)" if c["evaluation"] == pick["evaluation"] else ""),
                    num(c["dev"]), num(c["heldout"]), num(c["full"])] for c in pick["candidates"]])
    return [Section("Final pick", facts=facts, tables=[("Candidates", table)])]


def _sandbox(record: dict[str, Any]) -> str:
    if record.get("warning") and record.get("kind") == "none":
        return f"none — INTEGRITY WARNING: {record['warning']}"
    if record.get("note"):
        return f"{record['kind']} ({record['note']})"
    text = f"{record['kind']}, agent network {network_mode(record.get('agent_network', True))}"
    return text + (f" — INTEGRITY WARNING: {record['warning']}" if record.get("warning") else "")


def _plan(h: RunHistory, with_plots: bool) -> Section:
    section = Section("Plan against what happened",
                      plot=("timeline", plots.timeline_png(h)) if with_plots else None)
    if h.plan:
        section.tables.append(("The supervisor's plan at the end", Table(
            ["phase", "planned", "status"],
            [[str(i.get("phase")), format_duration(float(i.get("minutes", 0)) * 60), str(i.get("status"))]
             for i in h.plan])))
    section.tables.append(("Phases", Table(["phase", "from", "to"], [
        [s.label, _at(h, s.start), _at(h, s.end)] for s in h.phases])))
    if h.subtasks:
        section.tables.append(("Subtasks", Table(["role", "from", "took", "subtask"], [
            [s.label, _at(h, s.start), format_duration(s.end - s.start), _short(s.detail, 160)]
            for s in h.subtasks])))
    if h.jobs:
        section.tables.append(("Jobs", Table(["job", "state", "exit", "from", "ran", "progress"], [
            [j.id, j.state, str(j.exit_code), _at(h, j.started) if j.started else "-",
             format_duration(j.runtime_s(h.end) or 0), _progress(j)] for j in h.jobs])))
    return section


def _progress(job) -> str:
    """A job's last progress; the ETA only while it runs (a finished job has none left)."""
    p = job.progress
    if p is None:
        return "-"
    return str(p) if job.running else f"{p.done:g}/{p.total:g} ({p.fraction:.0%}) [from {p.source}]"


def _evaluations(h: RunHistory, with_plots: bool) -> Section:
    section = Section("Evaluations (harness records)", plot=("scores", plots.scores_png(h)) if with_plots else None)
    if not h.scores:
        section.text = "No artifact was scored."
        return section
    submitted = (h.result.get("submission") or {}).get("evaluation")
    section.tables.append(("", Table(["id", "at", "score", "full set", "ok", "note"], [
        [p.id + (" (submitted)" if p.id == submitted else ""), _at(h, p.t), on_set(p.score, p.score_set),
         on_set(p.full, FULL) if p.ok else "n/a", str(p.ok), _short(p.note)] for p in h.scores])))
    return section


def _curves(h: RunHistory, with_plots: bool) -> Section:
    if not h.curves:
        return Section("Training curves", text="No job printed step and loss lines.")
    rows = [[job_id, str(len(points)), f"{points[0][1]:.4g} at step {points[0][0]}",
             f"{points[-1][1]:.4g} at step {points[-1][0]}"] for job_id, points in h.curves.items()]
    return Section("Training curves", plot=("curves", plots.curves_png(h)) if with_plots else None,
                   tables=[("", Table(["job", "points", "first loss", "last loss"], rows))])


def _experiments(h: RunHistory) -> Section:
    """The experiment tree: each evaluation under its parent, with its kind, score, hypothesis and lesson."""
    if not h.scores:
        return Section("Experiment tree", text="No experiment was evaluated.")
    known = {p.id for p in h.scores}
    children: dict[str | None, list] = {}
    for p in h.scores:  # a parent that is no record of this run makes its child a root
        parent = p.experiment.get("parent")
        children.setdefault(parent if parent in known else None, []).append(p)
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for p in children.get(parent, []):
            outcome = on_set(p.score, p.score_set) if p.ok else "failed"
            lesson = f" — lesson: {p.experiment['lesson']}" if p.experiment.get("lesson") else ""
            lines.append(f"{'    ' * depth}- {p.id} [{p.experiment.get('kind', 'draft')}] {outcome}: "
                         f"{p.experiment.get('hypothesis') or '(no hypothesis given)'}{lesson}")
            walk(p.id, depth + 1)

    walk(None, 0)
    return Section("Experiment tree", code=lines)


def _hypotheses(h: RunHistory) -> Section:
    if not h.hypotheses:
        return Section("Hypotheses and outcomes", text="No hypothesis was recorded.")
    return Section("Hypotheses and outcomes", tables=[("", Table(["id", "hypothesis", "outcome"], [
        [x.id, _short(x.statement, 200), x.outcome] for x in h.hypotheses]))])


def _usage(h: RunHistory, with_plots: bool) -> Section:
    with_plots = with_plots and bool(h.usage_by_agent)  # no model calls (the baseline policy): no empty plot
    section = Section("Tokens and cost by agent", plot=("usage", plots.usage_png(h)) if with_plots else None)
    keys = ("input", "output", "cache_read", "cache_write")
    rows = [[agent, *(f"{int(u.get(k, 0)):,}" for k in keys), f"${u.get('cost_usd', 0.0):.4f}"]
            for agent, u in h.usage_by_agent.items()]
    if rows:
        section.tables.append(("", Table(["agent", *keys, "cost"], rows)))
    else:
        section.text = "No model calls."
    return section


def _claims(h: RunHistory) -> Section:
    section = Section("Unverified claims (numbers cited with no evaluation record behind them)")
    if not h.claims:
        section.text = "None."
    else:
        section.tables.append(("", Table(["agent", "value", "context"], [
            [str(c.get("agent")), str(c.get("value")), _short(str(c.get("context", "")), 200)] for c in h.claims])))
    return section


def _events(h: RunHistory) -> Section:
    quiet = sum(1 for e in h.events if isinstance(e, QUIET_KINDS))
    rows = []
    for event in h.events:
        if isinstance(event, QUIET_KINDS):
            continue
        rows.append([str(event.t), str(event.kind), str(event.agent), _brief(event.details())])
    return Section("Timeline of events", text=f"{len(rows)} events below; {quiet} model calls and tool results "
                   "are in trace.jsonl.", tables=[("", Table(["time (UTC)", "event", "agent", "details"], rows))],
                   collapsed=True)


def _baseline_log(h: RunHistory) -> list[Section]:
    log = RunDir(h.snapshot.root).job_log("baseline")
    if not log.is_file():
        return []
    tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-LOG_TAIL_LINES:]
    return [Section("Baseline recipe, last lines of its log", code=tail)]


def _at(h: RunHistory, t: float) -> str:
    return f"+{format_duration(max(0.0, t - h.start))}"


def num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def pct(value: Any) -> str:
    return "n/a" if value is None else f"{value:+.1%}"


def _brief(details: dict[str, Any]) -> str:
    return _short(", ".join(f"{k}={v}" for k, v in details.items()), 200)


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
