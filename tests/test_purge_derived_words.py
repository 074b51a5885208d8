"""A purged memory's words leave what other memories' records derived from it (stop 50).

docs/guides/trust.md: a purge takes a memory's content "and everything derived from" it out of
every file. A topic's label is made of its members' words; two records of *other* memories quoted
labels: the dream's RELATED_TO edge reasons (found by stop 50's chaos pass: 10 purged tokens left
in edge files) and `forget_concept(topic)`'s record in each member's metadata (its second
adversary: a purged member's word in 19 others' records). Both now name the topic by id. Each
test purges the memory whose word a label holds, then looks for the word in the reasons, an export
and every store file but the access log. Public API only.
"""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import engramdb

TOKEN = re.compile(r"qx[a-z]{10}")


def _filled(db: engramdb.Store) -> dict[str, str]:
    """120 memories of namespace "n", each holding one word of its own: word -> id."""
    rng = random.Random(1)

    def tk() -> str:
        return "qx" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))

    recs = [{"content": f"Turn {tk()} said in chat about plans", "namespace": "n"} for _ in range(60)]
    recs += [{"content": f"Agent note {tk()} about the {rng.choice(['cache', 'deploy', 'schema', 'vault'])} work",
              "namespace": "n"} for _ in range(60)]
    ids = list(db.add_many(recs))
    return {TOKEN.search(str(r["content"])).group(): i for r, i in zip(recs, ids)}  # type: ignore[union-attr]


def _reasons(db: engramdb.Store) -> str:
    return " ".join(e.reason or "" for m in db.list("n", limit=1000) for e in db.edges(m.id, direction="both"))


def _nowhere(db: engramdb.Store, word: str, tmp_path: Path) -> None:
    """`word` in no memory, no edge reason and no export line."""
    assert all(word not in m.content for m in db.list("n", limit=1000))
    assert word not in _reasons(db), "an edge's reason still quotes the purged memory's words"
    out = tmp_path / "n.jsonl"
    db.admin.export(out)
    quoting = [line[:200] for line in out.read_text(encoding="utf-8").splitlines() if word in line]
    assert not quoting, f"{len(quoting)} exported memories still quote the purged memory's word: {quoting[:1]}"


def _in_no_file(store: Path, word: str) -> None:
    """`word` in no file of the closed store folder (the access log aside)."""
    left = [p.name for p in store.rglob("*") if p.is_file() and "access" not in p.parts
            and word.encode() in p.read_bytes()]
    assert not left, f"store files still hold the purged memory's words: {left}"


def test_a_purged_memorys_words_leave_the_dreams_edges(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    with engramdb.open(store) as db:
        owner = _filled(db)
        db.lifecycle.dream("n", dry_run=False)
        assert "dream" in _reasons(db), "the dream made no edge: the test's premise"
        labelled = sorted(set(TOKEN.findall(" ".join(t.label for t in db.topics("n")))))
        assert labelled, "no topic label holds a member's word: the test's premise"
        assert not TOKEN.findall(_reasons(db)), "an edge's reason quotes a member's words"
        word = labelled[0]  # one memory's own word (each token is in one memory only)
        assert db.purge(owner[word]) == 1
        _nowhere(db, word, tmp_path)
    _in_no_file(store, word)


def test_a_purged_members_words_leave_the_forget_records_of_its_topic(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    with engramdb.open(store) as db:
        owner = _filled(db)
        topic = next((t for t in db.topics("n") if TOKEN.search(t.label)), None)
        assert topic is not None, "no topic label holds a member's word: the test's premise"
        word = TOKEN.search(topic.label).group()  # type: ignore[union-attr]
        assert owner[word] in topic.members
        forgotten = db.lifecycle.forget_concept(topic.id, namespace="n", dry_run=False)
        assert owner[word] in forgotten and len(forgotten) > 1
        assert db.purge(owner[word]) >= 1
        _nowhere(db, word, tmp_path)
    _in_no_file(store, word)
