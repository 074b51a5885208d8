"""LangGraph's `BaseStore` over an engramdb store: `EngramStore` (see `store.py` for the mapping
and what differs from LangGraph's own stores, `names.py` for how namespaces and keys are stored).

Needs LangGraph 1.x: `pip install "engramdb[langgraph]"`.
"""

try:
    import langgraph.store.base  # noqa: F401 - checked here so the error says what to install
except ImportError as exc:  # pragma: no cover - the test extra installs it
    raise ImportError("engramdb.integrations.langgraph needs LangGraph: pip install 'engramdb[langgraph]' "
                      f"({exc})") from exc

from .engram_store import EngramStore
from .names import decode_namespace, encode_namespace, item_id

__all__ = ["EngramStore", "decode_namespace", "encode_namespace", "item_id"]
