"""A run starts in seconds: what it does not use, it does not import (each of these takes seconds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "anthropic", "openai", "sentence_transformers", "transformers")
PROBE = """
import json, sys
import crew.cli.main, crew.policy.runner, crew.policy.crew_policy
from crew.policy.crew_policy import build_clients
from crew.run.devices import gpu_count
from crew.agent.specs import parse_spec
from crew.run.trace import Trace
gpus = gpu_count()
build_clients(parse_spec(sys.argv[1]), parse_spec(sys.argv[1]), Trace(sys.argv[2]))
print(json.dumps({"gpus": gpus, "loaded": [m for m in sys.argv[3].split(",") if m in sys.modules]}))
"""


def test_a_replayed_run_on_a_machine_without_gpus_imports_no_sdk_torch_or_embedding_model(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text("supervisor: []\n")
    if Path("/dev/nvidiactl").exists() or Path("/dev/kfd").exists():
        pytest.skip("a GPU driver is present: gpu_count rightly imports torch")
    done = subprocess.run([sys.executable, "-c", PROBE, f"replay:{script}", str(tmp_path / "trace.jsonl"),
                           ",".join(HEAVY)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"gpus": 0, "loaded": []}
