"""Hub access through the real huggingface_hub client, against a local stand-in for huggingface.co.

Each case goes through `prepare` and through `research-crew doctor` (and `run`'s preflight): a good model
and a good (parquet) dataset, a dataset that is only a loading script, a gated model, a missing revision,
a model uploaded after a challenge's date limit, and no network. The client reads HF_ENDPOINT when it is
imported, so every case runs in a fresh process pointed at the local server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.challenges.builders import tiny_model
from tests.challenges.hub_server import FakeHub

CLI = shutil.which("research-crew")
ROOT = Path(__file__).resolve().parents[2]

TOML = """\
name = "{name}"
title = "hub access test"

[metric]
name = "rows"
direction = "max"

[submission]
description = "anything"

[presets.full]
hours = 1
gpus = 0
disk_gb = 0.01
download_gb = 0.01
"""

PREPARE = """\
import json

from challenges.lib.hub import HubDataset, HubModel, Sources, fetch_dataset, fetch_model, read_rows

SOURCES = {{"full": Sources(models=({models}), datasets=({datasets}), lm_eval_tasks=({tasks}))}}


def prepare(ctx):
    sources = SOURCES[ctx.preset]
    for index, model in enumerate(sources.models):
        fetch_model(model, ctx.data_dir / f"model{{index}}")
    rows = [row for dataset in sources.datasets for row in read_rows(fetch_dataset(dataset, ctx.scratch_dir / "d"))]
    (ctx.data_dir / "rows.json").write_text(json.dumps(rows))
"""

GOOD_MODEL = 'HubModel("research-crew-test/tiny-qwen2", uploaded_before="2024-05-31", max_parameters=10**9),'
GOOD_DATA = ('HubDataset("research-crew-test/parquet-good", files=("data/train-*.parquet",)), '
             'HubDataset("research-crew-test/converted", revision="refs/convert/parquet", '
             'files=("default/train/*.parquet",)),')
CASES = {
    "good": (GOOD_MODEL, GOOD_DATA),
    "script": ("", 'HubDataset("research-crew-test/script-only", files=("data/*.parquet",)),'),
    "gated": ('HubModel("research-crew-test/gated-llm"),', ""),
    "revision": ('HubModel("research-crew-test/tiny-qwen2", revision="v9.9"),', ""),
    "late": ('HubModel("research-crew-test/late-model", uploaded_before="2024-05-31"),', ""),
}

RUN_PREPARES = """\
import json, sys
from challenges.framework.api import ChallengeError
from challenges.framework.data import prepare_data
from challenges.framework.loader import load_challenge

