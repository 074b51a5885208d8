"""A long-history development view for retrieval (issue 28): LoCoMo conversations placed among distractor
sessions, user/assistant roles, long assistant turns and first-person questions, scored per category for
the default `search()` against plain BM25.

It stands in for a held-out set of real chats (about 50 sessions and 500 turns per question, most
sessions from other users' chats, assistant turns of hundreds of words, questions about what the user
said, each asked on a date after every session). The view is built per LoCoMo conversation:

* one haystack namespace per conversation: its own sessions plus distractor sessions drawn (random.Random
  seeded with "<seed>:<conversation>", without replacement) from the sessions of the OTHER conversations of
  the file until SESSIONS sessions. All of the conversation's questions are asked in it: one namespace per
  conversation (not per question, as the held-out set has) keeps the ingest at ~10 namespaces;
* dates: a distractor session's date is moved into the conversation's range by the linear map of its source
  conversation's first..last session dates onto this conversation's first..last ones (a source's sessions
  keep their order and spacing; dates cannot tell distractors apart); sessions are then interleaved by date;
* roles: in every session the speaker who speaks first is "user", the other "assistant" (distractors too);
* long assistant turns: per distractor session, DOCS_PER_SESSION (seeded) chunks of the project's own
  documentation (README.md and docs/**/*.md at the pinned DOCS_REV, docs/bench/ left out: tables of
  numbers that change with every run; `doc_sections`: split at headings, packed into chunks of up to
  DOC_WORDS[1] words, ~250 on average: prose, lists, code blocks; taken in a seeded shuffled order, a chunk
  repeating within a haystack only once all were used) are inserted as assistant replies right after a
  seeded assistant turn; then, in every session, the assistant's consecutive turns between two user turns
  are merged into ONE turn, their texts joined with blank lines. LoCoMo never has one speaker twice in a
  row, so its own turns stay as they are: the long assistant turns are the distractor sessions' replies
  with documentation in them. `--assistant-group N` (a variant, not the default) also makes up to N of a
  session's assistant turns one memory (the user's turns in between kept apart, as bench/_views.py's
  `assistant` view does), so the conversation's own assistant turns are long and on its subject too;
* memories as a user stores them: content the turn's text only (no prefix), role, session_id (an opaque
  "s<position>"), valid_from the (shifted) session date; one add_many per namespace in date order;
* questions (LoCoMo's, evidence repaired by eval_locomo.load_locomo) dated one day after the last session;
  `_first_person.first_person` rewrites a question whose evidence turns are all said by one speaker who is
  the "user" of their sessions, and which names that speaker but not the other, to the first person
  ("What did Caroline research?" -> "What did I research?", "Caroline's" -> "my": bench/_first_person.py
  says the rule, the same for every question). Every
  other question is asked as it is.

Categories (a question is in several): LoCoMo's five; who said the evidence (the user / the assistant /
both); evidence in one session / several sessions; "first person" (the rewritten ones); "same speaker,
several sessions". That last one is the
structural superset of the held-out set's "knowledge update" (an answer that changed over the sessions),
NOT an update label: LoCoMo marks no subject and no superseded value, and read by hand most of those
questions are aggregates ("How many times has X ...?", "What activities ...?"), few are values that
changed, so no sound rule finds updates here.

Both the store (public API, default arguments: `engramdb.open(profile=...)`, `add_many`,
`search(question, namespace=..., k=10)`; `now=` the question date only if search takes it and
`--question-date auto`) and plain BM25 (bench/_views.py's bm25s + PyStemmer) run on the same memories;
R@5, R@10 and NDCG@10 are bench/_views.py's (relevant = the distinct memories holding the evidence turns).
Cost: ingest memories/s (embedding included), search p50 / p95 ms per ~1,100-memory namespace.

    ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/longdev.py --json /tmp/longdev.json
    ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/longdev.py --limit-conversations 2 --profiles default
    (ablations: --sessions 0, --no-docs, --no-first-person; the variant: --assistant-group 4)

The LoCoMo data (CC BY-NC 4.0) is read in place and never copied; --json holds numbers only.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import random
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _corpus  # bench/ modules, beside this file
import _views
import eval_locomo as ev
import numpy as np
from _first_person import first_person

SESSIONS = 50  # sessions per haystack, the conversation's own included
SEED = 28
DOCS_REV = "d8d87545317c6b32d6bb8a9ee764369700934570"  # the documentation is pinned: the view stays put
DOC_WORDS = (80, 350)  # a documentation chunk's words: shorter ones dropped, longer sections cut at paragraphs
DOCS_PER_SESSION = (1, 3)  # documentation replies per distractor session (inclusive, seeded)
REPO = Path(__file__).resolve().parents[1]

LOCOMO_TAGS = tuple(_views.CATEGORIES.values())
ROLE_TAGS = ("said by the user", "said by the assistant", "said by both")
SESSION_TAGS = ("one session", "several sessions")
SAME_SPEAKER = "same speaker, several sessions"
FIRST_PERSON = "first person"
TAGS = ("all", *LOCOMO_TAGS, *ROLE_TAGS, *SESSION_TAGS, SAME_SPEAKER, FIRST_PERSON)


# --- the documentation replies ---------------------------------------------------------------------------

_HEADING = re.compile(r"^#{1,6}\s")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _paragraphs(lines: Sequence[str]) -> list[str]:
    """Blocks between blank lines outside code fences (a fence is one block with what touches it)."""
    out: list[str] = []
    block: list[str] = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        if not line.strip() and not fenced:
            if block:
                out.append("\n".join(block))
            block = []
        else:
            block.append(line)
    if block:
        out.append("\n".join(block))
    return out


def doc_sections(texts: Mapping[str, str], words: tuple[int, int] = DOC_WORDS) -> list[str]:
    """Markdown files (name -> text) as chunks of about `words[0]`..`words[1]` words, in name order: each
    file split at headings outside code fences, a section longer than `words[1]` cut at blank lines
    outside fences (a fence is never cut, so a chunk may exceed it), then consecutive pieces of a file
    packed while they fit `words[1]`; chunks under `words[0]` dropped."""
    out: list[str] = []
    for name in sorted(texts):
        sections: list[list[str]] = [[]]
        fenced = False
        for line in texts[name].splitlines():
            if _FENCE.match(line):
                fenced = not fenced
            elif not fenced and _HEADING.match(line) and any(s.strip() for s in sections[-1]):
                sections.append([])
            sections[-1].append(line)
        pieces: list[str] = []
        for lines in sections:
            chunk: list[str] = []
            for p in _paragraphs(lines):
                if chunk and len(" ".join([*chunk, p]).split()) > words[1]:
                    pieces.append("\n\n".join(chunk))
                    chunk = []
                chunk.append(p)
            if chunk:
                pieces.append("\n\n".join(chunk))
        packed: list[str] = []
        for piece in pieces:
            if packed and len(packed[-1].split()) + len(piece.split()) <= words[1]:
                packed[-1] += "\n\n" + piece
            else:
                packed.append(piece)
        out += packed
    return [c for c in out if len(c.split()) >= words[0]]


def read_docs(rev: str = DOCS_REV, root: Path = REPO) -> dict[str, str]:
    """README.md and docs/**/*.md (not docs/bench/) at git revision `rev`, or as the working tree has them
    when `rev` is "worktree"."""
    def wanted(name: str) -> bool:
        return name.endswith(".md") and (name == "README.md" or name.startswith("docs/")) \
            and not name.startswith("docs/bench/")

    if rev == "worktree":
        names = ["README.md", *(p.relative_to(root).as_posix() for p in sorted((root / "docs").rglob("*.md")))]
        return {n: (root / n).read_text(encoding="utf-8") for n in names if wanted(n) and (root / n).is_file()}
    git = ["git", "-C", str(root)]
    listed = subprocess.run([*git, "ls-tree", "-r", "--name-only", rev, "--", "README.md", "docs"],
                            capture_output=True, text=True, check=True).stdout.split()
    return {n: subprocess.run([*git, "show", f"{rev}:{n}"], capture_output=True, text=True, check=True).stdout
            for n in listed if wanted(n)}


# --- the haystacks ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Session:
    """One LoCoMo session: where it comes from, its date and its turns (eval_locomo.Turn)."""

    source: str
    number: int
    when: datetime
    turns: tuple[ev.Turn, ...]


def sessions_by_conversation(turns: Sequence[ev.Turn]) -> dict[str, list[Session]]:
    """The sessions of every conversation, by number."""
    out: dict[str, list[Session]] = {}
    for t in turns:
        conv = out.setdefault(t.conversation, [])
        if not conv or conv[-1].number != t.session:
            conv.append(Session(t.conversation, t.session, t.when, ()))
        conv[-1] = Session(t.conversation, t.session, t.when, (*conv[-1].turns, t))
    for conv in out.values():
        conv.sort(key=lambda s: s.number)
    return out


def shift(when: datetime, source: tuple[datetime, datetime], target: tuple[datetime, datetime]) -> datetime:
    """`when` moved by the linear map of the `source` range onto the `target` range."""
    if source[1] <= source[0]:
        return target[0]
    frac = (when - source[0]) / (source[1] - source[0])
    return target[0] + (target[1] - target[0]) * frac


@dataclass(frozen=True)
class Placed:
    """A session of a haystack: its source session, its (shifted) date, whether it is the conversation's
    own, who its user is, and the documentation replies inserted after which of its turns (by index)."""

    session: Session
    when: datetime
    own: bool
    user: str
    docs: tuple[tuple[int, str], ...] = ()


@dataclass
class Haystack:
    """One conversation's namespace: its sessions in date order and the memories they make."""

    conversation: str
    sessions: list[Placed]
    memories: list[_views.ViewMemory]
    question_date: datetime
    turn_role: dict[str, str] = field(default_factory=dict)  # the conversation's dia_id -> "user"/"assistant"
    turn_speaker: dict[str, str] = field(default_factory=dict)
    turn_session: dict[str, int] = field(default_factory=dict)


