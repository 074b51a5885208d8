"""Retrieval methods and their fusion (H1-H4, C1-C3): BM25, graph expansion, weighted RRF,
routing of enhancer spaces and recency factors."""
