"""The ledger: the harness's evaluation records of this run, and the check of numbers agents cite."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from challenges.framework.harness import Evaluation, best_evaluation, frozen_intact, load_evaluations
from challenges.framework.spec import Challenge
from checkpoints import atomic_write_json
from crew.run.reference import Baseline, baseline

NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(%?)")
METRIC_WORDS = ("score", "accuracy", "acc", "superglue", "mmlu", "blimp", "bleu", "rouge", "metric", "result",
                "improv", "achiev", "reach", "eval")
# A number is a claimed result when its clause (up to ; or a sentence end) names a metric.
CLAUSE_END = re.compile(r"[;\n!?]|\.(?=\s|$)")


@dataclass
class Claim:
    value: str
    context: str


def agent_reason(record: Evaluation) -> str:
    """Why an evaluation failed, as an agent may read it: rule violations, a refused artifact, a time limit or
    a crash, but never the scorer's own exception text or a host path (the scorer reads private data, and
    its error message could quote it)."""
    if record.violations:
        return "; ".join(record.violations)
    if record.timed_out or record.error.startswith(("artifact refused:", "artifact ")) and "scorer" not in record.error:
        return record.error
    if record.error.startswith("scorer raised "):
        kind = record.error.removeprefix("scorer raised ").split(":", 1)[0]
        return f"the scorer could not score this artifact ({kind}); check its format against the task description"
    return "the scorer did not return a score for this artifact; check its format against the task description"


def experiment_row(r: Evaluation, baseline: Baseline | None = None, blind: bool = False) -> str:
    e = r.experiment
    outcome = ("scored (blind: no score shown)" if blind else f"score {r.score:.4f}") if r.ok \
        else f"FAILED: {agent_reason(r)[:80]}"
    if r.ok and not blind and baseline is not None and baseline.within_dev_noise(r.score):
        outcome += " (within baseline noise)"
    link = f"{e.get('kind', 'draft')}" + (f" of {e['parent']}" if e.get("parent") else "")
    text = f"- {r.id} [{link}] {outcome} ({Path(r.artifact).name})"
    if e.get("hypothesis"):
        text += f" — {e['hypothesis'][:100]}"
    if e.get("lesson"):
        text += f" — lesson: {e['lesson'][:120]}"
    return text


class Ledger:
    def __init__(self, evaluations_dir: Path, challenge: Challenge) -> None:
        self.dir, self.challenge = Path(evaluations_dir), challenge

    def records(self) -> list[Evaluation]:
        return load_evaluations(self.dir)

    def get(self, evaluation_id: str) -> Evaluation | None:
        return next((r for r in self.records() if r.id == evaluation_id.strip()), None)

    def best(self) -> Evaluation | None:
        return best_evaluation(self.records(), self.challenge)

    def checked_submission(self, chosen: Evaluation) -> tuple[Evaluation | None, str]:
        """The record to submit: `chosen` if its frozen copy still has the hash it was scored with, else the best
        other record whose copy does; with a note saying why it changed."""
        if frozen_intact(chosen):
            return chosen, ""
        ranked = sorted((r for r in self.records() if r.ok and r.id != chosen.id and r.score is not None),
                        key=lambda r: r.score, reverse=self.challenge.metric.direction == "max")
        replacement = next((r for r in ranked if frozen_intact(r)), None)
        note = (f"{chosen.id}'s frozen copy no longer matches the sha256 it was scored with; "
                + (f"submitted {replacement.id} instead" if replacement else "no intact record to submit"))
        return replacement, note

    def annotate(self, record: Evaluation, facts: dict[str, Any]) -> None:
        """Add experiment facts (hypothesis, parent, commit, lesson, ...) to a record and save it again."""
        record.experiment = {**record.experiment, **facts}
        atomic_write_json(self.dir / f"{record.id}.json", asdict(record))

    def summary(self, last: int = 8) -> str:
        """The experiment table: the best, the latest and the failed count, each row with its parent link."""
        records = self.records()
        if not records:
            return "No evaluations yet."
        best = self.best()
        failed = [r for r in records if not r.ok]
        blind = self.challenge.blind
        if blind:  # which record is best would say something of the scores: neither is shown
            lines = [f"{len(records)} experiment(s), {len(failed)} failed (blind challenge: no scores shown)"]
        else:
            lines = [f"{len(records)} experiment(s), {len(failed)} failed; best: "
                     + (f"{best.id} score {best.score:.4f}" if best else "none succeeded")]
        shown = records[-last:]
        if best is not None and best not in shown and not blind:
            shown.insert(0, best)
        found = baseline(self.challenge.name, records[-1].preset, self.challenge.metric.name)
        lines += [experiment_row(r, found, blind) for r in shown]
        return "\n".join(lines)

    def unverified_claims(self, text: str) -> list[Claim]:
        """Numbers cited as results that match no evaluation record's score (as a fraction or a percent)."""
        known = [r.score for r in self.records() if r.score is not None]
        words = METRIC_WORDS + (self.challenge.metric.name.lower(),)
        claims = []
        bounds = [0] + [m.end() for m in CLAUSE_END.finditer(text)] + [len(text)]
        for match in NUMBER.finditer(text):
            start = max(b for b in bounds if b <= match.start())
            end = min(b for b in bounds if b >= match.end())
            clause = text[start:end].lower()
            if not any(w in clause for w in words):
                continue
            raw, percent = match.group(1), match.group(2)
            value = float(raw) / (100 if percent else 1)
            if "." not in raw and not percent:
                continue  # whole numbers are steps, sizes, counts: not metric values
            decimals = len(raw.split(".")[1]) if "." in raw else 0
            tolerance = 0.5 * 10 ** -(decimals + (2 if percent else 0)) + 1e-9
            if not any(abs(value - k) <= tolerance for k in known):
                claims.append(Claim(raw + percent, text[start:end].strip()))
        return claims
