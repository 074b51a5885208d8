// Bindings for N3 BM25 (inverted index scoring with top-k).
#include "engramdb/bm25.h"

#include <cmath>

#include "util.h"

namespace engramdb::bind {

namespace {

std::tuple<carray<int64_t>, carray<float>, int64_t, int> bm25_topk_py(
    const carray<int64_t>& q_indptr, const carray<int64_t>& q_rows, const carray<float>& q_w,
    const carray<int64_t>& indptr, const carray<int32_t>& docs, const carray<float>& tf, const carray<float>& norm,
    float k1, py::ssize_t k, const std::optional<carray<uint8_t>>& mask, py::ssize_t threads) {
    require_rank(q_indptr, 1, "query_indptr");
    require_rank(q_rows, 1, "query_rows");
    require_rank(indptr, 1, "indptr");
    require_rank(docs, 1, "docs");
    require_rank(norm, 1, "norm");
    if (q_indptr.shape(0) < 1 || indptr.shape(0) < 1) throw py::value_error("indptr arrays need at least one entry");
    require_len(q_w.shape(0), q_rows.shape(0), "query_weights");
    require_len(tf.shape(0), docs.shape(0), "tf");
    const py::ssize_t nq = q_indptr.shape(0) - 1, n_docs = norm.shape(0);
    const int64_t* qi = q_indptr.data();
    if (qi[0] != 0 || qi[nq] != q_rows.shape(0)) throw py::value_error("query_indptr must start at 0 and end at len(query_rows)");
    for (py::ssize_t i = 0; i < nq; ++i)
        if (qi[i + 1] < qi[i]) throw py::value_error("query_indptr must be non-decreasing");
    if (k < 0) throw py::value_error("k must be >= 0");
    if (!(k1 >= 0.f) || !std::isfinite(k1)) throw py::value_error("k1 must be finite and >= 0");
    const uint8_t* mp = opt_ptr(mask, n_docs, "mask");
    carray<int64_t> idx({nq, k});
    carray<float> scores({nq, k});
    const int64_t *qr = q_rows.data(), *ip = indptr.data();
    const float *qw = q_w.data(), *tp = tf.data(), *np_ = norm.data();
    const int32_t* dp = docs.data();
    int64_t* op = idx.mutable_data();
    float* sp = scores.mutable_data();
    const std::size_t n_rows = uz(indptr.shape(0) - 1), n_post = uz(docs.shape(0));
    Bm25Error err;
    {
        py::gil_scoped_release release;
        err = bm25_topk(qi, uz(nq), qr, qw, ip, n_rows, dp, tp, n_post, np_, uz(n_docs), k1, mp, uz(k), uz(threads),
                        op, sp);
    }
    return {idx, scores, err.query, err.code};
}

}  // namespace

void bind_bm25(py::module_& m) {
    m.def("bm25_topk", &bm25_topk_py, py::arg("query_indptr").noconvert(), py::arg("query_rows").noconvert(),
          py::arg("query_weights").noconvert(), py::arg("indptr").noconvert(), py::arg("docs").noconvert(),
          py::arg("tf").noconvert(), py::arg("norm").noconvert(), py::arg("k1"), py::arg("k"),
          py::arg("mask").noconvert() = py::none(), py::arg("threads") = 0,
          "BM25 top-k of CSR queries (posting rows + weights) over CSR postings. "
          "Returns (indices, scores, error_query, error_code).");
}

}  // namespace engramdb::bind
