"""Themes (H8): dense groups of what memories say, each holding together and apart from the rest.

Three steps, with the same settings for every namespace and profile:

1. DBSCAN over the memories' main-space unit vectors, cosine distance, at least 3 memories a
   cluster (scikit-learn's labels, as `kernels.dbscan_cosine`), at a scale (eps) of SCALES.
2. Each member must stand apart: its silhouette (b - a) / max(a, b), a its mean cosine distance
   to the rest of its theme, b the least mean distance to another theme, is at least 0.5: it is
   at least twice as near its own theme as any other (Kaufman and Rousseeuw's "reasonable
   structure"). Round by round, each theme lets go of its worst members under 0.5 (a quarter of
   them, at least one); a theme left with fewer than 3 members, or under confidence 0.6 (the mean
   cosine of its members to their centroid), is dissolved, and of two neighbouring themes that
   would each dissolve for the other (fragments of one subject) only the worse does in a round.
   Members let go are in no theme and count for none.
3. The scale is the densest of SCALES, SPEC's eps 0.15 first, at which two themes or more stand
   apart and hold a tenth of the memories (small talk aside); where none does, the one whose
   themes hold the most memories (the densest of equals). Two themes, because a silhouette
   compares a theme with another; a tenth, because two groups of near-paraphrases among 2,000
   chat turns say little of what the namespace is about.

Why not SPEC's eps 0.15 alone (issue 29): it finds near-paraphrases only, which chat turns rarely
are: no theme in any LoCoMo conversation in the default profile, themes in 3 of 10 with MiniLM.
A wider eps alone chains groups through the turns between them (MiniLM, every conversation: mean
silhouettes 0.30-0.63 at 0.25, 0.23-0.43 at 0.30). With steps 2 and 3 every conversation has
themes with MiniLM, and notes and document chunks, where 0.15 found themes, have more of them,
as pure (bench/RESULTS.md, "Themes (H8)").

A theme's silhouette is the mean of its members'. When one theme is left, b is the mean distance
to the memories DBSCAN put in no cluster (the rest of the namespace); when there is no rest either,
the silhouette is 0 and the theme is kept as DBSCAN found it. Each theme gets a label from the
labeler (built-in: the distinctive terms of topics).

Small talk (`smalltalk.SmallTalk`) is set aside first, as topics do (issue 29): chat's "Thanks!",
"Wow, that's awesome!" are each other's near duplicates, and DBSCAN chained them into one theme
of 65-158 turns in LoCoMo's conversations; it is in no theme.

Cost: one pass of n x n cosines in row blocks, as `kernels.dbscan_cosine` makes but in float32,
keeping the pairs within the widest scale: each scale's DBSCAN is a pass over those pairs (its
labels are the kernel's, to float32 rounding); past PAIRS_HELD pairs the widest scales are given
up, so memory stays bounded in a large dense namespace. Step 2 works from each theme's summed vectors (a
member's mean distance to a group is 1 - its cosine to the group's mean vector), so it needs no
distance matrix: per round, the members times the changed sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..kernels.sets import unique

SCALES = (0.15, 0.20, 0.25, 0.30)  # DBSCAN's eps, cosine distance: SPEC's 0.15 first
MIN_MEMBERS, MIN_CONFIDENCE, MIN_SILHOUETTE = 3, 0.6, 0.5
ENOUGH = 0.1  # of the memories (small talk aside) in two themes or more: the scale is dense enough
BLOCK = 1024  # rows of cosines held at once
PAIRS_HELD = 20_000_000  # pairs within the widest scale held at most (12 bytes each)


@dataclass(frozen=True)
class Theme:
    """One theme of a namespace."""

    label: str
    members: tuple[str, ...]
    silhouette: float
    confidence: float


def _silhouettes(dots: np.ndarray, x: np.ndarray, code: np.ndarray, size: np.ndarray, live: np.ndarray,
                 rest: np.ndarray, n_rest: int) -> np.ndarray:
    """Each member's silhouette from its cosines to the themes' summed vectors (`dots`): a is
    (size - its cosine to its own sum) / (size - 1), its own cosine 1 taken out; b the least
    1 - cosine to another live theme's mean; with no other theme, to the rest's mean."""
    at = np.arange(len(code))
    a = (size[code] - dots[at, code]) / np.maximum(size[code] - 1, 1)
    cols = np.flatnonzero(live)
    if len(cols) >= 2:
        other = 1.0 - dots[:, cols] / size[cols]
        other[at, np.searchsorted(cols, code)] = np.inf
        b = other.min(axis=1)
    else:
        b = 1.0 - (x @ rest) / n_rest
    a, b = np.maximum(a, 0.0), np.maximum(b, 0.0)
    out: np.ndarray = np.divide(b - a, np.maximum(a, b), out=np.zeros_like(a), where=np.maximum(a, b) > 0)
    return out


def _apart(u: np.ndarray, labels: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Step 2 on DBSCAN's `labels`: (each kept theme's rows, each row's silhouette (0 outside a
    theme), each kept theme's confidence). The rounds rank members by float32 cosines (half the
    time of float64: the products are most of the cost); the silhouettes returned are float64."""
    rows = np.flatnonzero(labels >= 0)
    sil = np.zeros(len(u))
    if not len(rows):
        return [], sil, np.zeros(0)
    _, code = np.unique(labels[rows], return_inverse=True)
    k = int(code.max()) + 1
    x = u[rows]
    size = np.bincount(code, minlength=k).astype(np.float64)
    by = np.argsort(code, kind="stable")
    sums = np.add.reduceat(x[by], np.r_[0, np.cumsum(size[:-1])].astype(np.int64), axis=0)  # each theme has rows
    rest = u[labels < 0].sum(axis=0)  # DBSCAN's noise: what a lone theme is apart from
    n_rest = len(u) - len(rows)
    live = (size >= MIN_MEMBERS) & (np.linalg.norm(sums, axis=1) >= MIN_CONFIDENCE * size)
    stay = live[code]
    rows, code, x = rows[stay], code[stay], x[stay]
    x32 = x.astype(np.float32)
    dots = x32 @ sums.astype(np.float32).T  # each member's cosine to every theme's summed vectors
    while True:  # rows, code, x, x32 and dots hold the members still in a theme, nothing else
        loose = live & ((size < MIN_MEMBERS) | (np.linalg.norm(sums, axis=1) < MIN_CONFIDENCE * size))
        if loose.any():  # too small or too spread: dissolved, its members in no theme
            live &= ~loose
            stay = live[code]
            rows, code, x, x32, dots = rows[stay], code[stay], x[stay], x32[stay], dots[stay]
        several = live.sum() >= 2
        if not (several or (live.any() and n_rest)):
            break  # a theme alone in the namespace: nothing to be apart from (silhouette 0)
        s = _silhouettes(dots, x, code, size, live, rest, n_rest)
        low = np.flatnonzero(s < MIN_SILHOUETTE)
        if not len(low):
            break
        order = low[np.lexsort((low, s[low], code[low]))]  # by theme, then worst first, then row
        first = np.r_[True, code[order][1:] != code[order][:-1]]
        rank = np.arange(len(order)) - np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
        per = np.bincount(code[low], minlength=k)[code[order]]
        # a quarter of each theme's members under 0.5 a round, its worst first (one at a time would
        # take a round each along a long chain), never below MIN_MEMBERS: that is dissolving,
        # which waits for the worse of two neighbouring fragments, as each fails for the other
        worst = order[(rank < np.maximum(per // 4, 1)) & (rank < size[code[order]] - MIN_MEMBERS)]
        ends = order[first & (size[code[order]] <= MIN_MEMBERS)]
        if len(ends) and several:
            cols = np.flatnonzero(live)
            near = 1.0 - dots[ends][:, cols] / size[cols]
            near[np.arange(len(ends)), np.searchsorted(cols, code[ends])] = np.inf
            rival = cols[near.argmin(axis=1)]  # the theme each dissolving one is nearest
            score = np.full(k, np.inf)
            score[code[ends]] = s[ends]
            ends = ends[(s[ends] < score[rival]) | ((s[ends] == score[rival]) & (code[ends] < rival))]
        worst = np.r_[worst, ends].astype(np.int64)
        np.subtract.at(sums, code[worst], x[worst])
        np.subtract.at(size, code[worst], 1.0)
        touched = unique(code[worst])
        stay = np.ones(len(rows), bool)
        stay[worst] = False
        rows, code, x, x32, dots = rows[stay], code[stay], x[stay], x32[stay], dots[stay]
        dots[:, touched] = x32 @ sums[touched].astype(np.float32).T
    if live.sum() >= 2 or (live.any() and n_rest):
        sil[rows] = _silhouettes(x @ sums.T, x, code, size, live, rest, n_rest)
    kept = [rows[code == c] for c in np.flatnonzero(live)]
    conf = np.array([np.linalg.norm(sums[c]) / size[c] for c in np.flatnonzero(live)])
    return kept, sil, conf


def _pairs(u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(row, column, cosine distance) of every pair of distinct rows within the widest scale, and
    how many SCALES those pairs serve: past PAIRS_HELD pairs the widest scales are given up, so a
    large dense namespace never holds them all (the densest is kept whatever it holds). Computed as
    `kernels.dbscan_cosine` does (1 - the dot of unit rows, clipped to [0, 2], in row blocks) but
    in float32: this product is most of the themes' cost, and float32 halves it."""
    v = u.astype(np.float32)
    scales = len(SCALES)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    dist: list[np.ndarray] = []
    held = 0
    for start in range(0, len(v), BLOCK):
        d = v[start:start + BLOCK] @ v.T
        np.subtract(np.float32(1.0), d, out=d)
        np.clip(d, 0.0, 2.0, out=d)
        r, c = np.nonzero(d <= SCALES[scales - 1])
        keep = r + start != c
        rows.append((r[keep] + start).astype(np.int32))
        cols.append(c[keep].astype(np.int32))
        dist.append(d[r[keep], c[keep]])
        held += len(dist[-1])
        while held > PAIRS_HELD and scales > 1:
            scales -= 1
            near = [x <= SCALES[scales - 1] for x in dist]
            rows, cols, dist = ([x[m] for x, m in zip(xs, near)] for xs in (rows, cols, dist))
            held = sum(len(x) for x in dist)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(dist), scales


def _dbscan(n: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """DBSCAN labels (-1 for noise) from the pairs of distinct rows within eps: scikit-learn's
    labels (as `kernels.dbscan_cosine`): core rows have MIN_MEMBERS neighbours counting
    themselves, clusters are the core rows linked through core rows, numbered by their first row,
    and a border row joins the first cluster of its core neighbours. Several eps cost one pass of
    cosines this way (`_pairs` at the widest), not one each."""
    core = np.bincount(rows, minlength=n) + 1 >= MIN_MEMBERS
    linked = core[rows] & core[cols]
    a, b = rows[linked], cols[linked]
    root = np.arange(n)
    while True:  # each core row takes the least row it reaches: hook to the least neighbour, then jump
        hooked = root.copy()
        np.minimum.at(hooked, a, root[b])
        hooked = hooked[hooked]
        if np.array_equal(hooked, root):
            break
        root = hooked
    labels = np.full(n, -1, np.int64)
    firsts = unique(root[core])
    labels[core] = np.searchsorted(firsts, root[core])
    border = ~core[rows] & core[cols]
    first = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(first, rows[border], labels[cols[border]])
    taken = ~core & (first < np.iinfo(np.int64).max)
    labels[taken] = first[taken]
    return labels


def theme_groups(vectors: np.ndarray, aside: np.ndarray | None = None) -> tuple[list[tuple[list[int], float, float]],
                                                                                  float | None]:
    """(member indices, silhouette, confidence) of each theme, biggest first, and the mean
    silhouette of every member of a theme (None without a theme). The rows `aside` (a bool per
    row: small talk) are clustered with none and are in no theme."""
    if aside is not None and aside.any():
        keep = np.flatnonzero(~np.asarray(aside, bool))
        inner, overall = theme_groups(np.asarray(vectors)[keep])
        return [([int(keep[i]) for i in m], sil, conf) for m, sil, conf in inner], overall
    x = np.asarray(vectors, np.float64)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    u = np.divide(x, n, out=np.zeros_like(x), where=n > 0)
    if len(u) < MIN_MEMBERS:
        return [], None
    rows, cols, dist, scales = _pairs(u)
    found: tuple[list[np.ndarray], np.ndarray, np.ndarray] = ([], np.zeros(len(u)), np.zeros(0))
    most = 0
    for eps in SCALES[:scales]:  # the densest scale whose themes say enough; else the one that says most
        near = dist <= eps
        got = _apart(u, _dbscan(len(u), rows[near], cols[near]))
        held = sum(len(m) for m in got[0])
        if held > most:
            found, most = got, held
        if len(got[0]) >= 2 and held >= ENOUGH * len(u):
            found = got
            break
    if not found[0]:
        return [], None
    kept, sil, conf = found
    out = [(members.tolist(), float(sil[members].mean()), float(c)) for members, c in zip(kept, conf)]
    return sorted(out, key=lambda t: (-len(t[0]), t[0][0])), float(sil[np.concatenate(kept)].mean())


def divergence(query: np.ndarray, recent: np.ndarray, low: float) -> tuple[bool, float, int]:
    """(far, best cosine, index of the nearest) of a query against a session's recent memories:
    far when even the nearest is below the space's `low` threshold (C6's divergence alert)."""
    if len(recent) == 0:
        return False, 0.0, -1
    q = np.asarray(query, np.float64).reshape(-1)
    r = np.asarray(recent, np.float64)
    sims = (r @ q) / np.maximum(np.linalg.norm(r, axis=1) * max(float(np.linalg.norm(q)), 1e-12), 1e-12)
    i = int(np.argmax(sims))
    return bool(sims[i] < low), float(sims[i]), i


def labelled(groups: Sequence[tuple[list[int], float, float]], ids: Sequence[str], labels: Sequence[str]) -> list[Theme]:
    return [Theme(label, tuple(ids[i] for i in members), round(sil, 4), round(conf, 4))
            for (members, sil, conf), label in zip(groups, labels)]


__all__ = ["Theme", "divergence", "labelled", "theme_groups"]
