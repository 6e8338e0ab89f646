"""A second process for the memory tests (not a test module): writes to a store, then exits.

usage: python memory_proc.py restart RUN_DIR GLOBAL_DIR OUT_JSON
       python memory_proc.py write RUN_DIR GLOBAL_DIR TAG COUNT GO_FILE OUT_JSON
"""

import json
import sys
import time
from pathlib import Path

from memory import Memory, load_embedder

TOPICS = [
    "learning rate warmup",
    "dropout in the attention layers",
    "a larger batch size",
    "rotary position embeddings",
    "label smoothing",
    "gradient clipping",
    "weight decay",
    "mixed precision",
]


def restart(run_dir: str, global_dir: str, out: str) -> None:
    with Memory(Path(run_dir), run_id="run-first", challenge="minipile", preset="smoke", global_dir=global_dir) as mem:
        p = mem.propose("Switching the learning rate schedule to cosine decay will lower the final validation loss.")
        mem.record_outcome(
            p.hypothesis.id,
            {"id": "ev-1", "path": "evaluations/ev-1.json", "score": 0.62, "best_before": 0.64},
        )
        mem.log_step("Tried a cosine schedule: worse by 3.1%.")
    Path(out).write_text(json.dumps({"id": p.hypothesis.id}))


def write(run_dir: str, global_dir: str, tag: str, count: int, go_file: str, out: str) -> None:
    load_embedder()  # load before the start signal so that both writers really overlap
    mem = Memory(Path(run_dir), run_id=f"run-{tag}", challenge="minipile", preset="smoke", global_dir=global_dir)
    Path(f"{go_file}.ready-{tag}").touch()
    deadline = time.monotonic() + 120
    while not Path(go_file).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    ids = []
    for i in range(count):
        topic = TOPICS[i % len(TOPICS)]
        p = mem.propose(f"[{tag} #{i}] Trying {topic} (variant {i}) will lower the validation loss.")
        mem.record_outcome(p.hypothesis.id, {"id": f"{tag}-ev-{i}", "score": 1.0 + i, "best_before": 1.0})
        ids.append(p.hypothesis.id)
    mem.close()
    Path(out).write_text(json.dumps({"ids": ids}))


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "restart":
        restart(*args)
    else:
        run_dir, global_dir, tag, count, go_file, out = args
        write(run_dir, global_dir, tag, int(count), go_file, out)
