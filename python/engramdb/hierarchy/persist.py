"""Trees <-> one Arrow table (J1): a row per node, any Arrow reader can open it.

Columns: namespace, node_id, level (1 = leaf), parent (-1 for a root), centroid, count,
first_seq / last_seq, created_at / last_accessed_at (timestamps, UTC), archived, children (node
ids), members (memory keys: global row numbers of the store's committed segments) and spill (keys
whose second leaf this is). Tree-wide
settings (leaf_size, fanout, height, root) travel in the schema metadata as JSON, per namespace.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow as pa

from .._arrow_numpy import array_of, arrow_of, lists_of, numpy_of, whole
from ..kernels.sets import unique
from .tree import CentroidTree

TREE_FORMAT = 2  # 2: + spill (second-leaf keys); a format-1 file is stale derived data, rebuilt
_TS = pa.timestamp("us", tz="UTC")


def trees_to_table(trees: dict[str, CentroidTree], dim: int) -> pa.Table:
    """One table holding every namespace's tree."""
    cols: dict[str, list[pa.Array]] = {k: [] for k in ("namespace", "node_id", "level", "parent", "centroid", "count",
                                                        "first_seq", "last_seq", "created_at", "last_accessed_at",
                                                        "archived", "children", "members", "spill")}
    settings = {}
    for ns, t in sorted(trees.items()):
        n = t.n_nodes
        settings[ns] = {"leaf_size": t.leaf_size, "fanout": t.fanout, "height": t.height, "root": t.root,
                        "seed": t.seed, "splits": t._splits, "spill": t.spill_enabled}
        cols["namespace"].append(array_of([ns] * n, pa.string()))
        cols["node_id"].append(arrow_of(np.arange(n, dtype=np.int64)))
        cols["level"].append(arrow_of(t.level[:n]))
        cols["parent"].append(arrow_of(t.parent[:n]))
        flat = arrow_of(np.ascontiguousarray(t.centroids[:n]).reshape(-1))
        cols["centroid"].append(pa.FixedSizeListArray.from_arrays(flat, dim))
        cols["count"].append(arrow_of(t.counts[:n]))
        cols["first_seq"].append(arrow_of(t.first_seq[:n]))
        cols["last_seq"].append(arrow_of(t.last_seq[:n]))
        cols["created_at"].append(arrow_of(t.created_at[:n]).cast(_TS))
        cols["last_accessed_at"].append(arrow_of(t.last_accessed_at[:n]).cast(_TS))
        cols["archived"].append(array_of(t.archived[:n].tolist(), pa.bool_()))
        cols["children"].append(lists_of(t.children[:n], pa.int64()))
        cols["members"].append(lists_of(t.members[:n], pa.int64()))
        cols["spill"].append(lists_of(t.spill[:n], pa.int64()))
    meta = {b"engramdb.tree_format": str(TREE_FORMAT).encode(), b"engramdb.trees": json.dumps(settings).encode()}
    if not trees:
        return pa.table({k: pa.nulls(0) for k in cols}).replace_schema_metadata(meta)
    table = pa.table({k: pa.chunked_array(v) for k, v in cols.items()})
    return table.replace_schema_metadata(meta)


