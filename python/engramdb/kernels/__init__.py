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
sparse.py, binary.py (Hamming), multivector.py (MaxSim), density.py (HDBSCAN), dispatch.py
(instruction sets).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._common import (
    Assignment,
    AssignMetric,
    ClusterSums,
    Metric,
    NearestCodes,
    TopK,
    merge_topk,
    metric_code,
)
from .binary import hamming_distances, hamming_topk
from .centroids import assign_nearest, assign_topk, centroid_update, cluster_sums
from .dense import Int8Matrix, quantize_i8, rescore_keys, scores, topk
from .density import dbscan_cosine, hdbscan, silhouette_cosine
from .dispatch import active_isa, available_isas, read_bandwidth_probe, use_isa
from .multivector import maxsim
from .sparse import csr_from_sets, jaccard_topk

__all__: Sequence[str] = [
    "AssignMetric",
    "Assignment",
    "ClusterSums",
    "Int8Matrix",
    "Metric",
    "NearestCodes",
    "TopK",
    "active_isa",
    "assign_nearest",
    "assign_topk",
    "available_isas",
    "centroid_update",
    "cluster_sums",
    "csr_from_sets",
    "dbscan_cosine",
    "hamming_distances",
    "hamming_topk",
    "hdbscan",
    "jaccard_topk",
    "maxsim",
    "merge_topk",
    "metric_code",
    "quantize_i8",
    "read_bandwidth_probe",
    "rescore_keys",
    "scores",
    "silhouette_cosine",
    "topk",
    "use_isa",
]
