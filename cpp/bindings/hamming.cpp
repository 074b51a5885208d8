// Bindings for N4 (Hamming over packed codes).
#include "engramdb/hamming.h"

#include "util.h"

namespace engramdb::bind {

namespace {

std::tuple<carray<int64_t>, carray<int64_t>> hamming_topk_py(const carray<uint8_t>& Q, const carray<uint8_t>& codes, py::ssize_t k,
                          const std::optional<carray<uint8_t>>& mask, py::ssize_t threads) {
    require_rank(Q, 2, "queries");
    require_rank(codes, 2, "codes");
    const py::ssize_t nq = Q.shape(0), nb = Q.shape(1), n = codes.shape(0);
    require_len(codes.shape(1), nb, "code bytes");
    if (k < 0) throw py::value_error("k must be >= 0");
    const uint8_t* mp = opt_ptr(mask, n, "mask");
    carray<int64_t> idx({nq, k}), dist({nq, k});
    const uint8_t *qp = Q.data(), *cp = codes.data();
    int64_t *ip = idx.mutable_data(), *dp = dist.mutable_data();
    {
        py::gil_scoped_release release;
        hamming_topk(qp, uz(nq), cp, uz(n), uz(nb), mp, uz(k), uz(threads), ip, dp);
    }
    return {idx, dist};
}

carray<uint32_t> hamming_all_py(const carray<uint8_t>& Q, const carray<uint8_t>& codes, py::ssize_t threads) {
    require_rank(Q, 2, "queries");
    require_rank(codes, 2, "codes");
    const py::ssize_t nq = Q.shape(0), nb = Q.shape(1), n = codes.shape(0);
    require_len(codes.shape(1), nb, "code bytes");
    carray<uint32_t> out({nq, n});
    const uint8_t *qp = Q.data(), *cp = codes.data();
    uint32_t* op = out.mutable_data();
    {
        py::gil_scoped_release release;
        hamming_all(qp, uz(nq), cp, uz(n), uz(nb), uz(threads), op);
    }
    return out;
}

}  // namespace

void bind_hamming(py::module_& m) {
    m.def("hamming_topk", &hamming_topk_py, py::arg("queries").noconvert(), py::arg("codes").noconvert(),
          py::arg("k"), py::arg("mask").noconvert() = py::none(), py::arg("threads") = 0,
          "Top-k smallest Hamming distances over packed uint8 codes. Returns (indices, distances).");
    m.def("hamming_all", &hamming_all_py, py::arg("queries").noconvert(), py::arg("codes").noconvert(),
          py::arg("threads") = 0, "All Hamming distances, (nq, n) uint32.");
}

}  // namespace engramdb::bind
