"""Typed edges as the verbs see them (link, unlink, edges) and edge inference (H2)."""
