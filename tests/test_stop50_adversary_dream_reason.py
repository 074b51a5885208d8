"""Stop 50 adversary: a purged memory's words outlive it in the dream's edges.

`dream(dry_run=False)` links memories of different topics with RELATED_TO edges whose `reason`
quotes both topics' labels ("dream: similar (0.79) across topics 'plans / turn / qxcxcauajyzl' and
..."), and a label is made of its members' words. `purge(id)` removes the memory's own edges and its
topics, but an edge between two other memories keeps the label it quoted: the purged memory's words
stay readable through `db.edges`, in `db.admin.export`, and in the store's edges file, where
docs/guides/trust.md says a purge takes the content and "everything derived from" it out of every
file. Found by the chaos run in /tmp/adv50 (6 purged tokens left in `edges-*.arrow`, 14 exports).
"""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import engramdb

TOKEN = re.compile(r"qx[a-z]{10}")


def _filled(db: engramdb.Store) -> dict[str, str]:
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
        assert all(word not in m.content for m in db.list("n", limit=1000))
        assert word not in _reasons(db), "an edge's reason still quotes the purged memory's words"
        out = tmp_path / "n.jsonl"
        db.admin.export(out)
        assert word not in out.read_text(), "the export still holds the purged memory's words"
    left = [p.name for p in store.rglob("*") if p.is_file() and "access" not in p.parts
            and word.encode() in p.read_bytes()]
    assert not left, f"store files still hold the purged memory's words: {left}"
