"""Autoformalization: predictions.jsonl must cover the test set; BLEU and ROUGE-L, and the compile rate."""

import json
from pathlib import Path

from lean_check import compile_rate

from challenges import Score, ScoreContext
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
    file = submission / PREDICTIONS if submission.is_dir() else submission
    predicted = {r["id"]: r["formal_statement"] for r in read_jsonl(file)}
    references = read_jsonl(ctx.private_dir / "references.jsonl")
    predictions = [predicted[r["id"]] for r in references]
    truth = [r["formal_statement"] for r in references]
    bleu_score, rouge = bleu(predictions, truth), rouge_l(predictions, truth)
    rate, how = compile_rate(predictions, [r["header"] for r in references])
    # The headline is text overlap, available everywhere; the compile rate is recorded beside it when a Lean
    # toolchain is present, so that scores stay comparable between machines with and without one.
    return Score((bleu_score / 100 + rouge) / 2, {"bleu": bleu_score, "rougeL": rouge, "compile_rate": rate,
                                                  "compile_check": how, "items": len(references)})