def pick_distractors(conversation: str, by_conv: Mapping[str, Sequence[Session]], docs: Sequence[str],
                     sessions: int = SESSIONS, seed: int = SEED) -> list[Placed]:
    """The conversation's sessions and its seeded distractors (dates shifted, documentation replies
    placed), in date order."""
    own = list(by_conv[conversation])
    rng = random.Random(f"{seed}:{conversation}")
    pool = [s for name in sorted(by_conv) if name != conversation for s in by_conv[name]]
    drawn = rng.sample(pool, min(len(pool), max(0, sessions - len(own))))
    target = (own[0].when, own[-1].when)
    placed = [Placed(s, s.when, True, s.turns[0].speaker) for s in own]
    order = list(range(len(docs)))
    rng.shuffle(order)
    cursor = 0
    for s in drawn:
        src = by_conv[s.source]
        user = s.turns[0].speaker
        assistant_at = [i for i, t in enumerate(s.turns) if t.speaker != user]
        inserts: list[tuple[int, str]] = []
        if docs and assistant_at:
            for _ in range(rng.randint(*DOCS_PER_SESSION)):
                inserts.append((rng.choice(assistant_at), docs[order[cursor % len(docs)]]))
                cursor += 1
        placed.append(Placed(s, shift(s.when, (src[0].when, src[-1].when), target), False, user,
                             tuple(sorted(inserts, key=lambda p: p[0]))))
    placed.sort(key=lambda p: (p.when, not p.own, p.session.source, p.session.number))
    return placed


