// Bindings for N3 BM25 (inverted index scoring with top-k).
#include "engramdb/bm25.h"

#include <algorithm>
#include <cmath>
#include <vector>

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

// One query, from term ids to results: the posting rows are found by binary search in the
// chunk's sorted term ids and the Lucene idf is folded in here (with df over the whole index
// when the index has several chunks), so a query is one call instead of a dozen small numpy ops.
std::tuple<carray<int64_t>, carray<float>, int> bm25_query_py(
    const carray<int32_t>& terms, const carray<float>& counts, const carray<int32_t>& chunk_terms,
    const carray<int64_t>& indptr, const carray<int32_t>& docs, const carray<float>& tf, const carray<float>& norm,
    float k1, py::ssize_t k, int64_t n_total, const std::optional<carray<int64_t>>& df_total,
    const std::optional<carray<uint8_t>>& mask, std::optional<py::ssize_t> sorted_k) {
    require_rank(terms, 1, "terms");
    require_rank(chunk_terms, 1, "chunk_terms");
    require_rank(indptr, 1, "indptr");
    require_rank(docs, 1, "docs");
    require_rank(norm, 1, "norm");
    require_len(counts.shape(0), terms.shape(0), "counts");
    require_len(indptr.shape(0), chunk_terms.shape(0) + 1, "indptr");
    require_len(tf.shape(0), docs.shape(0), "tf");
    if (k < 0) throw py::value_error("k must be >= 0");
    if (n_total < 0) throw py::value_error("n_total must be >= 0");
    if (!(k1 >= 0.f) || !std::isfinite(k1)) throw py::value_error("k1 must be finite and >= 0");
    const py::ssize_t m = terms.shape(0), n_docs = norm.shape(0);
    const int64_t* dft = opt_ptr(df_total, m, "df_total");
    const uint8_t* mp = opt_ptr(mask, n_docs, "mask");
    const int32_t *tp = terms.data(), *ct = chunk_terms.data(), *dp = docs.data();
    const float* cp = counts.data();
    const int64_t* ip = indptr.data();
    const auto T = static_cast<size_t>(chunk_terms.shape(0));
    std::vector<int64_t> rows(static_cast<size_t>(m), -1);
    std::vector<float> w(static_cast<size_t>(m), 0.f);
    for (py::ssize_t j = 0; j < m; ++j) {
        const int32_t* at = std::lower_bound(ct, ct + T, tp[j]);
        const int64_t r = (at != ct + T && *at == tp[j]) ? at - ct : -1;
        // offsets are checked by the kernel (error 2) when it reads the row; until then a
        // difference of garbage offsets must not be taken (it can overflow)
        const bool sound = r >= 0 && ip[r] >= 0 && ip[r + 1] >= ip[r];
        const int64_t df = dft != nullptr ? dft[j] : (sound ? ip[r + 1] - ip[r] : 0);
        rows[static_cast<size_t>(j)] = r;
        const double idf = std::log1p((static_cast<double>(n_total) - static_cast<double>(df) + 0.5) /
                                      (static_cast<double>(df) + 0.5));
        w[static_cast<size_t>(j)] = static_cast<float>(idf * static_cast<double>(cp[j]));
    }
    const int64_t qptr[2] = {0, static_cast<int64_t>(m)};
    std::vector<int64_t> idx(static_cast<size_t>(k));
    std::vector<float> sc(static_cast<size_t>(k));
    Bm25Error err;
    {
        py::gil_scoped_release release;
        err = bm25_topk(qptr, 1, rows.data(), w.data(), ip, T, dp, tf.data(), uz(docs.shape(0)), norm.data(),
                        uz(n_docs), k1, mp, uz(k), 1, idx.data(), sc.data(),
                        sorted_k ? uz(std::max<py::ssize_t>(*sorted_k, 0)) : SIZE_MAX);
    }
    py::ssize_t n = 0;  // on an error the kernel wrote no results: return none, not zeros
    while (err.code == 0 && n < k && idx[static_cast<size_t>(n)] >= 0) ++n;
    carray<int64_t> out_i({n});
    carray<float> out_s({n});
    std::copy(idx.begin(), idx.begin() + n, out_i.mutable_data());
    std::copy(sc.begin(), sc.begin() + n, out_s.mutable_data());
    return {out_i, out_s, err.code};
}

}  // namespace

void bind_bm25(py::module_& m) {
    m.def("bm25_topk", &bm25_topk_py, py::arg("query_indptr").noconvert(), py::arg("query_rows").noconvert(),
          py::arg("query_weights").noconvert(), py::arg("indptr").noconvert(), py::arg("docs").noconvert(),
          py::arg("tf").noconvert(), py::arg("norm").noconvert(), py::arg("k1"), py::arg("k"),
          py::arg("mask").noconvert() = py::none(), py::arg("threads") = 0,
          "BM25 top-k of CSR queries (posting rows + weights) over CSR postings. "
          "Returns (indices, scores, error_query, error_code).");
    m.def("bm25_query", &bm25_query_py, py::arg("terms").noconvert(), py::arg("counts").noconvert(),
          py::arg("chunk_terms").noconvert(), py::arg("indptr").noconvert(), py::arg("docs").noconvert(),
          py::arg("tf").noconvert(), py::arg("norm").noconvert(), py::arg("k1"), py::arg("k"), py::arg("n_total"),
          py::arg("df_total").noconvert() = py::none(), py::arg("mask").noconvert() = py::none(),
          py::arg("sorted_k") = py::none(),
          "BM25 top-k of one query given as term ids and counts against one postings chunk (sorted term "
          "ids); Lucene idf over n_total docs (df from this chunk, or df_total). Returns (docs, scores, "
          "error_code), only real hits; best first up to sorted_k (default all), the rest unordered.");
}

}  // namespace engramdb::bind
