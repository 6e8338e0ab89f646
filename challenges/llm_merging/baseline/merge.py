"""LLM merging baseline: the uniform average of the experts' weights, tensor by tensor. No training.

    python baseline/merge.py --data DATA_DIR --out MODEL_DIR --budget-s SECONDS [--experts A,B]

Streams one safetensors shard at a time (accumulating in float32, saving in the first expert's dtypes), so
memory stays near one shard per expert; config and tokenizer come from the first expert.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # on a shared CPU, idle OpenMP threads yield instead of spinning

import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from challenges.lib.recipe_io import publishing, recipe_parser  # noqa: E402

log = logging.getLogger("llm_merging.baseline")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = recipe_parser(__doc__)
    parser.add_argument("--experts", help="comma-separated names under data/experts; default: all")
    return parser.parse_args(argv)


def key_locations(folder: Path) -> dict[str, Path]:
    locations = {}
    for file in sorted(folder.glob("*.safetensors")):
        with safe_open(file, "pt") as handle:
            locations.update({key: file for key in handle.keys()})  # noqa: SIM118 - not a dict
    return locations


def average_into(experts: list[Path], out: Path, weights: list[float]) -> None:
    """Write out/<shard> for each shard of the first expert, every tensor the weighted mean across experts."""
    others = [key_locations(e) for e in experts[1:]]
    for shard in sorted(experts[0].glob("*.safetensors")):
        merged = {}
        with safe_open(shard, "pt") as first:
            metadata = first.metadata()
            for key in first.keys():  # noqa: SIM118 - not a dict
                tensor = first.get_tensor(key)
                total = tensor.float() * weights[0]
                for weight, locations in zip(weights[1:], others, strict=True):
                    with safe_open(locations[key], "pt") as handle:
                        total += handle.get_tensor(key).float() * weight
                merged[key] = total.to(tensor.dtype).contiguous()
        save_file(merged, out / shard.name, metadata=metadata or {"format": "pt"})


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    args = parse_args(argv)
    root = args.data / "experts"
    names = args.experts.split(",") if args.experts else sorted(p.name for p in root.iterdir() if p.is_dir())
    experts = [root / name for name in names]
    weights = [1.0 / len(experts)] * len(experts)
    with publishing(args.out) as staging, torch.no_grad():
        average_into(experts, staging, weights)
        for file in experts[0].iterdir():  # config, generation config, index and tokenizer files
            if file.is_file() and file.suffix != ".safetensors":
                shutil.copy(file, staging / file.name)
        (staging / "merge.json").write_text(json.dumps({"experts": names, "method": "uniform average",
                                                        "weights": weights}, indent=2))
    log.info("merged %s with weights %s into %s", names, weights, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