def build_haystack(conversation: str, by_conv: Mapping[str, Sequence[Session]], docs: Sequence[str],
                   sessions: int = SESSIONS, seed: int = SEED, group: int = 1) -> Haystack:
    """The conversation's namespace: memories in date order (see the module docstring for the rules).
    Memory keys: the conversation's own turns "<dia_id>", a distractor's "<source>:<dia_id>", a merged turn
    the key of its first turn; a documentation reply holds the pseudo turn "doc:<position>:<j>". `group`
    above 1 (the `--assistant-group` variant) also makes each run of up to `group` assistant turns of a
    session one memory, the user's turns in between kept as they are."""
    placed = pick_distractors(conversation, by_conv, docs, sessions, seed)
    hay = Haystack(conversation, placed, [], max(p.when for p in placed) + timedelta(days=1))
    for pos, p in enumerate(placed):
        # (key, speaker, text) in order, documentation replies after their turn
        items: list[tuple[str, str, str]] = []
        inserts = list(p.docs)
        for i, t in enumerate(p.session.turns):
            key = t.dia_id if p.own else f"{t.conversation}:{t.dia_id}"
            items.append((key, t.speaker, t.text))
            if p.own:
                hay.turn_role[t.dia_id] = "user" if t.speaker == p.user else "assistant"
                hay.turn_speaker[t.dia_id] = t.speaker
                hay.turn_session[t.dia_id] = pos
            for j, (at, text) in enumerate(inserts):
                if at == i:
                    items.append((f"doc:{pos}:{j}", "(documentation)", text))
        runs: list[list[tuple[str, str, str]]] = []
        for item in items:
            is_user = item[1] == p.user
            if runs and not is_user and runs[-1][0][1] != p.user:
                runs[-1].append(item)  # the assistant again: one long turn
            else:
                runs.append([item])
        if group > 1:  # up to `group` of the assistant's turns as one, at the first one's place
            turns_at = [i for i, r in enumerate(runs) if r[0][1] != p.user]
            firsts = {turns_at[j]: [x for i in turns_at[j : j + group] for x in runs[i]]
                      for j in range(0, len(turns_at), group)}
            runs = [firsts.get(i, r) for i, r in enumerate(runs) if i in firsts or r[0][1] == p.user]
        for run in runs:
            role = "user" if run[0][1] == p.user else "assistant"
            hay.memories.append(_views.ViewMemory(
                conversation, run[0][0], "\n\n".join(r[2] for r in run), pos, role, run[0][1],
                p.when.date().isoformat(), p.when, tuple(r[0] for r in run)))
    return hay


