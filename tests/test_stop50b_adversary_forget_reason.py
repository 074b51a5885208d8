"""Stop 50b adversary: a purged memory's words outlive it in forget_concept's reasons.

Stop 50 took topic labels out of the dream's edge reasons (a label is made of members' words, so a
purged member's words stayed in other memories' edges). The same file's `forget_concept(topic_id)`
still writes the label into each member's forget record ("a member of topic n/t0 ('plans / turn /
qx...')"), which is kept in the memory's metadata: the members stay in the store (forgotten, so
restorable) and purging the member whose word the label quotes leaves that word in the 19 others'
records, in `db.admin.export` and in the store's segment file, where docs/guides/trust.md says a
purge takes the content and everything derived from it out of every file. Public API only.
"""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import engramdb

TOKEN = re.compile(r"qx[a-z]{10}")


def test_a_purged_members_words_leave_the_forget_records_of_its_topic(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    with engramdb.open(store) as db:
        rng = random.Random(1)

        def tk() -> str:
            return "qx" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))

        recs = [{"content": f"Turn {tk()} said in chat about plans", "namespace": "n"} for _ in range(60)]
        recs += [{"content": f"Agent note {tk()} about the {rng.choice(['cache', 'deploy', 'schema', 'vault'])} work",
                  "namespace": "n"} for _ in range(60)]
        ids = list(db.add_many(recs))
        owner = {TOKEN.search(str(r["content"])).group(): i for r, i in zip(recs, ids)}  # type: ignore[union-attr]
        topic = next((t for t in db.topics("n") if TOKEN.search(t.label)), None)
        assert topic is not None, "no topic label holds a member's word: the test's premise"
        word = TOKEN.search(topic.label).group()  # type: ignore[union-attr]
        assert owner[word] in topic.members
        forgotten = db.lifecycle.forget_concept(topic.id, namespace="n", dry_run=False)
        assert owner[word] in forgotten and len(forgotten) > 1
        assert db.purge(owner[word]) >= 1
        out = tmp_path / "n.jsonl"
        db.admin.export(out)
        quoting = [line[:200] for line in out.read_text(encoding="utf-8").splitlines() if word in line]
        assert not quoting, f"{len(quoting)} exported memories still quote the purged memory's word: {quoting[:1]}"
    left = [p.name for p in store.rglob("*") if p.is_file() and "access" not in p.parts
            and word.encode() in p.read_bytes()]
    assert not left, f"store files still hold the purged memory's words: {left}"
