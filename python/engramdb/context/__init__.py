"""Context assembly (C6, K1-K3, K6, K7): the memories that matter for a prompt, under a token budget,
each with why it is there, laid out as a person would paste them. `assemble` (assemble.py) is the
pipeline over a snapshot, the search's hits, the indexes and the ratings (reads.py reads them); the
rest is pure logic (tokens, the navigator's walk, the handoff's budgets and duals, curation, the
lines and sections, curiosity items). Beside lifecycle and topics, above importance; below the
facade, which keeps the verb (store/context_verbs.py)."""
