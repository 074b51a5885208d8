"""Importance learned from use (E2-E6, C5): the ELO formulas, the ratings, the batch update from the
access log and the annotation of hits. Above retrieval, below the store facade."""
