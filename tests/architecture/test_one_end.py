"""How a run ends is decided in one place: the runner settles the submission and the exit code for any policy,
and never asks which policy it holds (what differs is on the Policy protocol, crew/policy/protocol.py)."""

from __future__ import annotations

import ast
from pathlib import Path

RUNNER = Path(__file__).resolve().parents[2] / "crew" / "policy" / "runner.py"
# From the moment a policy is made, the runner works with the protocol only.
AFTER_THE_POLICY_IS_MADE = ("_run_policy", "_execute", "_settle_submission", "exit_code_of", "_pick_submission")


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name)


def test_the_runner_has_no_branch_on_which_policy_it_holds():
    tree = ast.parse(RUNNER.read_text())
    for name in AFTER_THE_POLICY_IS_MADE:
        for node in ast.walk(_function(tree, name)):
            assert not (isinstance(node, ast.Name) and node.id in ("BaselinePolicy", "CrewPolicy", "getattr",
                                                                    "isinstance")), (name, node.id)
            assert not (isinstance(node, ast.Constant) and node.value == "baseline"), name
            assert not (isinstance(node, ast.Attribute) and node.attr == "model"), (name, "config.model")


def test_the_best_record_fallback_and_the_exit_code_are_written_once():
    source = "\n".join(p.read_text() for p in (RUNNER.parent).glob("*.py"))
    assert source.count(".best()") == 1  # the runner's _settle_submission
    assert source.count("EXIT_INTERRUPTED if") + source.count("return EXIT_INTERRUPTED") == 1