results = {}
for folder in sys.argv[1:]:
    try:
        data = prepare_data(load_challenge(folder), "full")
        results[folder] = {"rows": json.loads((data.data_dir / "rows.json").read_text()),
                           "files": sorted(str(p.relative_to(data.data_dir)) for p in data.data_dir.rglob("*"))}
    except ChallengeError as err:
        results[folder] = {"message": err.message, "hint": err.hint, "reason": getattr(err, "reason", "")}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def content(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hub_content")
    tiny_model(root / "tiny-qwen2", architecture="qwen2", layers=1, tokenizer_dir=root / "tokenizer")
    for folder, path, values in (("parquet-good", "data/train-00000-of-00001.parquet", ["alpha", "beta"]),
                                 ("converted-parquet", "default/train/0000.parquet", ["gamma"])):
        (root / folder / path).parent.mkdir(parents=True)
        pq.write_table(pa.table({"text": values, "label": list(range(len(values)))}), root / folder / path)
    return {name: root / name for name in ("tiny-qwen2", "parquet-good", "converted-parquet")}


@pytest.fixture
def hub(content):
    server = FakeHub(content)
    yield server
    server.close()
    assert server.unexpected == [], server.unexpected  # the client asked only for what the hub serves


def _env(tmp_path: Path, endpoint: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE"))}
    return {**env, "HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "hf_home"), "COLUMNS": "400",
            "PYTHONPATH": str(ROOT), **extra}


def _challenge(root: Path, name: str, models: str, datasets: str, tasks: str = "") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "challenge.toml").write_text(TOML.format(name=name))
    (folder / "task.md").write_text("Count rows.\n")
    (folder / "scorer.py").write_text("from challenges import Score\n\ndef score(submission, ctx):\n"
                                      "    return Score(1.0)\n")
    (folder / "prepare.py").write_text(PREPARE.format(models=models, datasets=datasets, tasks=tasks))
    return folder


def test_prepare_downloads_a_good_repository_and_explains_every_failure(hub, tmp_path):
    folders = {case: _challenge(tmp_path / "challenges", f"hub-{case}", *sources) for case, sources in CASES.items()}
    proc = subprocess.run([sys.executable, "-c", RUN_PREPARES, *map(str, folders.values())], capture_output=True,
                          text=True, timeout=300, env=_env(tmp_path, hub.url), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {case: json.loads(proc.stdout)[str(folder)] for case, folder in folders.items()}

    good = results["good"]
    assert "rows" in good, good
    assert [row["text"] for row in good["rows"]] == ["alpha", "beta", "gamma"]
    assert {"model0/config.json", "model0/model.safetensors", "model0/tokenizer.json"} <= set(good["files"])
    assert not any(".cache" in f for f in good["files"])  # the client's download metadata is not left behind

    script = results["script"]
    assert script["reason"] == "script" and "research-crew-test/script-only" in script["message"]
    assert "loading script" in script["message"] and "refs/convert/parquet" in script["hint"]

    gated = results["gated"]
    assert gated["reason"] == "gated" and "research-crew-test/gated-llm" in gated["message"]
    assert "accept the terms" in gated["hint"] and "HF_TOKEN" in gated["hint"]

    revision = results["revision"]
    assert revision["reason"] == "revision" and "no revision 'v9.9'" in revision["message"]
    assert "research-crew-test/tiny-qwen2" in revision["message"]

    late = results["late"]
    assert late["reason"] == "rule" and "uploaded on 2024-09-18, not before 2024-05-31" in late["message"]
    # Nothing was downloaded for a refused repository: only metadata and access checks were asked.
    downloads = [path for method, path, _ in hub.requests if "/resolve/" in path or path.startswith("/cdn/")]
    assert downloads and not any("gated-llm" in p or "late-model" in p or "script-only" in p for p in downloads)


def test_doctor_reports_each_repository_with_its_verdict_and_fix(hub, tmp_path):
    folder = _challenge(tmp_path, "hub-doctor",
                        GOOD_MODEL + 'HubModel("research-crew-test/gated-llm"), '
                                     'HubModel("research-crew-test/tiny-qwen2", revision="v9.9"),',
                        GOOD_DATA + 'HubDataset("research-crew-test/script-only", files=("data/*.parquet",)),',
                        tasks='"mmlu",')
    proc = subprocess.run([CLI, "doctor", str(folder), "--preset", "full"], capture_output=True, text=True,
                          timeout=300, env=_env(tmp_path, hub.url, RESEARCH_CREW_CACHE=str(tmp_path / "cache")))
    rows = _rows(proc.stdout)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert rows["model research-crew-test/tiny-qwen2"][0] == "ok"  # the good one (first of the two rows)
    assert "uploaded 2024-02-05" in rows["model research-crew-test/tiny-qwen2"][1]
    assert rows["model research-crew-test/gated-llm"][0] == "fail"
    assert "accept the terms" in rows["model research-crew-test/gated-llm"][2]
    assert rows["dataset research-crew-test/script-only"][0] == "fail"
    assert "refs/convert/parquet" in rows["dataset research-crew-test/script-only"][2]
    assert rows["dataset research-crew-test/converted"][0] == "ok"
    assert rows["lm-eval tasks"][0] == "ok" and "cais/mmlu" in rows["lm-eval tasks"][1]
    assert rows["lm-eval dataset cais/mmlu"][0] == "ok"
    assert rows["GPU"][0] == "ok" and rows["sandbox"][0] in ("ok", "fail")
    revision_rows = [line for line in proc.stdout.splitlines() if "no revision 'v9.9'" in line]
    assert revision_rows and "fail" in revision_rows[0]


def test_doctor_with_a_token_that_has_access_passes_the_gated_model(hub, tmp_path):
    folder = _challenge(tmp_path, "hub-gated", 'HubModel("research-crew-test/gated-llm"),', "")
    env = _env(tmp_path, hub.url, HF_TOKEN=hub.granted_token, RESEARCH_CREW_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run([CLI, "doctor", str(folder), "--preset", "full"], capture_output=True, text=True,
                          timeout=300, env=env)
    row = _rows(proc.stdout)["model research-crew-test/gated-llm"]
    assert row[0] == "ok" and "gated: this token has access" in row[1], proc.stdout
    download = _rows(proc.stdout)["download size"]
    assert download[0] == "warn" and "14.49 GB to download, stated 0.01 GB" in download[1]


def test_run_refuses_a_preset_that_cannot_prepare(hub, tmp_path):
    folder = _challenge(tmp_path, "hub-run", 'HubModel("research-crew-test/gated-llm"),', "")
    env = _env(tmp_path, hub.url, RESEARCH_CREW_CACHE=str(tmp_path / "cache"), RESEARCH_CREW_RUNS=str(tmp_path))
    refused = subprocess.run([CLI, "run", str(folder), "--model", "baseline"], capture_output=True, text=True,
                             timeout=300, env=env)
    assert refused.returncode == 2 and "cannot prepare the preset" in refused.stderr
    assert "accept the terms" in refused.stderr and "--skip-checks" in refused.stderr
    assert not (tmp_path / "cache" / "data").exists()  # refused before preparing anything


def test_no_network_is_named_as_such(tmp_path):
    folder = _challenge(tmp_path, "hub-offline", GOOD_MODEL, "")
    proc = subprocess.run([sys.executable, "-c", RUN_PREPARES, str(folder)], capture_output=True, text=True,
                          timeout=120, env=_env(tmp_path, "http://127.0.0.1:9"))  # nothing listens on port 9
    result = json.loads(proc.stdout)[str(folder)]
    assert result["reason"] == "network" and "looks offline" in result["message"]
    assert "--preset smoke" in result["hint"]


def _rows(table: str) -> dict[str, tuple[str, str, str]]:
    """check name -> (verdict, found, fix) from the doctor's table (the first row of each name)."""
    rows: dict[str, tuple[str, str, str]] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 4 and cells[0] and cells[0] not in rows and cells[0] != "check":
            rows[cells[0]] = (cells[1], cells[2], cells[3])
    return rows


def test_fixture_challenge_is_valid(tmp_path):
    from challenges.framework.validator import validate

    folder = _challenge(tmp_path, "hub-valid", GOOD_MODEL, GOOD_DATA)
    assert validate(folder)[1] == []
