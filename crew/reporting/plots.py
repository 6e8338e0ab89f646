"""The report's plots as PNG bytes (matplotlib, no display): the timeline, scores over time, usage by agent."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # no display on servers; set before pyplot is imported
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from crew.reporting.history import RunHistory  # noqa: E402
from crew.run.score_sets import DEV  # noqa: E402

ROLE_COLORS = {"engineer": "#4c72b0", "scout": "#55a868", "supervisor": "#8172b2"}
PHASE_COLORS = {"work": "#c6dbef", "wrap-up": "#fdd49e", "final": "#fc8d59"}


def timeline_png(h: RunHistory) -> bytes:
    return _png(timeline_figure(h))


def timeline_figure(h: RunHistory) -> Figure:
    """The plan against what happened: planned allocation, phases, subtasks and jobs, in minutes from the start."""
    rows: list[tuple[str, list[tuple[float, float, str, str]]]] = []
    if h.plan:
        at, planned = 0.0, []
        for item in h.plan:
            planned.append((at, float(item.get("minutes", 0.0)), "#d9d9d9", str(item.get("phase"))))
            at += float(item.get("minutes", 0.0))
        rows.append(("plan", planned))
    rows.append(("phases", [(_m(h, s.start), (s.end - s.start) / 60, PHASE_COLORS.get(s.label, "#deebf7"), s.label)
                            for s in h.phases]))
    for role in dict.fromkeys(s.label for s in h.subtasks):
        rows.append((role, [(_m(h, s.start), (s.end - s.start) / 60, ROLE_COLORS.get(role, "#937860"), "")
                            for s in h.subtasks if s.label == role]))
    for job in h.jobs:
        if job.started is not None:
            end = job.ended if job.ended is not None else h.end
            color = "#64b5cd" if job.state in ("exited", "running") else "#c44e52"
            rows.append((f"job {job.id}", [(_m(h, job.started), (end - job.started) / 60, color, job.state)]))
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(rows) + 1.6))
    for y, (_, bars) in enumerate(rows):
        for left, width, color, label in bars:
            ax.barh(y, max(width, 0.02), left=left, color=color, edgecolor="#555555", linewidth=0.5)
            if label and width > 0:
                ax.text(left + width / 2, y, label, ha="center", va="center", fontsize=7)
    _budget_marks(ax, h)
    ax.set_yticks(range(len(rows)), [name for name, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("minutes since the start")
    ax.set_title("Plan and timeline")
    ax.legend(fontsize=7, loc="best")
    return fig


def curves_png(h: RunHistory) -> bytes:
    """Each job's training loss against its steps, one line per job."""
    fig, ax = plt.subplots(figsize=(9, 3.6))
    for job_id, points in h.curves.items():
        ax.plot([s for s, _ in points], [loss for _, loss in points], label=f"job {job_id}", linewidth=1.2)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_title("Training curves (from the jobs' logs)")
    ax.legend(loc="upper right", fontsize=8)
    return _png(fig)


def scores_png(h: RunHistory) -> bytes:
    return _png(scores_figure(h))


def scores_figure(h: RunHistory) -> Figure:
    """Every harness evaluation's score over time, the best so far, and the baseline policy's score."""
    fig, ax = plt.subplots(figsize=(9, 3.6))
    direction = h.snapshot.metric.get("direction", "max")
    scored = [p for p in h.scores if p.ok and p.score is not None]
    # The baseline policy's own evaluations are the reference, not a gain: drawn apart, never "best so far".
    own_baseline = h.snapshot.config.get("model") == "baseline"
    ok = [] if own_baseline else scored
    if own_baseline and scored:
        ax.plot([_m(h, p.t) for p in scored], [p.score for p in scored], "s", color="#937860",
                label="baseline recipe (this run)")
    if ok:
        ax.plot([_m(h, p.t) for p in ok], [p.score for p in ok], "o", color="#4c72b0", label="evaluation")
        best, steps = None, []
        for p in ok:
            if best is None or (p.score > best if direction == "max" else p.score < best):
                best = p.score
            steps.append(best)
        ax.step([_m(h, p.t) for p in ok], steps, where="post", color="#55a868", label="best so far")
    for p in scored:
            ax.annotate(p.id.replace("eval-", "#"), (_m(h, p.t), p.score), textcoords="offset points",
                        xytext=(4, 4), fontsize=7)
    failed = [p for p in h.scores if not p.ok]
    if failed:
        floor = min((p.score for p in scored), default=0.0)
        ax.plot([_m(h, p.t) for p in failed], [floor] * len(failed), "x", color="#c44e52", label="failed")
    score_set = scored[0].score_set if scored else DEV
    # The reference on the same set as the points: the baseline policy's dev score beside dev scores.
    baseline = h.result.get("baseline_dev_score" if score_set == DEV else "baseline_score")
    if baseline is not None:
        ax.axhline(baseline, color="#937860", linestyle="--", label=f"baseline policy ({score_set} set)")
    _budget_marks(ax, h)
    ax.set_xlabel("minutes since the start")
    ax.set_ylabel(f"{h.snapshot.metric.get('name', 'score')}, {score_set} set ({direction} is better)")
    ax.set_title(f"Scores over time (harness records, {score_set} set)")
    if scored or failed:
        ax.legend(fontsize=8, loc="best")
    else:
        ax.text(0.5, 0.5, "no artifact was scored", transform=ax.transAxes, ha="center")
    return fig


def usage_png(h: RunHistory) -> bytes:
    """Tokens (input, cached, output) and cost per agent."""
    agents = list(h.usage_by_agent)
    fig, ax = plt.subplots(figsize=(9, 0.6 * max(len(agents), 1) + 1.6))
    left = [0.0] * len(agents)
    for key, color in (("input", "#4c72b0"), ("cache_read", "#8c8c8c"), ("cache_write", "#ccb974"),
                       ("output", "#dd8452")):
        values = [float(h.usage_by_agent[a].get(key, 0)) for a in agents]
        ax.barh(range(len(agents)), values, left=left, color=color, label=key)
        left = [a + b for a, b in zip(left, values, strict=True)]
    for y, agent in enumerate(agents):
        ax.text(left[y], y, f"  ${h.usage_by_agent[agent].get('cost_usd', 0.0):.2f}", va="center", fontsize=8)
    ax.set_yticks(range(len(agents)), agents)
    ax.set_xlabel("tokens")
    ax.set_title("Tokens and cost by agent")
    if agents:
        ax.legend(fontsize=8, loc="lower right")
    else:
        ax.text(0.5, 0.5, "no model calls (baseline policy)", transform=ax.transAxes, ha="center")
    return _png(fig)


def _budget_marks(ax, h: RunHistory) -> None:
    """The shaded scoring reserve and the budget's end, each named in the legend (a bare band explains nothing)."""
    budget_min = h.snapshot.budget_s / 60
    if budget_min:
        reserve_min = h.snapshot.reserve_s / 60
        ax.axvspan(budget_min - reserve_min, budget_min, color="#fee8c8", alpha=0.5, zorder=0,
                   label="scoring reserve")
        ax.axvline(budget_min, color="#c44e52", linewidth=1, label="budget end")


def _m(h: RunHistory, t: float) -> float:
    return (t - h.start) / 60


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()
