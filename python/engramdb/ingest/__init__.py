"""Ingest: a batch of records -> validated Arrow rows (intake), every space's vectors
(embedding), and the duplicates among them (dedup)."""