def table_to_trees(table: pa.Table, keys: int | None = None) -> dict[str, CentroidTree]:
    """The trees of a table written by `trees_to_table` (ValueError when it is not one, or when a
    member key is not below `keys`, the rows the trees were saved over, when given)."""
    meta = table.schema.metadata or {}
    if meta.get(b"engramdb.tree_format") != str(TREE_FORMAT).encode():
        raise ValueError(f"not a tree table of format {TREE_FORMAT}")
    settings = json.loads(meta[b"engramdb.trees"])
    out: dict[str, CentroidTree] = {}
    if not settings:
        return out
    ns_col = np.array(table.column("namespace").to_pylist(), dtype=object)
    for ns, cfg in settings.items():
        rows = np.flatnonzero(ns_col == ns)
        n = len(rows)
        # a namespace's nodes are one run of rows (written namespace by namespace): a zero-copy
        # slice, where a take copied every centroid
        part = table.slice(int(rows[0]), n) if n and int(rows[-1]) - int(rows[0]) + 1 == n else table.take(arrow_of(rows.astype(np.int64)))
        cent = whole(part.column("centroid"))
        dim = cent.type.list_size
        t = CentroidTree(dim, leaf_size=cfg["leaf_size"], fanout=cfg["fanout"], seed=cfg["seed"], spill=cfg["spill"])
        t._splits = cfg["splits"]
        cap = max(16, n)
        t.centroids = np.zeros((cap, dim), np.float32)
        t.centroids[:n] = numpy_of(cent.flatten()).reshape(n, dim)
        for name, dtype in (("counts", np.int64), ("level", np.int8), ("parent", np.int64), ("first_seq", np.int64),
                            ("last_seq", np.int64), ("archived", bool)):
            src = numpy_of(part.column("count" if name == "counts" else name))
            arr = np.zeros(cap, dtype)
            arr[:n] = src
            setattr(t, name, arr)
        for name in ("created_at", "last_accessed_at"):
            arr = np.zeros(cap, np.int64)
            arr[:n] = numpy_of(part.column(name))  # the stored microseconds
            setattr(t, name, arr)
        children = _flat(whole(part.column("children")))
        members = _flat(whole(part.column("members")))
        spill = _flat(whole(part.column("spill")))
        t.children, t.members, t.spill = _unlists(*children), _unlists(*members), _unlists(*spill)
        t.n_nodes, t.height, t.root = n, cfg["height"], cfg["root"]
        _check_shape(ns, t, children, members, spill, keys)
        # the read side's CSR straight from the file's offsets (the file holds the lists in that
        # very form): what `CentroidTree.prepare` would make by concatenating the lists again
        t._csr_cache = (*children, *_scanned(members, spill))
        out[ns] = t
    return out


