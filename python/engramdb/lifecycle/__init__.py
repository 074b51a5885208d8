"""Keeping a namespace sound over time: contradictions (H5); consolidation tiers and pruning
join here. Above retrieval and importance, below the store facade."""
