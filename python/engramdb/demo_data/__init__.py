"""Data shipped for `engramdb demo` (written for the demo; not from any benchmark)."""