# --- the questions ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LongQuestion:
    """A question asked in a haystack: its text (first person or as it was), date, evidence and tags."""

    conversation: str
    index: int  # its position in the conversation's qa list
    text: str
    category: int
    evidence: tuple[str, ...]
    date: datetime
    tags: tuple[str, ...]


def ask(hay: Haystack, questions: Sequence[ev.Question], pair: tuple[str, str],
        rewrite: bool = True) -> list[LongQuestion]:
    """The conversation's questions in its haystack, tagged (`pair`: its two speakers); `rewrite` False
    keeps every question as LoCoMo asks it (an ablation; the "first person" tag still marks those the
    rule would rewrite)."""
    out = []
    for q in questions:
        roles = {hay.turn_role[e] for e in q.evidence}
        speakers = {hay.turn_speaker[e] for e in q.evidence}
        sessions = {hay.turn_session[e] for e in q.evidence}
        tags = ["all", _views.CATEGORIES[q.category]]
        tags.append(ROLE_TAGS[0] if roles == {"user"} else ROLE_TAGS[1] if roles == {"assistant"} else ROLE_TAGS[2])
        tags.append(SESSION_TAGS[len(sessions) > 1])
        if len(speakers) == 1 and len(sessions) > 1:
            tags.append(SAME_SPEAKER)
        text = q.text
        if roles == {"user"} and len(speakers) == 1:
            (who,) = speakers
            rewritten = first_person(q.text, who, pair[1] if who == pair[0] else pair[0])
            if rewritten is not None:
                text = rewritten if rewrite else q.text
                tags.append(FIRST_PERSON)
        out.append(LongQuestion(q.conversation, q.index, text, q.category, q.evidence, hay.question_date,
                                tuple(tags)))
    return out


