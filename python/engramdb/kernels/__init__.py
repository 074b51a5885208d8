"""The native kernels (N1-N6), typed and validated.

Every function here takes whole batches and makes one call into the C++ core (`engramdb._core`),
which releases the GIL for the duration of the work. Arguments are checked first: a wrong dtype
raises `TypeError`, a wrong shape, layout or value raises `ValueError`, and each names the
argument. Large operands (the matrix, codes, CSR arrays, token matrices) are used in place and
must be C-contiguous with the documented dtype; queries are small and are coerced to float32.

Results are sorted best first; ties go to the lower row index. `k` larger than the number of
(allowed) rows returns all of them. A single 1-D query returns 1-D results; a 2-D batch returns
arrays of shape (q, k).

One module per kernel family, as in the C++ core (cpp/include/engramdb/): dense.py, centroids.py,
sparse.py, postings.py (BM25), binary.py (Hamming), multivector.py (MaxSim), density.py (HDBSCAN),
tree_search.py (a centroid tree's descent), analysis.py (a batch's tokens and hashed feature sums),
codes.py (token vectors' int8 codes, projections' sign bits),
dispatch.py (instruction sets). Nothing outside this
package calls `engramdb._core` (tests/test_layers.py holds the rule).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._common import (
    Assignment,
    AssignMetric,
    ClusterSums,
    Metric,
    NearestCodes,
    NonFiniteRow,
    TopK,
    merge_topk,
    metric_code,
)
from .analysis import (
    TokenCodes,
    cut_passages,
    hash_embed,
    hash_feature_sums,
    tokenize_codepoints,
    word_features,
    word_rows,
    word_vectors,
)
from .binary import hamming_distances, hamming_topk
from .centroids import (
    KmeansStep,
    assign_nearest,
    assign_topk,
    centroid_update,
    cluster_sums,
    kmeans_step,
    spherical_kmeans_loop,
)
from .codes import near_signs, quantize_int8, sign_bits
from .dense import Int8Matrix, quantize_i8, rescore_keys, rescore_rows, scores, topk
from .density import (
    dbscan_cosine,
    distances_from_cosines,
    group_sums,
    hdbscan,
    jaccard_from_overlaps,
    row_sums_out,
    silhouette_cosine,
)
from .dispatch import (
    active_isa,
    available_isas,
    compiled_isas,
    forced_isa,
    forced_note,
    read_bandwidth_probe,
    use_isa,
)
from .multivector import maxsim
from .postings import bm25_query
from .sparse import csr_from_sets, jaccard_topk
from .tree_search import TreeHits, tree_search

__all__: Sequence[str] = [
    "AssignMetric",
    "Assignment",
    "ClusterSums",
    "Int8Matrix",
    "KmeansStep",
    "Metric",
    "NearestCodes",
    "NonFiniteRow",
    "TokenCodes",
    "TopK",
    "TreeHits",
    "active_isa",
    "assign_nearest",
    "assign_topk",
    "available_isas",
    "bm25_query",
    "centroid_update",
    "cluster_sums",
    "compiled_isas",
    "csr_from_sets",
    "cut_passages",
    "dbscan_cosine",
    "distances_from_cosines",
    "forced_isa",
    "forced_note",
    "group_sums",
    "hamming_distances",
    "hamming_topk",
    "hash_embed",
    "hash_feature_sums",
    "hdbscan",
    "jaccard_from_overlaps",
    "jaccard_topk",
    "kmeans_step",
    "maxsim",
    "merge_topk",
    "metric_code",
    "near_signs",
    "quantize_i8",
    "quantize_int8",
    "read_bandwidth_probe",
    "rescore_keys",
    "rescore_rows",
    "row_sums_out",
    "scores",
    "sign_bits",
    "silhouette_cosine",
    "spherical_kmeans_loop",
    "tokenize_codepoints",
    "topk",
    "tree_search",
    "use_isa",
    "word_features",
    "word_rows",
    "word_vectors",
]
