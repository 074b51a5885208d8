// sparse.h: N3, Jaccard and weighted Jaccard of one query id-set against many id-sets stored as
// CSR (indptr, ids[, weights]), with top-k (highest similarity first, ties by lower row index).
//
//   jaccard          = |A n B| / |A u B|
//   weighted jaccard = sum_i min(a_i, b_i) / sum_i max(a_i, b_i)   (weights >= 0)
// An empty union scores 0. Ids within a row must be strictly increasing and non-negative;
// weights finite and >= 0. The query is looked up through a byte table (or a dense weight table)
// sized by its largest id, so each row costs one cached probe per id; queries with ids too large
// for a table fall back to a sorted merge. Sums are taken in float64.
#pragma once
#include <cstddef>
#include <cstdint>

namespace engramdb {

struct SparseError {
    int64_t row = -1;  // first offending row, or -1
    int code = 0;      // 1 = ids not strictly increasing, 2 = negative id, 3 = bad weight
};

// q_ids: sorted unique ids (nq_ids); q_w: their weights or nullptr (unweighted).
// indptr: n + 1 offsets into ids / w (w nullptr = unweighted; both or neither weighted).
SparseError jaccard_topk(const int32_t* q_ids, const float* q_w, size_t nq_ids, const int64_t* indptr, size_t n,
                         const int32_t* ids, const float* w, const uint8_t* mask, size_t k, size_t threads,
                         int64_t* idx, float* scores, float* full);

}  // namespace engramdb
