"""Notes and document chunks with a known grouping, found on this machine (issue 29's "a notes
corpus and a document corpus"): read in place, never copied into the repo, the same on any
Debian bookworm machine with Python 3.11.

- `notes()`: short one-line notes: the one-line descriptions of Debian packages ("Real-time
  strategy game of ancient warfare") from apt's package index,
  /var/lib/apt/lists/*_main_binary-amd64_Packages.lz4 (decompressed with `lz4cat`), grouped by
  the package's Section; `PER_SECTION` distinct descriptions (a seeded sample) from each of the
  `SECTIONS`, which say what a package is about (libs, python, doc... say what it is made of).
- `documents()`: document chunks: the paragraphs (blank-line separated, 8 words or more, no
  doctest lines) of the docstrings of standard-library modules (read with `ast`, nothing
  imported) from this Python's stdlib directory, grouped by module; at most `PER_MODULE` of each
  of the `MODULES` (a seeded sample).

Each returns (records, groups): records as a user would add them (`content` only), and each
record's group, the ground truth a topic's purity is measured against.
"""

from __future__ import annotations

import ast
import glob
import random
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

PACKAGES = "/var/lib/apt/lists/*_main_binary-amd64_Packages.lz4"
SECTIONS = ("games", "science", "sound", "graphics", "math", "mail", "fonts", "video", "electronics", "database",
            "editors", "localization")
PER_SECTION = 100
MODULES = ("argparse", "logging/__init__", "unittest/case", "email/message", "tarfile", "datetime", "statistics",
           "ssl", "subprocess", "turtle", "threading", "configparser", "smtplib", "ipaddress", "difflib", "pdb")
PER_MODULE = 80


def notes(seed: int = 0) -> tuple[list[dict[str, Any]], list[str]]:
    """One-line package descriptions, `PER_SECTION` from each of `SECTIONS` (see the module docstring)."""
    found = sorted(glob.glob(PACKAGES))
    if not found:
        raise FileNotFoundError(f"no apt package index at {PACKAGES} (run on Debian bookworm after apt-get update)")
    text = subprocess.run(["lz4cat", found[0]], check=True, capture_output=True, text=True).stdout
    by_section: dict[str, set[str]] = {s: set() for s in SECTIONS}
    for stanza in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[0].isspace())
        section = fields.get("Section", "").rpartition("/")[2]  # "contrib/games" -> games
        if section in by_section and fields.get("Description"):
            by_section[section].add(fields["Description"].strip())
    rng = random.Random(seed)
    records, groups = [], []
    for section in SECTIONS:
        for line in rng.sample(sorted(by_section[section]), min(PER_SECTION, len(by_section[section]))):
            records.append({"content": line})
            groups.append(section)
    return records, groups


def documents(seed: int = 0) -> tuple[list[dict[str, Any]], list[str]]:
    """Docstring paragraphs of `MODULES`, at most `PER_MODULE` each (see the module docstring)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    rng = random.Random(seed)
    records, groups = [], []
    for module in MODULES:
        tree = ast.parse((stdlib / f"{module}.py").read_text(encoding="utf-8"))
        paragraphs: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                for p in (doc or "").split("\n\n"):
                    p = " ".join(p.split())
                    if len(p.split()) >= 8 and ">>>" not in p and p not in paragraphs:
                        paragraphs.append(p)
        name = module.removesuffix("/__init__").replace("/", ".")
        for p in rng.sample(paragraphs, min(PER_MODULE, len(paragraphs))):
            records.append({"content": p})
            groups.append(name)
    return records, groups


__all__ = ["documents", "notes"]
