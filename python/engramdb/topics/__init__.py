"""Topics (C4): what a namespace is about, from the agreement of per-space clusterings, with labels.
Above retrieval, beside lifecycle; below the store facade."""