def _check_shape(ns: str, t: CentroidTree, children: tuple[np.ndarray, np.ndarray],
                 members: tuple[np.ndarray, np.ndarray], spill: tuple[np.ndarray, np.ndarray],
                 keys: int | None) -> None:
    """Refuse (ValueError; TypeError for settings that are not integers) a tree whose file holds
    what no writer makes, the shape `CentroidTree.check` asserts: the read side's CSR comes straight
    from the file's offsets, so a list whose end is before its start, a child out of range or a
    loop reached the native search (an error or no hits on every search), and a broken parent or
    count failed every insert, instead of the file being rebuilt. A file CRC-signed by a buggy or
    foreign writer gets here; a flipped byte does not. Vectorised: ~0.7 ms for a 100,000-memory
    tree (1,600 leaves of 384 dimensions), against ~16 ms for its load."""
    n, root, height = t.n_nodes, t.root, t.height
    if not isinstance(root, int) or not isinstance(height, int):
        raise TypeError(f"tree {ns!r}: root {root!r} and height {height!r} must be integers")
    if n == 0:
        if root != -1:
            raise ValueError(f"tree {ns!r} has no nodes but root {root}")
        return
    if not 0 <= root < n or not 1 <= height <= 64 or int(t.level[root]) != height:
        raise ValueError(f"tree {ns!r}: root {root} of {n} nodes at height {height} is not its top node")
    for what, (ptr, values) in (("children", children), ("members", members), ("spill", spill)):
        if len(ptr) != n + 1 or (n and bool((ptr[1:] < ptr[:-1]).any())):
            raise ValueError(f"tree {ns!r}: the {what} lists' offsets decrease")
        if len(values) and int(values.min()) < 0:
            raise ValueError(f"tree {ns!r}: a negative key or node id in {what}")
        # a key past the rows is skipped by the search: the memory it stood for would be unfindable
        if keys is not None and what != "children" and len(values) and int(values.max()) >= keys:
            raise ValueError(f"tree {ns!r}: a key in {what} past the {keys} rows the trees cover")
    cp, ci = children
    level = t.level[:n].astype(np.int64)
    # every link goes one level down: no child out of range, no loop, no node above its parent
    if len(ci) and (int(ci.max()) >= n or bool((level[ci] != np.repeat(level - 1, np.diff(cp))).any())):
        raise ValueError(f"tree {ns!r}: a child link out of range or not one level down")
    # keys only in leaves (level 1, where the search reads them), children under every node above
    # them and none elsewhere (level 0: detached): leaves lifted to level 11 left every search empty
    inner, leaf = level >= 2, level == 1
    holds = (np.diff(members[0]) > 0) | (np.diff(spill[0]) > 0)
    if bool((level < 0).any() or (holds & ~leaf).any() or ((np.diff(cp) > 0) != inner).any()):
        raise ValueError(f"tree {ns!r}: a node holds keys off level 1, or children at level 1 or 0, or none above")
    # one tree: each attached node but the root the child of exactly one node, the one its parent
    # names (an insert walks up the parents: a parent of -1 failed every sync after the load, and
    # close with it; a node no list names hid its keys)
    parent = t.parent[:n]
    if (int(parent[root]) != -1 or int(level.max()) > height or len(ci) != int((level >= 1).sum()) - 1
            or len(unique(ci)) != len(ci)
            or bool((parent[ci] != np.repeat(np.arange(n), np.diff(cp))).any())):
        raise ValueError(f"tree {ns!r}: parents and children do not make one tree under the root")
    # counts as the running means need them: a leaf's its members, a node's its children's sum, a
    # detached node's 0 (an insert into a leaf counted -1 divides by zero)
    counts = t.counts[:n]
    below = np.bincount(np.repeat(np.arange(n), np.diff(cp)), weights=counts[ci], minlength=n) if len(ci) \
        else np.zeros(n)
    if bool(((counts != np.where(level == 1, np.diff(members[0]), 0)) & ~inner).any()
            or (counts[inner] != below[inner]).any()):
        raise ValueError(f"tree {ns!r}: a node's count is not what it holds")
    # the search never keeps a node whose centroid is not finite: every key below it would be lost
    if not bool(np.isfinite(t.centroids[:n][level >= 1]).all()):
        raise ValueError(f"tree {ns!r}: a centroid holds NaN or inf")


def _flat(col: pa.ListArray) -> tuple[np.ndarray, np.ndarray]:
    """(ptr, values) of a list column: int64 offsets from 0 and the values they index."""
    offsets = np.asarray(numpy_of(col.offsets), np.int64)
    values = np.asarray(numpy_of(col.values), dtype=np.int64)[offsets[0] : offsets[-1]]
    return offsets - offsets[0], values


def _unlists(ptr: np.ndarray, values: np.ndarray) -> list[np.ndarray]:
    """Per-node int64 arrays: views into the one copy of the values (slices: np.split's per-piece
    overhead was most of a 100,000-memory tree's load)."""
    bounds = ptr.tolist()
    return [values[a:b] for a, b in itertools.pairwise(bounds)]


def _scanned(members: tuple[np.ndarray, np.ndarray], spill: tuple[np.ndarray, np.ndarray]
             ) -> tuple[np.ndarray, np.ndarray]:
    """(ptr, keys) of what each leaf's scan reads: its members, then its spilled keys (the
    member half of `CentroidTree._csr`), interleaved with numpy."""
    (mp, mv), (sp, sv) = members, spill
    if not len(sv):
        return mp, mv
    ml, sl = np.diff(mp), np.diff(sp)
    ptr = np.zeros(len(mp), np.int64)
    np.cumsum(ml + sl, out=ptr[1:])
    keys = np.empty(int(ptr[-1]), np.int64)
    keys[np.arange(len(mv)) + np.repeat(ptr[:-1] - mp[:-1], ml)] = mv
    keys[np.arange(len(sv)) + np.repeat(ptr[:-1] + ml - sp[:-1], sl)] = sv
    return ptr, keys
