// Bindings for N1 (dense scan, int8 scan, rescoring) and the bandwidth probe.
#include "engramdb/dense.h"

#include "util.h"

namespace engramdb::bind {

namespace {

// float32 or float16 matrix as a raw pointer; anything else is refused.
const void* float_rows(const py::array& m, bool* f16) {
    if (!(m.flags() & py::array::c_style)) throw py::value_error("matrix must be C-contiguous");
    if (m.ndim() != 2) throw py::value_error("matrix must have 2 dimensions");
    const py::dtype dt = m.dtype();
    if (dt.kind() == 'f' && dt.itemsize() == 4) {
        *f16 = false;
    } else if (dt.kind() == 'f' && dt.itemsize() == 2) {
        *f16 = true;
    } else {
        throw py::type_error("matrix must be float32 or float16");
    }
    return m.data();
}

using TopKOut = std::tuple<carray<int64_t>, carray<float>>;

std::tuple<carray<int64_t>, carray<float>, std::optional<carray<float>>, int64_t> dense_topk_py(const carray<float>& Q, const py::array& X, int metric, py::ssize_t k,
                        const std::optional<carray<uint8_t>>& mask, py::ssize_t threads, bool want_full) {
    require_rank(Q, 2, "queries");
    bool f16 = false;
    const void* x = float_rows(X, &f16);
    const py::ssize_t nq = Q.shape(0), d = Q.shape(1), n = X.shape(0);
    require_len(X.shape(1), d, "matrix columns");
    if (k < 0 || metric < 0 || metric > 2) throw py::value_error("bad k or metric");
    const uint8_t* mp = opt_ptr(mask, n, "mask");
    carray<int64_t> idx({nq, k});
    carray<float> scores({nq, k});
    std::optional<carray<float>> full;
    float* fp = nullptr;
    if (want_full) {
        full = carray<float>({nq, n});
        fp = full->mutable_data();
    }
    const float* qp = Q.data();
    int64_t* ip = idx.mutable_data();
    float* sp = scores.mutable_data();
    int64_t bad;
    {
        py::gil_scoped_release release;
        bad = dense_topk(qp, uz(nq), x, f16, uz(n), uz(d), static_cast<Metric>(metric), mp, uz(k), uz(threads), ip,
                         sp, fp);
    }
    return {idx, scores, full, bad};
}

TopKOut dense_topk_i8_py(const carray<int8_t>& Q, const carray<int8_t>& X, py::ssize_t k,
                           const std::optional<carray<float>>& row_scale, const std::optional<carray<uint8_t>>& mask,
                           py::ssize_t threads) {
    require_rank(Q, 2, "queries");
    require_rank(X, 2, "matrix");
    const py::ssize_t nq = Q.shape(0), d = Q.shape(1), n = X.shape(0);
    require_len(X.shape(1), d, "matrix columns");
    if (k < 0) throw py::value_error("k must be >= 0");
    const float* rs = opt_ptr(row_scale, n, "row_scale");
    const uint8_t* mp = opt_ptr(mask, n, "mask");
    carray<int64_t> idx({nq, k});
    carray<float> scores({nq, k});
    const int8_t *qp = Q.data(), *xp = X.data();
    int64_t* ip = idx.mutable_data();
    float* sp = scores.mutable_data();
    {
        py::gil_scoped_release release;
        dense_topk_i8(qp, uz(nq), xp, uz(n), uz(d), rs, mp, uz(k), uz(threads), ip, sp);
    }
    return {idx, scores};
}

std::tuple<carray<int64_t>, carray<float>, int64_t> dense_rescore_py(const carray<float>& Q, const py::array& X, int metric, const carray<int64_t>& cand,
                           py::ssize_t k) {
    require_rank(Q, 2, "queries");
    require_rank(cand, 2, "candidates");
    bool f16 = false;
    const void* x = float_rows(X, &f16);
    const py::ssize_t nq = Q.shape(0), d = Q.shape(1), n = X.shape(0);
    require_len(X.shape(1), d, "matrix columns");
    require_len(cand.shape(0), nq, "candidates rows");
    if (k < 0 || metric < 0 || metric > 2) throw py::value_error("bad k or metric");
    carray<int64_t> idx({nq, k});
    carray<float> scores({nq, k});
    const float* qp = Q.data();
    const int64_t* cp = cand.data();
    const std::size_t L = uz(cand.shape(1));
    int64_t* ip = idx.mutable_data();
    float* sp = scores.mutable_data();
    int64_t bad;
    {
        py::gil_scoped_release release;
        bad = dense_rescore(qp, uz(nq), x, f16, uz(n), uz(d), static_cast<Metric>(metric), cp, L, uz(k), ip, sp);
    }
    return {idx, scores, bad};
}

std::tuple<carray<int64_t>, carray<float>, int64_t> dense_rescore_keys_py(const carray<float>& q, const std::vector<py::array>& matrices,
                                                                         const carray<int64_t>& bases,
                                                                         const carray<int64_t>& keys, int metric,
                                                                         py::ssize_t k, py::ssize_t threads) {
    require_rank(q, 1, "query");
    require_rank(bases, 1, "bases");
    require_rank(keys, 1, "keys");
    const auto nseg = static_cast<py::ssize_t>(matrices.size());
    require_len(bases.shape(0), nseg + 1, "bases");
    if (k < 0 || metric < 0 || metric > 2) throw py::value_error("bad k or metric");
    const int64_t* bp = bases.data();
    if (bp[0] != 0) throw py::value_error("bases must start at 0");
    std::vector<const void*> mats;  // `matrices` holds the arrays while the GIL is released
    bool f16 = false;
    for (py::ssize_t s = 0; s < nseg; ++s) {
        const py::array& m = matrices[static_cast<size_t>(s)];
        bool this_f16 = false;
        mats.push_back(float_rows(m, &this_f16));
        if (s == 0) f16 = this_f16;
        if (this_f16 != f16) throw py::type_error("matrices must all be float32 or all float16");
        require_len(m.shape(1), q.shape(0), "matrix columns");
        // bp[s] is a sum of row counts already checked, so adding one more cannot overflow (a
        // difference of two unchecked bases could)
        if (bp[s + 1] != bp[s] + m.shape(0))
            throw py::value_error("matrix " + std::to_string(s) + " has " + std::to_string(m.shape(0)) +
                                  " rows, but bases[" + std::to_string(s + 1) + "] = " + std::to_string(bp[s + 1]) +
                                  " (expected " + std::to_string(bp[s] + m.shape(0)) + ")");
    }
    const int64_t total = bp[nseg];
    const int64_t* kp = keys.data();
    const auto nk = keys.shape(0);
    for (py::ssize_t i = 0; i < nk; ++i)
        if (kp[i] < 0 || kp[i] >= total)
            throw py::value_error("key " + std::to_string(kp[i]) + " is outside 0.." + std::to_string(total - 1));
    carray<int64_t> idx({k});
    carray<float> scores({k});
    int64_t* ip = idx.mutable_data();
    float* sp = scores.mutable_data();
    const float* qp = q.data();
    size_t got = 0;
    int64_t bad;
    {
        py::gil_scoped_release release;
        bad = dense_rescore_keys(qp, uz(q.shape(0)), mats.data(), f16, bp, uz(nseg), static_cast<Metric>(metric), kp,
                                 uz(nk), uz(k), uz(threads), ip, sp, &got);
    }
    if (bad >= 0) return {carray<int64_t>({0}), carray<float>({0}), bad};
    const auto n = static_cast<py::ssize_t>(got);
    carray<int64_t> ok({n});
    carray<float> os({n});
    std::copy(ip, ip + n, ok.mutable_data());
    std::copy(sp, sp + n, os.mutable_data());
    return {ok, os, -1};
}

double stream_sum_py(const carray<float>& x, py::ssize_t threads) {
    const float* p = x.data();
    const std::size_t n = uz(x.size());
    py::gil_scoped_release release;
    return stream_sum(p, n, uz(threads));
}

}  // namespace

void bind_dense(py::module_& m) {
    m.def("dense_topk", &dense_topk_py, py::arg("queries").noconvert(), py::arg("matrix"), py::arg("metric"),
          py::arg("k"), py::arg("mask").noconvert() = py::none(), py::arg("threads") = 0, py::arg("full") = false,
          "Fused scan + top-k over float32/float16 rows. Returns (indices, scores, full_or_None, bad_row).");
    m.def("dense_topk_i8", &dense_topk_i8_py, py::arg("queries").noconvert(), py::arg("matrix").noconvert(),
          py::arg("k"), py::arg("row_scale").noconvert() = py::none(), py::arg("mask").noconvert() = py::none(),
          py::arg("threads") = 0, "int8 scan + top-k by integer dot (times row_scale). Returns (indices, scores).");
    m.def("dense_rescore", &dense_rescore_py, py::arg("queries").noconvert(), py::arg("matrix"), py::arg("metric"),
          py::arg("candidates").noconvert(), py::arg("k"),
          "Exact rescoring of candidate rows. Returns (indices, scores, bad_row).");
    m.def("dense_rescore_keys", &dense_rescore_keys_py, py::arg("query").noconvert(), py::arg("matrices"),
          py::arg("bases").noconvert(), py::arg("keys").noconvert(), py::arg("metric"), py::arg("k"),
          py::arg("threads") = 0,
          "Exact scores of global keys over segment matrices (matrix s holds keys bases[s]..bases[s+1]-1); "
          "duplicates scored once. Returns (keys, scores, bad_key), best first.");
    m.def("stream_sum", &stream_sum_py, py::arg("x").noconvert(), py::arg("threads") = 0,
          "Sum of a float32 array by a plain streaming read (memory-bandwidth probe).");
}

}  // namespace engramdb::bind
