"""The commands of the `engramdb` command line, one module per group (its entry point is cli.py):
memories (add, ingest, search, context), inspecting (stats, topics, metrics), records (get,
history, list, forget, restore, purge), upkeep (consolidate,
index, infer-edges, archive), safekeeping (export, backup, verify, repair), surfaces (demo, mcp,
hook, capabilities); common.py holds the store folder rule and the output and error conventions,
parser.py the parser and the grouped help."""
