"""Many threads on one store handle (a service): context() (which runs topics and saves their
state), themes() and writes side by side never fail and never mix namespaces."""

from __future__ import annotations

import threading
from pathlib import Path

import engramdb

SUBJECTS = ["the violin lesson moved to thursday", "bread rises overnight in the fridge",
            "the garden needs water every morning", "the invoice for march is overdue"]


def test_context_topics_and_writes_from_many_threads(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "db")
    for u in range(4):
        db.add_many([{"content": f"{s} ({i}) for user {u}", "namespace": f"u{u}", "session_id": "s"}
                     for s in SUBJECTS for i in range(4)])
    errors: list[BaseException] = []
    seen: dict[int, set[str]] = {}

    def work(u: int) -> None:
        try:
            for i in range(5):
                ctx = db.context("when is the violin lesson?", namespace=f"u{u}", max_tokens=300, session_id="s")
                seen.setdefault(u, set()).update(it.provenance["snippet"] for it in ctx.items if it.id)
                db.topics.themes(f"u{u}")
                db.add(f"note {i} of user {u}", namespace=f"u{u}", session_id="s")
        except BaseException as exc:  # noqa: BLE001 - reported below with the thread's user
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(u,)) for u in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for u, snippets in seen.items():
        assert snippets and all(f"user {u}" in s for s in snippets)
    assert all(db.stats()["namespaces"][f"u{u}"] == 21 for u in range(4))
    db.close()
