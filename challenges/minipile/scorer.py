"""MiniPile scoring: rule checks on the model folder, then SuperGLUE mean accuracy through lm-eval."""

import json
from pathlib import Path

from challenges import Score, ScoreContext
from challenges.superglue import score_superglue

WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json")


def check(submission: Path, ctx: ScoreContext) -> list[str]:
    if not submission.is_dir():
        return [f"{submission} is not a directory; submit a Hugging Face model directory (save_pretrained)"]
    problems = []
    config_path = submission / "config.json"
    if not config_path.is_file():
        problems.append("config.json is missing: save the model with model.save_pretrained(dir)")
    else:
        config = json.loads(config_path.read_text())
        if "auto_map" in config:
            problems.append("config.json uses auto_map (remote code); use an architecture transformers ships")
        if not any(a.endswith("ForCausalLM") or a.endswith("LMHeadModel") for a in config.get("architectures", [])):
            problems.append(f"architectures {config.get('architectures')} is not a causal language model")
    if not any(any(submission.glob(p)) for p in WEIGHT_PATTERNS):
        problems.append("no weights (*.safetensors or pytorch_model*.bin) in the submission")
    if not any((submission / name).is_file() for name in TOKENIZER_FILES):
        problems.append("no tokenizer files: save the tokenizer with tokenizer.save_pretrained(dir)")
    return problems


def score(submission: Path, ctx: ScoreContext) -> Score:
    return score_superglue(submission, ctx)