@dataclass
class LongView:
    """The haystacks of the chosen conversations, as one bench/_views.View, and their questions."""

    view: _views.View
    questions: list[LongQuestion]
    haystacks: dict[str, Haystack]
    docs: int  # documentation chunks available
    docs_hash: str


def build(turns: Sequence[ev.Turn], questions: Sequence[ev.Question], conversations: Sequence[str],
          docs: Sequence[str], sessions: int = SESSIONS, seed: int = SEED, group: int = 1,
          rewrite: bool = True) -> LongView:
    """The view of `conversations` (distractors from every conversation of `turns`; `group`: see
    `build_haystack`, `rewrite`: see `ask`)."""
    by_conv = sessions_by_conversation(turns)
    memories: list[_views.ViewMemory] = []
    asked: list[LongQuestion] = []
    hays: dict[str, Haystack] = {}
    for conv in conversations:
        hay = hays[conv] = build_haystack(conv, by_conv, docs, sessions, seed, group)
        memories += hay.memories
        pair = tuple(dict.fromkeys(t.speaker for s in by_conv[conv] for t in s.turns))
        asked += ask(hay, [q for q in questions if q.conversation == conv], (pair[0], pair[-1]), rewrite)
    digest = hashlib.blake2b("\0".join(docs).encode("utf-8"), digest_size=8).hexdigest()
    return LongView(_views.View("longdev", memories), asked, hays, len(docs), digest)


# --- the evaluation --------------------------------------------------------------------------------------

