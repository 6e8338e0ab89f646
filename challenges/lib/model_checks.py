"""Rule checks shared by challenges whose submission is a Hugging Face model folder.

Each returns a list of violations, each a sentence that says what is wrong and how to fix it.
"""

from __future__ import annotations

import gc
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "spiece.model")
DTYPE_NAMES = {"F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64", "I8": "int8", "U8": "uint8",
               "I16": "int16", "I32": "int32", "I64": "int64", "F8_E4M3": "float8_e4m3", "F8_E5M2": "float8_e5m2"}
GIB = 1 << 30


def check_model_folder(submission: Path, causal: bool = True) -> list[str]:
    """The folder holds a config (no remote code), weights and a tokenizer, of a causal (or seq2seq) LM."""
    if not submission.is_dir():
        return [f"{submission} is not a directory; submit a Hugging Face model directory (save_pretrained)"]
    problems = []
    config = read_config(submission)
    if config is None:
        problems.append("config.json is missing: save the model with model.save_pretrained(dir)")
    else:
        if "auto_map" in config:
            problems.append("config.json uses auto_map (remote code); use an architecture transformers ships")
        suffixes = ("ForCausalLM", "LMHeadModel") if causal else ("ForConditionalGeneration",)
        if not any(a.endswith(suffixes) for a in config.get("architectures") or []):
            kind = "causal language model" if causal else "sequence-to-sequence model"
            problems.append(f"architectures {config.get('architectures')} is not a {kind}")
    if not any(any(submission.glob(p)) for p in WEIGHT_PATTERNS):
        problems.append("no weights (*.safetensors or pytorch_model*.bin) in the submission")
    if not any((submission / name).is_file() for name in TOKENIZER_FILES):
        problems.append("no tokenizer files: save the tokenizer with tokenizer.save_pretrained(dir)")
    return problems


def read_config(folder: Path) -> dict[str, Any] | None:
    path = Path(folder) / "config.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def tensor_shapes(folder: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Name -> (safetensors dtype, shape) of every weight, read from the file headers without loading."""
    from safetensors import safe_open

    shapes = {}
    for file in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(file, "pt") as handle:
            for name in handle.keys():  # noqa: SIM118 - safe_open is not a dict
                piece = handle.get_slice(name)
                shapes[name] = (piece.get_dtype(), tuple(piece.get_shape()))
    return shapes


def stored_parameters(folder: Path) -> int:
    """How many parameters the safetensors files hold (tied weights are stored once)."""
    return sum(math.prod(shape) for _, shape in tensor_shapes(folder).values())


def check_same_model_type(submission: Path, base: Path, fix: str) -> list[str]:
    """The submission's model_type is the base model's; `fix` says what to do otherwise."""
    base_type, model_type = read_config(base).get("model_type"), (read_config(submission) or {}).get("model_type")
    if model_type == base_type:
        return []
    return [f"model_type is '{model_type}', the base model's is '{base_type}': {fix}"]


def check_derived_model(submission: Path, base: Path, fix: str, allowed: tuple[str, ...] = ("F16", "F32")) -> list[str]:
    """A model folder of the base model's type with float weights only, checked without loading it."""
    return check_model_folder(submission) or (
        check_same_model_type(submission, base, fix) + check_float_weights(submission, allowed))


def check_float_weights(submission: Path, allowed: tuple[str, ...] = ("F16", "F32")) -> list[str]:
    """No quantization: safetensors weights only, every tensor in an allowed float dtype, no quantization config."""
    config = read_config(submission) or {}
    problems = []
    if config.get("quantization_config"):
        method = config["quantization_config"].get("quant_method", "unknown")
        problems.append(f"the model is quantized (config.json has a quantization_config, method {method}); "
                        f"quantization is not allowed: save the weights in {' or '.join(_names(allowed))}")
    if any(submission.glob("pytorch_model*.bin")) or not any(submission.glob("*.safetensors")):
        problems.append("weights must be safetensors files (save_pretrained(dir, safe_serialization=True))")
    found = {dtype for dtype, _ in tensor_shapes(submission).values()}
    if found - set(allowed):
        problems.append(f"weights in {', '.join(_names(found - set(allowed)))}: only {', '.join(_names(allowed))} "
                        "are allowed "
                        "(integer or 8/4-bit tensors mean quantization)")
    return problems


@dataclass(frozen=True)
class LoadedStats:
    parameters: int
    tensor_bytes: int  # parameters and buffers as loaded
    rss_growth_bytes: int  # how much this process's resident memory grew while loading
    dtypes: tuple[str, ...]

    def as_details(self) -> dict[str, Any]:
        return {"parameters": self.parameters, "tensor_bytes": self.tensor_bytes,
                "rss_growth_bytes": self.rss_growth_bytes, "dtypes": list(self.dtypes)}


def load_and_measure(submission: Path, seq2seq: bool = False) -> LoadedStats:
    """Load the model on the CPU in its saved dtypes and measure it, then free it."""
    import psutil
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    process = psutil.Process()
    gc.collect()
    before = process.memory_info().rss
    loader = AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM
    model = loader.from_pretrained(submission, dtype="auto", device_map="cpu")
    grown = max(0, process.memory_info().rss - before)
    tensors = [*model.parameters(), *model.buffers()]
    stats = LoadedStats(
        parameters=sum(p.numel() for p in model.parameters()),
        tensor_bytes=sum(t.numel() * t.element_size() for t in tensors),
        rss_growth_bytes=grown,
        dtypes=tuple(sorted({str(p.dtype).removeprefix("torch.") for p in model.parameters()})),
    )
    del model, tensors
    gc.collect()
    log.info("loaded %s: %s", submission, stats)
    return stats


def check_memory(stats: LoadedStats, limit_bytes: int, runtime_allowance_bytes: int = 512 << 20) -> list[str]:
    """The loaded tensors fit the limit, and so does the process growth, less an allowance for the runtime."""
    problems = []
    if stats.tensor_bytes > limit_bytes:
        problems.append(f"the loaded model takes {_size(stats.tensor_bytes)} ({stats.parameters:,} parameters in "
                        f"{', '.join(stats.dtypes)}), over the memory limit of {_size(limit_bytes)}: "
                        "make it smaller (fewer layers or parameters, or float16)")
    elif stats.rss_growth_bytes > limit_bytes + runtime_allowance_bytes:
        problems.append(f"loading the model grew resident memory by {_size(stats.rss_growth_bytes)}, over the "
                        f"limit of {_size(limit_bytes)} plus {_size(runtime_allowance_bytes)} for the runtime")
    return problems


def _names(dtypes) -> list[str]:
    return sorted(DTYPE_NAMES.get(d, d) for d in dtypes)


def _size(n: int) -> str:
    return f"{n / GIB:.2f} GiB" if n >= GIB else f"{n / (1 << 20):.1f} MiB"
