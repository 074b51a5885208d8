"""importance.pack under attack: the namespace is the caller's boundary, what has stopped being
true stays out (as a context leaves it out), and the order against a reference over random
ratings with forgotten and superseded memories among them."""

from __future__ import annotations

import random

import engramdb
import pytest


def test_a_namespace_that_is_not_a_name_is_refused_not_read_as_every_namespace() -> None:
    """pack(None) packed every namespace's memories (another user's among them); a non-string
    packed nothing, silently."""
    db = engramdb.open(None)
    db.add("alice: the vault code is 1234", namespace="alice")
    db.add("bob's note about lunch", namespace="bob")
    with pytest.raises(TypeError, match="namespace"):
        db.importance.pack(None, max_tokens=500)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="namespace"):
        db.importance.pack(5, max_tokens=500)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="namespace"):
        db.importance.pack("", max_tokens=500)
    assert [i.text.endswith("lunch") for i in db.importance.pack("bob", max_tokens=500).items] == [True]


def test_a_superseded_memory_is_not_packed() -> None:
    """A superseded memory is no longer true (a context leaves it out); the pack put the old job
    beside the new one in every session's start."""
    db = engramdb.open(None)
    db.add("Maya works at the bakery near the river.", namespace="n", id="job1")
    db.add("Maya works at the library now.", namespace="n", id="job2")
    db.add("Maya plays the cello.", namespace="n", id="cello")
    db.supersede("job1", "job2")
    pack = db.importance.pack("n", max_tokens=500)
    assert sorted(i.id for i in pack.items) == ["cello", "job2"]
    assert pack.stats["left_out"] == 1


@pytest.mark.parametrize("seed", range(4))
def test_the_pack_is_the_reference_order_of_what_is_current(seed: int) -> None:
    """Random ratings (used, shown and never rated), some memories forgotten, one superseded: the
    pack's ids are the current memories (db.list) not VERY_LOW, by (elo to one decimal, highest first; newest first)."""
    rnd = random.Random(seed)
    db = engramdb.open(None)
    words = ["cello", "violin", "piano", "bowing", "scales", "etude", "sonata", "tempo"]
    n = rnd.randint(8, 40)
    db.add_many([{"id": f"m{i:03d}", "content": " ".join(rnd.choices(words, k=6)) + f" note {i}.",
                  "namespace": "n"} for i in range(n)])
    for _ in range(rnd.randint(5, 30)):
        hits = db.search(" ".join(rnd.choices(words, k=2)), namespace="n", k=rnd.randint(1, 8))
        db.feedback(hits.query_id or "", used=[h.id for h in hits if rnd.random() < 0.4])
    for i in rnd.sample(range(2, n), k=3):
        db.forget(f"m{i:03d}")
    db.add("a newer cello note", namespace="n", id="zz")
    db.supersede("m001", "zz")
    db.importance.refresh()
    pack = db.importance.pack("n", max_tokens=10**9)
    current = [m.id for m in db.list("n", limit=1_000, newest_first=True)]
    elo = {i: db.importance(i).elo for i in current}
    want = [i for i in sorted(current, key=lambda i: -round(elo[i], 1)) if db.importance(i).tier != "VERY_LOW"]
    assert [i.id for i in pack.items] == want
