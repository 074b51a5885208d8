"""engramdb behind other frameworks' interfaces (issue 27): a surface layer, like `agents` and
the CLI, that reaches the engine through the facade only, as a user's own code would.

`engramdb.integrations.langgraph` (`pip install "engramdb[langgraph]"`): `EngramStore`, a
LangGraph `BaseStore`, so a graph's long-term memory (`get_store()`, `store.put/search/...`) lives
in an engramdb store folder::

    from langgraph.graph import StateGraph
    from engramdb.integrations.langgraph import EngramStore

    with EngramStore.open("./memory", index={"fields": ["text"]}) as store:
        graph = builder.compile(store=store)  # builder: your StateGraph
        graph.invoke({...})

Each item is one memory (namespace `("users", "maya")` -> engramdb namespace
`langgraph/users/maya`; the key a stable id, so putting a key again writes a new version of the
same memory; a delete forgets it); a search with `query` is engramdb's search, scored in [0, 1].
What differs from LangGraph's `InMemoryStore`, and what is not supported (TTL), is listed in
`engramdb.integrations.langgraph.engram_store` and docs/guides/langgraph.md.

Nothing here is imported by `import engramdb`: each integration needs its framework installed.
"""
