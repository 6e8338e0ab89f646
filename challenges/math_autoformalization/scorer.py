"""Autoformalization: predictions.jsonl must cover the test set; BLEU and ROUGE-L, and the compile rate.

The headline (text overlap) is reported as a partial score before Lean runs, so a compile check cut short by
the scoring time limit still leaves a recorded score.
"""

import json
import time
from pathlib import Path

from lean_check import LEAN_RANGE, PROJECT_VARIABLE, compile_items, find_toolchain

from challenges import EnvironmentCheck, Score, ScoreContext
from challenges.lib.generation import bleu, rouge_l
from challenges.lib.lm_tasks import read_jsonl

PREDICTIONS = "predictions.jsonl"


def check(submission: Path, ctx: ScoreContext) -> list[str]:
    file = submission / PREDICTIONS if submission.is_dir() else submission
    if not file.is_file():
        return [f"{PREDICTIONS} is missing from the submission: write one line "
                '{"id": ..., "formal_statement": ...} per item of data/test.jsonl']
    rows = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            return [f"{PREDICTIONS} line {number} is not JSON: {err.msg}"]
    bad = [i + 1 for i, r in enumerate(rows) if not isinstance(r.get("formal_statement"), str) or "id" not in r]
    if bad:
        return [f"{PREDICTIONS} lines {bad[:5]} lack an id or a formal_statement string"]
    wanted = {r["id"] for r in read_jsonl(ctx.data_dir / "test.jsonl")}
    missing = wanted - {r["id"] for r in rows}
    return [f"{len(missing)} test item(s) have no prediction, e.g. {sorted(missing)[:3]}"] if missing else []


def score(submission: Path, ctx: ScoreContext) -> Score:
    deadline = time.monotonic() + 0.85 * ctx.time_limit_s  # the rest of the limit: writing the result
    file = submission / PREDICTIONS if submission.is_dir() else submission
    predicted = {r["id"]: r["formal_statement"] for r in read_jsonl(file)}
    references = read_jsonl(ctx.private_dir / "references.jsonl")
    predictions = [predicted[r["id"]] for r in references]
    truth = [r["formal_statement"] for r in references]
    bleu_score, rouge = bleu(predictions, truth), rouge_l(predictions, truth)
    # The headline is text overlap, available everywhere; the compile rate is recorded beside it when a Lean
    # toolchain is present, so that scores stay comparable between machines with and without one.
    details = {"bleu": bleu_score, "rougeL": rouge, "items": len(references)}
    headline = (bleu_score / 100 + rouge) / 2
    ctx.report_partial(Score(headline, {**details, "compile_rate": None,
                                        "compile_check": "not finished before the scoring time limit"}))
    return Score(headline, {**details, **compile_details(predictions, [r["header"] for r in references], deadline)})


def compile_details(predictions: list[str], headers: list[str], deadline: float) -> dict:
    """The share of predictions that compile, among those checked, and how they were checked (or why not)."""
    toolchain = find_toolchain(any("Mathlib" in h for h in headers))
    if toolchain is None:
        return {"compile_rate": None, "compile_check": f"unavailable: no Lean toolchain (lake with "
                                                       f"{PROJECT_VARIABLE}, or lean) on PATH"}
    verdicts = compile_items(predictions, headers, toolchain, deadline)  # items not done by then stay unchecked
    checked = [v for v in verdicts if v is not None]
    note = "" if toolchain.supported else f" (outside ProofNet#'s Lean {LEAN_RANGE[0]} to {LEAN_RANGE[1]})"
    return {"compile_rate": sum(checked) / len(checked) if checked else None, "compiled_checked": len(checked),
            "compile_check": toolchain.describe() + note}


def environment_checks(preset: str) -> list[EnvironmentCheck]:
    """For `research-crew doctor`: the Lean toolchain, its version against ProofNet#'s range, and Mathlib."""
    toolchain = find_toolchain(needs_mathlib=preset != "smoke")
    wanted = f"Lean {LEAN_RANGE[0]} to {LEAN_RANGE[1]}" + (" with Mathlib" if preset != "smoke" else "")
    if toolchain is None:
        return [EnvironmentCheck("Lean", "warn", f"no toolchain for {wanted}: the compile rate (a detail beside the "
                                 "score) will be reported as unavailable",
                                 f"install elan, build a Mathlib project for a Lean version in that range and set "
                                 f"{PROJECT_VARIABLE} to it" + ("" if preset != "smoke" else ", or put lean on PATH"))]
    if not toolchain.supported:
        return [EnvironmentCheck("Lean", "warn", f"{toolchain.describe()} is outside {wanted} that ProofNet# "
                                 "states; some statements may not compile for that reason alone",
                                 "use a Lean toolchain (and the Mathlib tag of the same version) in that range")]
    if preset != "smoke" and toolchain.mathlib is None:
        return [EnvironmentCheck("Lean", "warn", f"{toolchain.describe()}: no Mathlib in the project's manifest",
                                 "add Mathlib to the project (lake-manifest.json) and build it")]
    return [EnvironmentCheck("Lean", "ok", f"{toolchain.describe()}, within {wanted}")]
