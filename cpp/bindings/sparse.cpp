// Bindings for N3 (Jaccard / weighted Jaccard over CSR id-sets).
#include "engramdb/sparse.h"

#include "util.h"

namespace engramdb::bind {

namespace {

std::tuple<carray<int64_t>, carray<float>, std::optional<carray<float>>, int64_t, int> jaccard_topk_py(const carray<int32_t>& q_ids, const std::optional<carray<float>>& q_w,
                          const carray<int64_t>& indptr, const carray<int32_t>& ids,
                          const std::optional<carray<float>>& w, py::ssize_t k,
                          const std::optional<carray<uint8_t>>& mask, py::ssize_t threads, bool want_full) {
    require_rank(q_ids, 1, "query");
    // The kernel sizes its lookup table by the query's last id and merges in id order: an unsorted
    // query wrote past the table, a negative id before it.
    const int32_t* qi = q_ids.data();
    for (py::ssize_t i = 0; i < q_ids.shape(0); ++i)
        if (qi[i] < 0 || (i > 0 && qi[i] <= qi[i - 1]))
            throw py::value_error("query ids must be non-negative and strictly increasing, got query[" +
                                  std::to_string(i) + "] = " + std::to_string(qi[i]));
    require_rank(indptr, 1, "indptr");
    require_rank(ids, 1, "indices");
    if (indptr.shape(0) < 1) throw py::value_error("indptr must have at least one entry");
    if (q_w.has_value() != w.has_value()) throw py::value_error("weights and query_weights go together");
    const py::ssize_t n = indptr.shape(0) - 1, nnz = ids.shape(0);
    const float* qwp = opt_ptr(q_w, q_ids.shape(0), "query_weights");
    const float* wp = opt_ptr(w, nnz, "weights");
    const uint8_t* mp = opt_ptr(mask, n, "mask");
    const int64_t* ip = indptr.data();
    // indptr must be a valid, non-decreasing offset array into ids: checked here, O(n).
    if (ip[0] != 0 || ip[n] != nnz) throw py::value_error("indptr must start at 0 and end at len(indices)");
    for (py::ssize_t r = 0; r < n; ++r)
        if (ip[r + 1] < ip[r]) throw py::value_error("indptr must be non-decreasing (row " + std::to_string(r) + ")");
    if (k < 0) throw py::value_error("k must be >= 0");
    carray<int64_t> idx({py::ssize_t{1}, k});
    carray<float> scores({py::ssize_t{1}, k});
    std::optional<carray<float>> full;
    float* fp = nullptr;
    if (want_full) {
        full = carray<float>({n});
        fp = full->mutable_data();
    }
    const int32_t *qp = q_ids.data(), *dp = ids.data();
    int64_t* op = idx.mutable_data();
    float* sp = scores.mutable_data();
    const std::size_t nqi = uz(q_ids.shape(0));
    SparseError err;
    {
        py::gil_scoped_release release;
        err = jaccard_topk(qp, qwp, nqi, ip, uz(n), dp, wp, mp, uz(k), uz(threads), op, sp, fp);
    }
    return {idx, scores, full, err.row, err.code};
}

}  // namespace

void bind_sparse(py::module_& m) {
    m.def("jaccard_topk", &jaccard_topk_py, py::arg("query").noconvert(), py::arg("query_weights").noconvert(),
          py::arg("indptr").noconvert(), py::arg("indices").noconvert(), py::arg("weights").noconvert(), py::arg("k"),
          py::arg("mask").noconvert() = py::none(), py::arg("threads") = 0, py::arg("full") = false,
          "Top-k (weighted) Jaccard of one sorted id-set against CSR rows. "
          "Returns (indices, scores, full_or_None, error_row, error_code).");
}

}  // namespace engramdb::bind
