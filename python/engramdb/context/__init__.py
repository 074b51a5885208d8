"""Context assembly (C6, K2, K3): the memories that matter for a prompt, under a token budget, each
with why it is there. Pure logic (tokens, curation, rendering); the store facade gathers the
candidates. Beside importance, lifecycle and topics; below the facade."""
