"""Stop 50b adversary: a dated question brings back the candidates the pipeline's topic stage left out.

`search(strategy="pipeline", topics=True)`: "its topic stage keeps the candidates in the query's 3
nearest topics of the namespace (C4) or in none" (Store.search's docstring). Stop 50 adds, after
every stage, the memories said in a period the question names (`_said_then`), with no regard for
that stage: a question about marathon training "last week" gets last week's sourdough and croissant
notes (members of the baking topics the stage dropped) at score 0.08, filling the places the topic
filter emptied. Public API only.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import engramdb

NOW = datetime(2024, 6, 14, 12, tzinfo=timezone.utc)
RUNNING = ["marathon training run pace", "interval running track", "long run sunday miles"]
BAKING = ["sourdough bread starter", "baking croissants butter", "oven temperature bread crust"]


def test_the_topic_stage_holds_for_a_question_that_names_a_date() -> None:
    db = engramdb.open()
    for i in range(40):
        day = NOW - timedelta(days=40 - i)
        db.add(f"{RUNNING[i % 3]} note {i}", namespace="u", valid_from=day)
        db.add(f"{BAKING[i % 3]} note {i}", namespace="u", valid_from=day)
    topics = db.topics("u")
    baking = {m for t in topics if any(w in t.label for w in ("bread", "sourdough", "croissants", "oven", "baking",
                                                             "butter", "crust", "temperature", "starter"))
              for m in t.members}
    assert baking, [t.label for t in topics]  # the premise: the baking notes have topics of their own
    plain = db.search("marathon running pace", namespace="u", strategy="pipeline", topics=True, now=NOW, k=80,
                      log=False)
    assert not [h for h in plain if h.id in baking]  # the stage leaves the baking topics out
    dated = db.search("marathon running pace last week", namespace="u", strategy="pipeline", topics=True, now=NOW,
                      k=80, log=False)
    back = [h.memory.content for h in dated if h.id in baking]
    assert not back, f"{len(back)} memories of topics the stage left out came back: {back[:3]}"
    db.close()
