"""Experiment 0's share of the budget (crew/policy/floor.py) on every built-in challenge's smoke preset and on the full
MiniPile preset, from the sizing alone: the recipe's training budget, and the most its job may take (that budget
plus the grace after SIGTERM), each as a share of the preset's own budget. Scoring it (at most the preset's
score_minutes) runs beside the crew.

    python benchmarks/floor_share.py
"""

from __future__ import annotations

from challenges.framework.loader import challenge_folders, load_challenge
from crew.policy.baseline import STOP_GRACE_S
from crew.policy.floor import floor_budget_s
from crew.run.durations import format_duration


def rows() -> list[tuple[str, str, float, float, float]]:
    found = []
    for name in sorted(challenge_folders()):
        challenge = load_challenge(name)
        if not challenge.baseline_command:
            continue
        for preset_name, preset in challenge.presets.items():
            if preset_name == "smoke" or (challenge.name == "minipile" and preset_name == "full"):
                found.append((challenge.name, preset_name, preset.budget_s, floor_budget_s(preset.budget_s),
                              preset.score_minutes * 60))
    return found


def main() -> None:
    print(f"{'challenge':24} {'preset':6} {'budget':>8} {'recipe':>8} {'share':>6} {'at most':>8} {'share':>6} "
          f"{'scoring':>8}")
    for challenge, preset, budget, recipe, scoring in rows():
        most = min(budget, recipe + STOP_GRACE_S)
        print(f"{challenge:24} {preset:6} {format_duration(budget):>8} {format_duration(recipe):>8} "
              f"{recipe / budget:>6.1%} {format_duration(most):>8} {most / budget:>6.1%} {format_duration(scoring):>8}")


if __name__ == "__main__":
    main()
