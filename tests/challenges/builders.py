"""Small model folders and score contexts that the challenge tests build (tiny, random, on disk)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from challenges.framework.api import ScoreContext
from challenges.framework.loader import load_challenge, load_module
from challenges.lib.tiny_models import save_model, smoke_tokenizer, tiny_causal_lm


@cache
def _tokenizer(folder: str):
    return smoke_tokenizer(Path(folder))


def tiny_model(folder: Path, architecture: str = "phi", layers: int = 2, seed: int = 0,
               tokenizer_dir: Path | None = None) -> Path:
    """A tiny random causal LM with a tokenizer, saved as a Hugging Face folder."""
    tokenizer = _tokenizer(str(tokenizer_dir or folder.parent / "_tokenizer"))
    model = tiny_causal_lm(architecture, len(tokenizer), tokenizer.eos_token_id, seed=seed, layers=layers)
    return save_model(model, tokenizer, folder)


def context(tmp: Path, challenge: str, preset: str = "smoke", meta: dict | None = None) -> ScoreContext:
    """A ScoreContext over tmp/data and tmp/private, with data/meta.json when given."""
    ctx = ScoreContext(challenge=challenge, preset=preset, data_dir=tmp / "data", private_dir=tmp / "private",
                       scratch_dir=tmp / "scratch", challenge_dir=load_challenge(challenge).directory)
    for folder in (ctx.data_dir, ctx.private_dir, ctx.scratch_dir):
        folder.mkdir(parents=True, exist_ok=True)
    if meta is not None:
        (ctx.data_dir / "meta.json").write_text(json.dumps(meta))
    return ctx


def challenge_module(challenge: str, file: str = "scorer.py"):
    """A built-in challenge's scorer (or another of its files), imported as the harness does."""
    folder = load_challenge(challenge).directory
    return load_module(folder / file, f"test_{challenge}_{file.replace('/', '_').removesuffix('.py')}")


def quantize_fixture(folder: Path) -> Path:
    """Turn a saved model folder into an 8-bit-quantized-looking one: int8 tensors and a quantization_config."""
    import torch
    from safetensors.torch import load_file, save_file

    weights = folder / "model.safetensors"
    tensors = {k: (v * 100).clamp(-127, 127).to(torch.int8) if v.dim() == 2 else v
               for k, v in load_file(weights).items()}
    save_file(tensors, weights, metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_8bit": True}
    (folder / "config.json").write_text(json.dumps(config))
    return folder