@dataclass
class Run:
    """One system's per-question scores (tags, R@5, R@10, NDCG@10) and its cost, or why it was skipped."""

    name: str
    rows: list[tuple[tuple[str, ...], float, float, float]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    ingest_seconds: float = 0.0
    memories: int = 0
    now_passed: bool = False
    skipped: str | None = None

    def mean(self, tag: str, col: int) -> float | None:
        vals = [(r[1], r[2], r[3])[col - 1] for r in self.rows if tag in r[0]]  # col: 1 R@5, 2 R@10, 3 NDCG
        return float(np.mean(vals)) if vals else None

    def summary(self) -> dict[str, Any]:
        if self.skipped is not None:
            return {"skipped": self.skipped}
        lat = np.asarray(self.latencies_ms)
        return {
            "per_category": {t: {"questions": sum(t in r[0] for r in self.rows),
                                 **{m: self.mean(t, i + 1) for i, m in enumerate(_views.METRICS)}} for t in TAGS},
            "ingest_seconds": self.ingest_seconds, "memories": self.memories,
            "ingest_per_s": self.memories / self.ingest_seconds if self.ingest_seconds else None,
            "search_ms": {"p50": float(np.percentile(lat, 50)) if len(lat) else None,
                          "p95": float(np.percentile(lat, 95)) if len(lat) else None},
            "question_date_passed": self.now_passed,
        }


def score(run: Run, searcher: Any, lv: LongView, ids: Mapping[str, str], question_date: bool) -> Run:
    """Search every question (k = 10) and score it; `ids` maps the searcher's hit ids to view ids."""
    takes_now = question_date and "now" in inspect.signature(searcher.search).parameters
    run.now_passed = takes_now
    holder = lv.view.holder
    for q in lv.questions:
        kw: dict[str, Any] = {"namespace": q.conversation, "k": 10}
        if takes_now:
            kw["now"] = q.date
        t0 = time.perf_counter()
        hits = searcher.search(q.text, **kw)
        run.latencies_ms.append((time.perf_counter() - t0) * 1e3)
        got = [ids.get(h.id, h.id) for h in hits]
        rel = _views.evidence_memories(holder, q.conversation, q.evidence)
        run.rows.append((q.tags, _views.recall_at(got, rel, 5), _views.recall_at(got, rel, 10),
                         _views.ndcg_at(got, rel, 10)))
    return run


def run_plain(lv: LongView) -> Run:
    """Plain BM25 (bench/_views.PlainBM25) on the view's memories."""
    missing = _views.bm25s_missing()
    if missing is not None:
        return Run(_views.PLAIN, skipped=missing)
    bm = _views.PlainBM25(lv.view)
    run = Run(_views.PLAIN, ingest_seconds=bm.index_seconds, memories=len(lv.view.memories))
    return score(run, bm, lv, {}, question_date=False)


def run_store(lv: LongView, profile: str, question_date: bool = True) -> Run:
    """The store through its public API with default arguments: one add_many per namespace, then
    search(question, namespace=..., k=10)."""
    import engramdb

    try:
        db = engramdb.open(profile=profile)
    except ImportError as exc:  # the profile's model is not installed (MiniLMWeightsMissing): report it
        return Run(profile, skipped=f"{type(exc).__name__}: {exc}")
    run = Run(profile, memories=len(lv.view.memories))
    ids: dict[str, str] = {}
    try:
        for ns, hay in lv.haystacks.items():
            records = [{"content": m.content, "namespace": ns, "role": m.role, "session_id": f"s{m.session:02d}",
                        "valid_from": m.when} for m in hay.memories]
            t0 = time.perf_counter()
            added = db.add_many(records)
            run.ingest_seconds += time.perf_counter() - t0
            ids.update({sid: m.id for sid, m in zip(added, hay.memories)})
        return score(run, db, lv, ids, question_date)
    finally:
        db.close()


def _rr(run: Run, tag: str) -> str:
    r5, r10 = run.mean(tag, 1), run.mean(tag, 2)
    return "-" if r5 is None or r10 is None else f"{r5:.3f} / {r10:.3f}"


def _diff(a: Run, b: Run, tag: str) -> str:
    vals = [(a.mean(tag, c), b.mean(tag, c)) for c in (1, 2)]
    if any(x is None or y is None for x, y in vals):
        return "-"
    return " / ".join(f"{(x - y) * 100:+.1f}" for x, y in vals)  # type: ignore[operator]


def table(base: Run, run: Run) -> str:
    """A markdown table per category: n, plain BM25 and the store R@5 / R@10, the difference in points,
    NDCG@10 of both."""
    lines = [f"| category | n | plain BM25 | {run.name} | difference (points) | NDCG@10 plain / {run.name} |",
             "|---|---|---|---|---|---|"]
    for tag in TAGS:
        n = sum(tag in r[0] for r in run.rows)
        if not n:
            continue
        nd = (base.mean(tag, 3), run.mean(tag, 3))
        nds = "-" if None in nd else f"{nd[0]:.3f} / {nd[1]:.3f}"
        lines.append(f"| {tag} | {n} | {_rr(base, tag)} | {_rr(run, tag)} | {_diff(run, base, tag)} | {nds} |")
    return "\n".join(lines)


def cost(run: Run) -> str:
    s = run.summary()
    return (f"{run.name}: ingest {run.memories:,} memories in {run.ingest_seconds:.1f} s "
            f"({s['ingest_per_s'] or 0:,.0f}/s); search p50 {s['search_ms']['p50']:.2f} ms, "
            f"p95 {s['search_ms']['p95']:.2f} ms" + ("; question date passed as now=" if run.now_passed else ""))


def describe(lv: LongView) -> str:
    """The haystacks' sizes and what their turns are like."""
    words = [len(m.content.split()) for m in lv.view.memories]
    asst = [w for w, m in zip(words, lv.view.memories) if m.role == "assistant"]
    per = [len(h.memories) for h in lv.haystacks.values()]
    own = [sum(p.own for p in h.sessions) for h in lv.haystacks.values()]
    sess = [len(h.sessions) for h in lv.haystacks.values()]
    return (f"{len(lv.haystacks)} haystacks: {np.mean(sess):.0f} sessions each ({np.mean(own):.0f} own), "
            f"{np.mean(per):.0f} memories each ({min(per)}-{max(per)}); words per memory mean {np.mean(words):.0f}, "
            f"assistant turns mean {np.mean(asst):.0f}, {sum(w >= 100 for w in asst)} assistant turns of 100+ "
            f"words; {lv.docs} documentation chunks ({lv.docs_hash}); {len(lv.questions)} questions, "
            f"{sum(FIRST_PERSON in q.tags for q in lv.questions)} in the first person")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=_corpus.LOCOMO, help="locomo10.json (read in place)")
    ap.add_argument("--profiles", default="default,minilm", help="comma separated, run in this order")
    ap.add_argument("--limit-conversations", type=int, default=None, metavar="N",
                    help="haystacks of the first N conversations only (distractors still from all)")
    ap.add_argument("--sessions", type=int, default=SESSIONS, help="sessions per haystack")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--no-docs", action="store_true", help="ablation: no documentation replies")
    ap.add_argument("--no-first-person", action="store_true", help="ablation: ask every question as LoCoMo does")
    ap.add_argument("--assistant-group", type=int, default=1, metavar="N",
                    help="also make up to N of a session's assistant turns one memory (1: only consecutive "
                         "turns merge, which LoCoMo never has)")
    ap.add_argument("--docs-rev", default=DOCS_REV, help='git revision of the documentation, or "worktree"')
    ap.add_argument("--question-date", choices=("auto", "off"), default="auto",
                    help="auto: pass the question date as now= when search() takes it")
    ap.add_argument("--json", type=Path, default=None, metavar="PATH", help="write every number here")
    args = ap.parse_args(argv)
    if (why := ev.editable_refused()) is not None:
        print(why, file=sys.stderr)
        return 2
    if not args.data.exists():
        print(f"no LoCoMo file at {args.data} (pass --data)", file=sys.stderr)
        return 2
    import engramdb

    ds = ev.load_locomo(args.data)
    convs = list(dict.fromkeys(t.conversation for t in ds.turns))[: args.limit_conversations]
    docs = [] if args.no_docs else doc_sections(read_docs(args.docs_rev))
    lv = build(ds.turns, ds.questions, convs, docs, args.sessions, args.seed, args.assistant_group,
               not args.no_first_person)
    print(f"engramdb {engramdb.__version__} from {Path(engramdb.__file__).parent}; data {args.data}")
    print(describe(lv))
    base = run_plain(lv)
    if base.skipped is not None:
        print(f"{_views.PLAIN} skipped: {base.skipped}", file=sys.stderr)
        return 2
    runs = []
    for profile in [p.strip() for p in args.profiles.split(",") if p.strip()]:
        run = run_store(lv, profile, args.question_date == "auto")
        runs.append(run)
        print()
        if run.skipped is not None:
            print(f"profile {profile} skipped: {run.skipped}")
            continue
        print(f"profile {profile}, default call vs plain BM25 (R@5 / R@10):")
        print(table(base, run))
        print(cost(base))
        print(cost(run), flush=True)
    if args.json is not None:
        out = {
            "engramdb": {"version": engramdb.__version__, "file": engramdb.__file__},
            "args": {k: str(v) for k, v in vars(args).items()},
            "view": {"haystacks": {c: {"sessions": len(h.sessions), "own": sum(p.own for p in h.sessions),
                                       "memories": len(h.memories)} for c, h in lv.haystacks.items()},
                     "docs_chunks": lv.docs, "docs_hash": lv.docs_hash, "summary": describe(lv)},
            _views.PLAIN: base.summary(),
            "profiles": {r.name: r.summary() for r in runs},
            # [conversation, qa index, tags, R@5, R@10, NDCG@10]: numbers only, no LoCoMo text
            "per_question": {r.name: [[q.conversation, q.index, list(row[0]), *row[1:]]
                                      for q, row in zip(lv.questions, r.rows)] for r in [base, *runs]},
        }
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
