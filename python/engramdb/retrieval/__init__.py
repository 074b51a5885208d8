"""Retrieval: a search plan (plan.py) run against one snapshot (search.py) by strategies built
from stages (strategies.py) over one module per method: dense, lexical (BM25, RM3 feedback),
graph, conversation neighbours, shortlist rescoring; fusion, routing and recency beside them."""
