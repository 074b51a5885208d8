"""Session support: a candidate whose session says more about the query ranks higher.

What a person tells over a conversation is spread over several turns of one session ("We
adopted a puppy" ... "She's a beagle" ... "We named her Biscuit"), and a question about it
matches each of them in part. A turn alone may match weakly; a session where several turns
match is where the answer is. So the hybrid ranks each candidate by its own match plus
`SESSION_SHARE` of the best match among the *other* candidates of its session (its session's
support). A turn that does not match at all gets none. The support only orders: a hit's score
stays its own match (retrieval/scored.py).

Measured on every view (bench/RESULTS.md "Session support"): at a third, the LoCoMo turns view
+2.1 / +1.7 points R@5 / R@10, the long-history views +2.8 / +2.7 and +3.4 / +3.8; at a half
the turns view gained less and the long-turn view's multi-hop and temporal questions lost.
"""

from __future__ import annotations

import numpy as np

from ..storage.view import View

__all__ = ["SESSION_SHARE", "session_support"]

SESSION_SHARE = 1 / 3


def session_support(view: View, keys: np.ndarray, own: np.ndarray) -> np.ndarray:
    """For each candidate key that matches on its own (`own` > 0), the best `own` score among the
    other candidates of its session; 0 for the others (no session, alone in it among the
    candidates, or no match of its own: a session never lifts a turn that says nothing of the
    query, which would bring its every turn along)."""
    out = np.zeros(len(keys))
    if len(keys) < 2:
        return out
    own = np.asarray(own, np.float64)
    sessions = view.session_keys_at(keys)
    has = np.flatnonzero((sessions != 0) & (own > 0))
    if len(has) < 2:
        return out
    _, group = np.unique(sessions[has], return_inverse=True)
    g, s = group.reshape(-1), own[has]
    order = np.lexsort((-s, g))  # by session, best first within one
    gs = g[order]
    first = np.ones(len(order), bool)
    first[1:] = gs[1:] != gs[:-1]
    second = np.zeros(len(order), bool)
    second[1:] = first[:-1] & ~first[1:]
    best, runner = np.zeros(int(g.max()) + 1), np.zeros(int(g.max()) + 1)
    best[gs[first]] = s[order[first]]
    runner[gs[second]] = s[order[second]]
    is_best = np.zeros(len(has), bool)
    is_best[order[first]] = True
    out[has] = np.where(is_best, runner[g], best[g])  # the best of the others
    return out
