"""The MLAgentBench import on a real checkout: the per-task report, then house-price and vectorization run with the
baseline policy, our score beside upstream's reference, and a self-reported runtime scored by the harness.

    git clone https://github.com/snap-stanford/MLAgentBench /tmp/mlab
    python benchmarks/mlagentbench_import.py /tmp/mlab [--work /tmp/mlab-work]

house-price's Kaggle zip is made locally in the competition's shape (tests/fixtures/mlagentbench: train.csv with
Id first and SalePrice last, synthetic prices), so its MAE is a figure on that data, not Kaggle's. vectorization
needs numpy<2.4 and runs with --install-requirements (pip, from the package index).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from crew.run.rundir import RunDir  # noqa: E402

CLI = [sys.executable, "-c", "from crew.cli.main import main; main()"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/mlab-work"))
    args = parser.parse_args()
    from tests.fixtures.mlagentbench.trees import competition_zip

    shutil.rmtree(args.work, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "220", "RESEARCH_CREW_CACHE": str(args.work / "cache"),
           "RESEARCH_CREW_CHALLENGE_PATH": str(args.work / "challenges"),
           "RESEARCH_CREW_MEMORY_DIR": str(args.work / "memory")}
    env.pop("MLAGENTBENCH_DATA", None)
    print("## import (no MLAGENTBENCH_DATA)", flush=True)
    subprocess.run([*CLI, "challenges", "import", "mlagentbench", str(args.checkout), "--all", "--into",
                    str(args.work / "challenges")], env=env, check=True)
    competition_zip(args.work / "kaggle")
    env["MLAGENTBENCH_DATA"] = str(args.work / "kaggle")
    for task, extra in (("house-price", []), ("vectorization", ["--install-requirements"])):
        run_dir = args.work / f"run-{task}"
        print(f"\n## {task}: research-crew run {task} --model baseline --budget 30m {' '.join(extra)}", flush=True)
        subprocess.run([*CLI, "run", task, "--model", "baseline", "--budget", "30m", "--run-dir", str(run_dir), "-q",
                        *extra], env=env)
        result = json.loads(RunDir(run_dir).result.read_text())
        record = json.loads((RunDir(run_dir).evaluations / "eval-0001.json").read_text())
        print(json.dumps({k: result[k] for k in ("status", "metric", "score", "baseline_score", "reference_score",
                                                   "improvement", "success", "success_against")}))
        print("scorer details:", json.dumps(record["details"]))
    print("\n## vectorization: a hand-written submission.csv claiming 0.001 s beside the baseline's own train.py")
    claim = args.work / "claim"
    shutil.copytree(args.work / "run-vectorization" / "workspace" / "submission", claim)
    for path in claim.iterdir():
        path.chmod(0o644)
    (claim / "submission.csv").write_text("0.001")
    upstream_eval = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                                    "import eval as e; print(e.get_score(sys.argv[2]))",
                                    str(args.work / "challenges" / "vectorization" / "upstream" / "scripts"),
                                    str(claim)], capture_output=True, text=True)
    print("upstream eval.py get_score:", upstream_eval.stdout.strip())
    from challenges.framework.api import ScoreContext
    from challenges.framework.data import prepare_data
    from challenges.framework.harness import evaluate
    from challenges.framework.loader import load_challenge
    from challenges.framework.score_sandbox import REQUIREMENTS_VARIABLE

    os.environ.update({k: v for k, v in env.items() if k.startswith("RESEARCH_CREW")})
    requirements = _requirements_env(args.work / "run-vectorization")
    os.environ["PYTHONPATH"] = os.pathsep.join([requirements, str(ROOT)])
    os.environ[REQUIREMENTS_VARIABLE] = requirements  # the sandboxed scorer (python -I) reads this one
    challenge = load_challenge(args.work / "challenges" / "vectorization")
    data = prepare_data(challenge, "full")
    ctx = ScoreContext(challenge="vectorization", preset="full", data_dir=data.data_dir,
                       private_dir=data.private_dir, scratch_dir=args.work / "scratch", time_limit_s=600)
    record = evaluate(challenge, claim, ctx, args.work / "claim-evaluations")
    print(f"research-crew harness: ok={record.ok} score={record.score} details={json.dumps(record.details)}")


def _requirements_env(run_dir: Path) -> str:
    """The folder `run --install-requirements` installed into, from the run's run.toml."""
    import tomllib

    return tomllib.loads(RunDir(run_dir).run_toml.read_text())["requirements_env"]


if __name__ == "__main__":
    main()
