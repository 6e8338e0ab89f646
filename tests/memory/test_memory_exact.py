"""The exact in-memory search the store answers queries from."""

import numpy as np

from memory.exact import ExactIndex, matches


def _unit(*xs: float) -> list[float]:
    v = np.array(xs, dtype=np.float32)
    return (v / np.linalg.norm(v)).tolist()


def test_search_ranks_by_cosine_and_filters():
    index = ExactIndex([], [], [], [])
    vectors = [_unit(1, 0, 0), _unit(1, 1, 0), _unit(0, 1, 0), _unit(0, 0, 1)]
    metas = [{"run_id": "a"}, {"run_id": "b"}, {"run_id": "a"}, {"run_id": "c"}]
    index.upsert(["x0", "x1", "x2", "x3"], vectors, ["d"] * 4, metas)
    assert [index.ids[i] for i, _ in index.search(_unit(1, 0.1, 0), 2, None)] == ["x0", "x1"]
    only_a = index.search(_unit(1, 0.1, 0), 5, {"run_id": {"$in": ["a"]}})
    assert [index.ids[i] for i, _ in only_a] == ["x0", "x2"]
    assert index.search(_unit(1, 0, 0), 3, {"run_id": "none"}) == []


def test_upsert_replaces_and_grows():
    index = ExactIndex(["x"], [_unit(1, 0)], ["old"], [{"k": 1}])
    index.upsert(["x"], [_unit(0, 1)], ["new"], [{"k": 2}])
    assert len(index) == 1 and index.documents[0] == "new"
    ids = [f"y{i}" for i in range(100)]
    index.upsert(ids, [_unit(1, i + 1) for i in range(100)], ["d"] * 100, [{}] * 100)
    assert len(index) == 101
    (row, sim), *_ = index.search(_unit(0, 1), 1, None)
    assert index.ids[row] == "x" and abs(sim - 1.0) < 1e-6


def test_filter_matching():
    meta = {"challenge": "minipile", "outcome": "worse"}
    assert matches(meta, {"$and": [{"challenge": "minipile"}, {"outcome": {"$in": ["worse", "crashed"]}}]})
    assert not matches(meta, {"$and": [{"challenge": "minipile"}, {"outcome": "improved"}]})
