"""Context assembly (C6, K1-K3, K6, K7): the memories that matter for a prompt, under a token budget,
each with why it is there. Pure logic (tokens, the navigator's walk, the handoff's budgets and duals,
curation, rendering, curiosity items); the store facade gathers the candidates and the
links. Beside lifecycle and topics, above importance; below the facade."""
