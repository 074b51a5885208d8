"""`Store.context`: the context block an agent puts in its prompt before a turn (C6, K2, K3).

1. divergence: with a session, a note when the query is far from the session's recent work;
2. topic matches: the hits that sit in the query's nearest topic (when the namespace's topics can
   be computed: `engramdb[cluster]`), under the topic's label;
3. related memories: the other hits;
4. recent context: the session's last turns not already in;
5. temporal badges: what time the facts are true at, and how many are past.
Sections 2-4 are filled by the curator (context/curator.py) from the default search's hits, each
within its budget plus what the sections before it left (context/sections.py). Every fact carries
its validity. The injected memories are logged to the access log (kind "inject") under the search's
query id, which is what ELO learns from when the agent gives no feedback of its own.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import numpy as np

from ..context import sections as sec
from ..context.curator import Candidate, curate
from ..context.model import Context, ContextItem
from ..context.tokens import Counter, counter
from ..importance.elo import tier
from ..lifecycle.consolidation import leading_sentences
from ..model.hit import Hit
from ..model.memory import Memory
from .topic_verbs import TopicVerbs

CANDIDATES = 50  # hits the curator chooses from
RECENT_TURNS = 20
TOPIC_SHARE = 0.5  # of the best hit's score a hit needs to be shown as a topic match


class ContextVerbs(TopicVerbs):
    """Mixed into `Store`."""

    def context(self, query: str, *, namespace: str, max_tokens: int = 2000, session_id: str | None = None,
                as_of: datetime | None = None, tokenizer: str | Counter | None = None,
                log: bool = True) -> Context:
        """The best memories for a prompt under `max_tokens` (C6): a `Context` with `.text` (the
        block, sections in priority order, each fact with its validity dates; never more than
        `max_tokens` by the tokenizer in use), `.items` (id, section, score, tokens, why, K3
        provenance) and `.stats` (tokens used, budget, tokenizer, milliseconds per stage).
        `tokenizer`: "cl100k_base" (the default when bpe-openai is installed:
        `engramdb[tokens]`), "o200k_base", "estimate", or any callable text -> token count.
        `as_of`: the facts true then (superseded ones shown as such). `log=False` neither logs
        the search nor the injection."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 50:
            raise ValueError(f"max_tokens must be an int >= 50, got {max_tokens!r}")
        count, tok_name = counter(tokenizer)
        t0 = time.perf_counter()
        laps: dict[str, float] = {}

        def lap(name: str) -> None:
            nonlocal t0
            now = time.perf_counter()
            laps[name] = round((now - t0) * 1e3, 3)
            t0 = now

        budget = sec.budgets(max_tokens)
        carry = 0
        items: list[ContextItem] = []
        # 1. divergence
        if session_id is not None:
            d = self.divergence(query, namespace=namespace, session_id=session_id)
            if d["divergent"]:
                note = (f"- This question is far from what this session has been about (nearest memory "
                        f"{d['nearest']}, similarity {d['similarity']:.2f}).")
                items.append(ContextItem(None, "divergence", note, 1.0, count(note), "divergence alert (C6)"))
        carry += budget["divergence"] - sum(i.tokens for i in items)
        lap("divergence")
        # the candidates: the default search
        hits = self.search(query, namespace=namespace, k=CANDIDATES, as_of=as_of, session_id=session_id, log=log)
        lap("search")
        view = self._view()
        main = self.schema.main
        cands: dict[str, tuple[Hit, str, Candidate]] = {}
        for h in hits:
            text = sec.line(h.memory, _quote(h), as_of)
            v = np.asarray(view.row_vector(h.id, main), np.float64).reshape(-1)
            v = v / max(float(np.linalg.norm(v)), 1e-12)
            cands[h.id] = (h, text, Candidate(h.id, h.score, count(text), v))
        lap("candidates")
        # 2. topic matches
        label, in_topic = self._nearest_topic(namespace, query, cands)
        room = budget["topics"] + carry
        topic_items = self._pick("topics", [cands[i] for i in in_topic], room, f"in the topic '{label}'")
        items += topic_items
        carry = room - sum(i.tokens for i in topic_items)
        lap("topics")
        # 3. related memories
        taken = {i.id for i in items}
        room = budget["related"] + carry
        related = self._pick("related", [c for i, c in cands.items() if i not in taken], room, "search")
        items += related
        carry = room - sum(i.tokens for i in related)
        lap("related")
        # 4. recent context
        room = budget["recent"] + carry
        if session_id is not None:
            taken = {i.id for i in items}
            used = 0
            for m in self._recent_turns(namespace, session_id):
                if m.id in taken:
                    continue
                text = sec.line(m, m.content, as_of)
                n = count(text)
                if used + n > room:
                    break
                items.append(ContextItem(m.id, "recent", text, 0.0, n, "the session's latest turns",
                                         _provenance(m, None, [])))
                used += n
            room -= used
        carry = room
        lap("recent")
        # 5. temporal badges
        past = sum(1 for i in items if i.id is not None and ("superseded)" in i.text or "ended)" in i.text))
        when = as_of.date().isoformat() if as_of is not None else "now"
        note = f"- Facts as of {when}; {past} of them no longer hold (marked ended or superseded)."
        if count(note) <= budget["badges"] + carry:
            items.append(ContextItem(None, "badges", note, 0.0, count(note), "temporal badges (C6)"))
        text, items = self._render(items, count, max_tokens)
        lap("render")
        injected = [i.id for i in items if i.id is not None and i.section != "recent"]
        if log and hits.query_id is not None and injected:
            self._usage.feedback(hits.query_id, injected, kind="inject", session_id=session_id)
        stats = {"tokens": count(text), "budget": max_tokens, "tokenizer": tok_name, "items": len(items),
                 "candidates": len(hits), "ms": laps, "query_id": hits.query_id,
                 "sections": {s: sum(1 for i in items if i.section == s) for s in sec.SECTIONS}}
        return Context(text, items, stats)

    def pack(self, namespace: str, *, max_tokens: int = 2000, tokenizer: str | Counter | None = None) -> Context:
        """The lite pack of a namespace (E8): its memories by ELO, highest first, HIGH in full,
        MEDIUM as a summary (the leading sentences), LOW as a pointer (its id and first words),
        VERY_LOW left out, while they fit `max_tokens`. `.items` is the manifest (id, elo and tier
        in the provenance, the form in `why`); `.stats` has the tokens saved against the same
        memories in full."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 50:
            raise ValueError(f"max_tokens must be an int >= 50, got {max_tokens!r}")
        count, tok_name = counter(tokenizer)
        now_us = time.time_ns() // 1_000
        ratings = self._usage.ratings
        view = self._view()
        mems = view.memories_at(self._view().current_locs(namespace))
        ranked = sorted(((ratings.elo_now(m.id, now_us), m) for m in mems), key=lambda x: (-x[0], x[1].id))
        items: list[ContextItem] = []
        used = full = 0
        for elo, m in ranked:
            t = tier(elo)
            if t == "VERY_LOW":
                continue
            body = m.content if t == "HIGH" else leading_sentences(m.content, 1, 25) if t == "MEDIUM" else \
                " ".join(m.content.split()[:8]) + " ..."
            text = f"- [{m.id}] {' '.join(body.split())}"
            n = count(text)
            if used + n > max_tokens:
                break
            full += count(f"- [{m.id}] {' '.join(m.content.split())}")
            used += n
            form = {"HIGH": "full", "MEDIUM": "summary", "LOW": "pointer"}[t]
            items.append(ContextItem(m.id, "pack", text, round(elo, 1), n, f"{t}: {form}",
                                     {"elo": round(elo, 1), "tier": t, "form": form}))
        text = "\n".join(i.text for i in items)
        return Context(text, items, {"tokens": count(text), "budget": max_tokens, "tokenizer": tok_name,
                                     "memories": len(items), "left_out": len(mems) - len(items),
                                     "tokens_in_full": full, "tokens_saved": max(0, full - used)})

    # ------------------------------------------------------------------------------ helpers
    def _pick(self, section: str, pool: list[tuple[Hit, str, Candidate]], room: int, why: str) -> list[ContextItem]:
        by_id = {c.id: (h, text, c) for h, text, c in pool}
        out = []
        chosen: list[str] = []
        for p in curate([c for _, _, c in pool], room):
            h, text, _ = by_id[p.id]
            out.append(ContextItem(h.id, section, text, round(h.score, 4), p.tokens,
                                   f"{why}: score {h.score:.2f}" + (f", redundancy {p.redundancy:.2f}"
                                                                    if p.redundancy > 0 else ""),
                                   _provenance(h.memory, h, chosen)))
            chosen.append(h.id)
        return out

    def _nearest_topic(self, namespace: str, query: str,
                       cands: dict[str, tuple[Hit, str, Candidate]]) -> tuple[str, list[str]]:
        """The label of the query's nearest topic and the candidates in it (none without topics)."""
        try:
            topic_of, centroids = self._topic_map(namespace)
        except ImportError:  # scikit-learn not installed: no topics, the budget flows on
            return "", []
        if not len(centroids) or not cands:
            return "", []
        emb = self.embedders.get(self.schema.main)
        if emb is None:
            return "", []
        q = np.asarray(emb.embed([query]), np.float64).reshape(-1)
        best = int(np.argmax(np.asarray(centroids) @ q))
        label = self.topics(namespace)[best].label
        top = max(h.score for h, _, _ in cands.values())
        # a topic match is a hit of the nearest topic that is also a good hit (half the best at least)
        return label, [i for i, (h, _, _) in cands.items() if topic_of.get(i) == best and h.score >= TOPIC_SHARE * top]

    def _recent_turns(self, namespace: str, session_id: str) -> list[Memory]:
        """The session's newest turns, newest first."""
        view = self._view()
        mine = [m for m in view.memories_at(self._view().current_locs(namespace)) if m.session_id == session_id]
        mine.sort(key=lambda m: (m.seq if m.seq is not None else -1, m.learned_at or 0), reverse=True)
        return mine[:RECENT_TURNS]

    @staticmethod
    def _render(items: list[ContextItem], count: Counter, max_tokens: int) -> tuple[str, list[ContextItem]]:
        """The block, sections in order with their headings; items dropped from the end while the
        whole is over budget."""
        while True:
            parts = []
            for s in sec.SECTIONS:
                mine = [i for i in items if i.section == s]
                if not mine:
                    continue
                label = next((i.why.split("'")[1] for i in mine if s == "topics" and "'" in i.why), "")
                parts.append(sec.HEADINGS[s].format(label=label))
                parts += [i.text for i in mine]
            text = "\n".join(parts)
            if count(text) <= max_tokens or not items:
                return text, items
            items = items[:-1]


def _quote(h: Hit) -> str:
    """A hit's text in a context: the passage that matched for a long memory (C7), else all of it."""
    if h.passage is not None:
        a, b = h.passage
        return "..." + h.memory.content[a:b] + "..."
    return h.memory.content


def _provenance(m: Memory, h: Hit | None, chosen: list[str]) -> dict[str, Any]:
    """K3: where a memory came from and how far to trust it."""
    p = dict(m.provenance)
    return {"source": m.source, "uri": p.get("uri") or m.metadata.get("uri"),
            "extracted_at": m.learned_at.isoformat() if m.learned_at else None,
            "extractor": p.get("extractor", "add"), "snippet": m.content[:200],
            "verified": bool(p.get("verified", False)), "corroboration": int(p.get("corroboration", 0)),
            "trust": {"confidence": m.confidence, "elo": h.elo if h is not None else None,
                      "tier": h.tier if h is not None else None, "version": m.version}}


__all__ = ["ContextVerbs"]
