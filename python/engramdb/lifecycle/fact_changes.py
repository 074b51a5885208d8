"""Whether a newer short fact changes an older one (issue 29): the facts `facts.read` finds in two
statements, weighed pair by pair.

`compare(old, new)`, on two facts:

- a different subject: "apart" when they are told apart (someone else's: "Sam" / "Sam's sister",
  "my rent" / "my sister's rent"; two of a kind: "the team meeting" / "the board meeting"; two
  one-word subjects: "Maya" / "Tom"), else nothing tells (None);
- the same subject, another relation: a changed number when both count the same thing ("runs 12
  nodes" / "has 20 nodes"), else "apart";
- the same subject and relation: amounts changed (neither set holds the other: "in March" / "on
  14 March" refines), the same polarity, one's terms within the other's: "number", or "date" when
  the value says a time; polarity flipped on the same value (terms and amounts one within the
  other, or the same head term: "drink alcohol socially" / "never drink alcohol"): "negation";
  both positive, a single-valued relation, each value holding a term the other does not, neither
  a bare kind the other names ("a bank" / "Barclays"): "update"; else "agree" (a paraphrase, a
  refinement, another value of a relation holding several).

`judge` keeps the strongest verdict over all pairs of the two statements' facts: a change
(negation, then number or date, then update), else "agree", else "apart".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .facts import Fact


def compare(old: Fact, new: Fact) -> tuple[str, str] | None:
    """How two facts relate: ("number" | "date" | "negation" | "update", why) when the newer changes
    the older, ("agree", why) when it does not, ("apart", why) when they speak of different
    subjects or say different things of one, None when nothing tells."""
    if old.subject != new.subject:
        why = _apart(old.subject, new.subject)
        return ("apart", why) if why is not None else None
    ta, tb, na, nb = old.terms, new.terms, old.amounts, new.amounts
    nested, amounts_nested = ta <= tb or tb <= ta, na <= nb or nb <= na
    what = f"{' '.join(old.subject)} / {old.relation}"
    if old.relation != new.relation:
        if na and nb and not amounts_nested and ta == tb and ta and old.positive == new.positive:
            cue = "date" if old.when or new.when else "number"  # "runs 12 nodes" / "has 20 nodes"
            return cue, f"{what}, {new.relation}: {', '.join(sorted(na))} -> {', '.join(sorted(nb))}"
        return "apart", f"{what} / {new.relation}: different relations"
    if not amounts_nested:
        if nested and old.positive == new.positive:
            cue = "date" if old.when or new.when else "number"
            return cue, f"{what}: {', '.join(sorted(na))} -> {', '.join(sorted(nb))}"
        return "agree", f"{what}: another thing counted or dated"
    if old.positive != new.positive:
        if nested or (old.head is not None and old.head == new.head):
            return "negation", f"{what}: {'said' if old.positive else 'denied'}, then {'denied' if old.positive else 'said'}"
        return "agree", f"{what}: another value denied"
    if nested:
        return "agree", f"{what}: the same value{'' if ta == tb else ', refined'}"
    if old.vague != new.vague:
        return "agree", f"{what}: {old.value} / {new.value}, one a kind the other names"
    if old.positive and old.single and new.single:
        return "update", f"{what}: {old.value or '-'} -> {new.value or '-'}"
    return "agree", f"{what}: holds several values"


def _apart(a: tuple[str, ...], b: tuple[str, ...]) -> str | None:
    """Why two subjects are different things, or None when nothing tells: someone else's ("Sam" /
    "Sam's sister", "my rent" / "my sister's rent", "Raj's car" / "Raj's boss's car"), two of a
    kind ("the team meeting" / "the board meeting"), or two one-word subjects ("Maya" / "Tom",
    "I" / "my husband")."""
    if a[-1] == b[-1]:
        pa, pb = a[:-1], b[:-1]
        if (pa and pb) or "'s" in pa + pb:
            return f"{' '.join(a)} / {' '.join(b)}: {'someone else' if chr(39) + 's' in pa + pb else 'two'} of a kind"
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if long_[:len(short) + 1] == (*short, "'s"):
        return f"{' '.join(short)} / {' '.join(long_)}: someone else's"
    if len(a) == 1 and len(b) == 1:
        return f"{a[0]} / {b[0]}: two subjects"
    return None


def judge(old: Sequence[Fact], new: Sequence[Fact],
          keep: Callable[[Fact, Fact], bool] | None = None) -> tuple[str, str] | None:
    """The strongest verdict over two statements' facts: a change if a pair of facts says one
    (negation, then number and date, then update) and `keep` (if given) accepts the pair, else
    "agree" if a pair agrees, else "apart" if a pair tells them apart, else None."""
    best: tuple[str, str] | None = None
    apart: tuple[str, str] | None = None
    for a in old:
        for b in new:
            if a.subject != b.subject:  # cheap first: most pairs speak of different subjects
                if apart is None and best is None:
                    why = _apart(a.subject, b.subject)
                    apart = ("apart", why) if why is not None else None
                continue
            got = compare(a, b)
            if got is None or (best is not None and _RANK[got[0]] <= _RANK[best[0]]):
                continue
            if got[0] not in ("agree", "apart") and keep is not None and not keep(a, b):
                continue
            best = got
    if best is None or (apart is not None and _RANK[best[0]] < _RANK["apart"]):
        return apart
    return best


_RANK = {"negation": 5, "number": 4, "date": 4, "update": 3, "agree": 2, "apart": 1}


__all__ = ["compare", "judge"]
