"""Edge LLM compression baseline: the base model in float16, compressed only as far as the limit requires.

    python baseline/compress.py --data DATA_DIR --out MODEL_DIR --budget-s SECONDS [--drop-fraction F]
                                [--sparsity S]

Converts the model to float16 (lossless for phi-2, whose weights are float16), then drops decoder layers
(those just before the last, which change the residual stream least) only until it fits data/meta.json's
memory limit with a margin. phi-2 in float16 (5.6 GB) fits 12 GB, so by default nothing is dropped and the
baseline scores exactly what the unmodified model scores. --drop-fraction and --sparsity (magnitude pruning:
zeroed weights, which a dense float16 file still stores) are there to start experiments from.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # on a shared CPU, idle OpenMP threads yield instead of spinning

import torch  # noqa: E402

from challenges.lib.recipe_io import publishing, recipe_parser  # noqa: E402

log = logging.getLogger("edge_llm_compression.baseline")
MARGIN = 0.9  # of the memory limit: room for buffers and the runtime


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = recipe_parser(__doc__)
    parser.add_argument("--sparsity", type=float, default=0.0, help="fraction of each linear weight zeroed")
    parser.add_argument("--drop-fraction", type=float, default=0.0, help="fraction of decoder layers dropped "
                        "(more are dropped if the model does not fit the limit)")
    return parser.parse_args(argv)


@torch.no_grad()
def magnitude_prune(layers: torch.nn.ModuleList, sparsity: float) -> int:
    """Zero the smallest |w| of each linear weight; return how many weights were zeroed."""
    zeroed = 0
    for module in layers.modules():
        if isinstance(module, torch.nn.Linear) and sparsity > 0:
            weight = module.weight
            k = int(sparsity * weight.numel())
            if k == 0:
                continue
            threshold = weight.abs().flatten().float().kthvalue(k).values
            mask = weight.abs() <= threshold.to(weight.dtype)
            weight[mask] = 0
            zeroed += int(mask.sum())
    return zeroed


def layers_to_drop(total: int, fraction: float) -> int:
    return min(total - 1, round(total * fraction))


def drop_layers(model, count: int) -> list[int]:
    """Remove `count` decoder layers just before the last one; renumber the rest for the KV cache."""
    layers = model.model.layers
    last = len(layers) - 1
    dropped = list(range(max(1, last - count), last))
    kept = [layer for i, layer in enumerate(layers) if i not in dropped]
    model.model.layers = torch.nn.ModuleList(kept)
    for index, layer in enumerate(kept):
        if hasattr(layer.self_attn, "layer_idx"):
            layer.self_attn.layer_idx = index
    model.config.num_hidden_layers = len(kept)
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = model.config.layer_types[: len(kept)]
    return dropped


def model_bytes(model, bytes_per_value: int = 2) -> int:
    return sum(p.numel() for p in model.parameters()) * bytes_per_value


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    args = parse_args(argv)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    meta = json.loads((args.data / "meta.json").read_text())
    limit = meta["memory_limit_bytes"] * MARGIN
    model = AutoModelForCausalLM.from_pretrained(args.data / "base_model", dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(args.data / "base_model")
    total = len(model.model.layers)
    count = layers_to_drop(total, args.drop_fraction)
    per_layer = model_bytes(model.model.layers[0])
    while count < total - 1 and model_bytes(model) - count * per_layer > limit:
        count += 1
    dropped = drop_layers(model, count) if count else []
    zeroed = magnitude_prune(model.model.layers, args.sparsity)
    model = model.to(torch.float16)
    with publishing(args.out) as staging:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
    summary = {"layers": f"{total} -> {total - len(dropped)}", "dropped": dropped, "zeroed_weights": zeroed,
               "bytes_float16": model_bytes(model), "memory_limit_bytes": meta["memory_limit_bytes"]}
    (args.out / "compression_summary.json").write_text(json.dumps(summary, indent=2))
    log.info("summary: %s", json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
