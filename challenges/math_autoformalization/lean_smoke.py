"""Generated natural-language / Lean 4 statement pairs for the smoke preset (core Lean only, no Mathlib)."""

from __future__ import annotations

import random

VARIABLES = ["a", "b", "c", "m", "n", "x", "y", "k"]
# (natural-language template, Lean statement template); {u} {v} {w} are variables, {k} a constant.
TEMPLATES = [
    ("For every natural number {u}, {u} + {k} = {k} + {u}.", "({u} : Nat) : {u} + {k} = {k} + {u}"),
    ("For all natural numbers {u} and {v}, {u} + {v} = {v} + {u}.", "({u} {v} : Nat) : {u} + {v} = {v} + {u}"),
    ("For all natural numbers {u} and {v}, {u} * {v} = {v} * {u}.", "({u} {v} : Nat) : {u} * {v} = {v} * {u}"),
    ("For every natural number {u}, {u} * {k} = {k} * {u}.", "({u} : Nat) : {u} * {k} = {k} * {u}"),
    ("If {u} is at most {v}, then {u} is at most {v} + {w}.",
     "({u} {v} {w} : Nat) (h : {u} ≤ {v}) : {u} ≤ {v} + {w}"),
    ("For every natural number {u}, {u} is less than {u} + {k} + 1.", "({u} : Nat) : {u} < {u} + {k} + 1"),
    ("For all natural numbers {u}, {v} and {w}, ({u} + {v}) + {w} = {u} + ({v} + {w}).",
     "({u} {v} {w} : Nat) : ({u} + {v}) + {w} = {u} + ({v} + {w})"),
    ("If {u} equals {v}, then {v} equals {u}.", "({u} {v} : Nat) (h : {u} = {v}) : {v} = {u}"),
]


def smoke_pairs(count: int, seed: int, prefix: str) -> list[dict[str, str]]:
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        text, lean = rng.choice(TEMPLATES)
        u, v, w = rng.sample(VARIABLES, 3)
        fill = {"u": u, "v": v, "w": w, "k": str(rng.randint(0, 12))}
        rows.append({"id": f"{prefix}_{index}", "nl_statement": text.format(**fill), "header": "",
                     "formal_statement": f"theorem {prefix}_{index} {lean.format(**fill)}"})
    return rows
