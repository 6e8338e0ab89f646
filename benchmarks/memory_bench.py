"""Memory benchmark: add and query latency at 1,000 and 10,000 records, and recall@5 on the labelled set.

    python benchmarks/memory_bench.py [--sizes 1000,10000] [--samples 200] [--json out.json]

"add" is `Memory.propose` (embed, similarity search, write: what the crew calls for each new
hypothesis); "query" is `Memory.recall(text, k=5)`. Records beyond the measured ones are bulk-loaded
so that the store reaches each size quickly. Runs offline with the bundled model.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from memory import Hypothesis, Memory, load_embedder  # noqa: E402
from memory.codec import hypothesis_item  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "memory" / "paraphrases.json"

CHANGES = [
    "a cosine learning-rate schedule",
    "a linear warmup of {n} steps",
    "dropout of 0.{d}",
    "weight decay of 0.{d}",
    "a batch size of {b}",
    "{l} transformer layers",
    "a hidden size of {h}",
    "{a} attention heads",
    "gradient clipping at {d}.0",
    "label smoothing of 0.{d}",
    "a vocabulary of {v} tokens",
    "bf16 mixed precision",
    "an EMA of the weights with decay 0.99{d}",
    "sequence length {s}",
    "the Lion optimizer",
    "AdamW with beta2 0.9{d}",
    "rotary position embeddings",
    "SwiGLU feed-forward layers",
    "data deduplication at threshold 0.{d}",
    "random-crop augmentation",
    "mixup with alpha 0.{d}",
    "{l} boosting rounds",
    "a learning rate of {d}e-4",
]
EFFECTS = [
    "will lower the validation loss",
    "will raise the benchmark score",
    "will reduce overfitting",
    "will speed up convergence",
    "will stabilise training",
    "will improve accuracy on rare classes",
    "will cut training time without hurting quality",
    "will improve perplexity",
]
SETTINGS = ["", " on the small model", " in the last third of training", " when combined with the current recipe"]


def synthetic_statements(n: int, seed: int = 0) -> list[str]:
    """`n` distinct, realistic-looking hypotheses."""
    rng = random.Random(seed)
    out: set[str] = set()
    while len(out) < n:
        change = rng.choice(CHANGES).format(
            n=rng.choice([100, 250, 500, 1000, 2000]),
            d=rng.randint(1, 9),
            b=rng.choice([16, 32, 64, 128, 256]),
            l=rng.choice([4, 6, 8, 12, 16, 24]),
            h=rng.choice([256, 384, 512, 768, 1024]),
            a=rng.choice([4, 8, 16]),
            v=rng.choice([8000, 16000, 32000, 50000]),
            s=rng.choice([256, 512, 1024, 2048]),
        )
        out.add(f"Using {change}{rng.choice(SETTINGS)} {rng.choice(EFFECTS)} (idea {len(out)}).")
    return sorted(out)


def bulk_load(mem: Memory, statements: list[str], batch: int = 1000) -> list[list[float]]:
    """Fill the store fast: batch embedding and batch writes (the crew adds one at a time)."""
    embedder, store, vectors = load_embedder(), mem.run_store, []
    assert store is not None
    for start in range(0, len(statements), batch):
        chunk = statements[start : start + batch]
        items = [hypothesis_item(Hypothesis(s, challenge="bench", run_id="bench-fill")) for s in chunk]
        chunk_vectors = embedder.embed(chunk)
        store.upsert("hypotheses", items, chunk_vectors)
        vectors.extend(chunk_vectors)
    return vectors


def exact_recall_at_5(pairs: list[list[str]], distractors: list[list[float]]) -> float:
    """recall@5 by brute-force cosine over the labelled statements and the bulk-loaded distractors.

    Set beside the store's figure it shows whether a miss is the search's fault or a distractor
    that is simply closer in meaning (the synthetic records include near-paraphrases).
    """
    embedder = load_embedder()
    targets = np.array(embedder.embed([a for a, _ in pairs]))
    corpus = np.vstack([targets, np.array(distractors)]) if distractors else targets
    queries = np.array(embedder.embed([b for _, b in pairs]))
    top5 = np.argsort(-(queries @ corpus.T), axis=1)[:, :5]
    return float(np.mean([i in row for i, row in enumerate(top5)]))


def percentiles(samples_s: list[float]) -> tuple[float, float]:
    ms = np.array(samples_s) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def time_calls(fn, args: list) -> list[float]:
    out = []
    for a in args:
        t = time.perf_counter()
        fn(a)
        out.append(time.perf_counter() - t)
    return out


def recall_at_5(mem: Memory, pairs: list[list[str]], ids: dict[str, str]) -> float:
    hits = sum(ids[a] in {s.hypothesis.id for s in mem.recall(b, k=5)} for a, b in pairs)
    return hits / len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="store sizes to measure at, ascending")
    parser.add_argument("--samples", type=int, default=200, help="timed queries per size (adds: half)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    labelled = json.loads(FIXTURE.read_text(encoding="utf-8"))

    t = time.perf_counter()
    load_embedder()
    print(f"embedding model loaded in {time.perf_counter() - t:.1f}s; cpu cores: {os.cpu_count()}")
    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    results: dict[str, object] = {"cpu_count": os.cpu_count(), "sizes": {}}
    filler = synthetic_statements(max(sizes) + 1000)
    queries = synthetic_statements(args.samples, seed=1)
    fresh = iter(synthetic_statements(len(sizes) * args.samples, seed=2))

    with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp:
        mem = Memory(Path(tmp) / "run", run_id="bench", challenge="bench", global_dir=False)
        # Recall on the labelled set alone first, then again once 10,000 distractors surround it.
        ids = {a: mem.propose(a).hypothesis.id for a, _ in labelled["similar"]}
        results["recall@5_labelled_alone"] = recall_at_5(mem, labelled["similar"], ids)
        loaded = len(ids)
        head = ("records", "add p50", "add p95", "query p50", "query p95", "search p50", "search p95")
        print("\n" + " ".join(f"{h:>10}" for h in head) + "   (ms)")
        distractors: list[list[float]] = []
        for size in sizes:
            distractors += bulk_load(mem, filler[loaded - len(ids) : size - len(ids)])
            loaded = size
            mem.recall("warm up the index", k=5)
            query_s = time_calls(lambda q: mem.recall(q, k=5), queries)
            add_s = time_calls(mem.propose, list(itertools.islice(fresh, args.samples // 2)))
            # The store's search alone, without embedding the query text.
            vectors = load_embedder().embed(queries)
            search_s = time_calls(lambda v: mem.run_store.query("hypotheses", v, 5), vectors)
            (a50, a95), (q50, q95), (s50, s95) = percentiles(add_s), percentiles(query_s), percentiles(search_s)
            count = mem.run_store.count("hypotheses")
            results["sizes"][size] = {
                "records": count,
                "add_p50_ms": a50,
                "add_p95_ms": a95,
                "query_p50_ms": q50,
                "query_p95_ms": q95,
                "search_p50_ms": s50,
                "search_p95_ms": s95,
            }
            print(f"{count:>10}" + "".join(f" {x:>10.1f}" for x in (a50, a95, q50, q95, s50, s95)))
        results["recall@5_labelled_in_store"] = recall_at_5(mem, labelled["similar"], ids)
        results["records_at_recall"] = mem.run_store.count("hypotheses")
        results["exact_recall@5_labelled_in_store"] = exact_recall_at_5(labelled["similar"], distractors)
        mem.close()

    print(f"\nrecall@5 on the labelled set ({len(labelled['similar'])} paraphrase pairs):")
    print(f"  alone:                 {results['recall@5_labelled_alone']:.3f}")
    print(f"  among {results['records_at_recall']:,} records: {results['recall@5_labelled_in_store']:.3f}")
    print(
        f"  same, brute force:     {results['exact_recall@5_labelled_in_store']:.3f}"
        "  (a check of the store's search; misses are synthetic near-paraphrases ranked higher)"
    )
    print("load average at end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    top = max(sizes)
    verdict = "met" if results["sizes"][top]["query_p95_ms"] < 50 else "NOT met"
    print(f"target query p95 < 50 ms at {top:,} records: {verdict}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
