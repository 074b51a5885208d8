// Bindings for the vector code passes (engramdb/codes.h): int8 token codes and packed sign bits.
// engramdb.kernels.codes checks every argument first; the checks here are the last line of defence.
#include "engramdb/codes.h"

#include "util.h"

namespace engramdb::bind {

namespace {

std::tuple<carray<int8_t>, carray<float>, int64_t> quantize_int8_py(const carray<float>& x) {
    require_rank(x, 2, "x");
    const py::ssize_t n = x.shape(0), dim = x.shape(1);
    carray<int8_t> q({n, dim});
    carray<float> scale(n);
    int64_t bad;
    {
        py::gil_scoped_release release;
        bad = quantize_int8(x.data(), uz(n), uz(dim), q.mutable_data(), scale.mutable_data());
    }
    return {q, scale, bad};
}

std::tuple<carray<uint8_t>, carray<int64_t>> sign_bits_py(const carray<float>& y, const carray<float>& tol) {
    require_rank(y, 2, "y");
    require_rank(tol, 1, "tol");
    require_len(tol.shape(0), y.shape(0), "tol");
    const py::ssize_t n = y.shape(0), bits = y.shape(1);
    carray<uint8_t> out({n, (bits + 7) / 8});
    std::vector<int64_t> near;
    {
        py::gil_scoped_release release;
        sign_bits(y.data(), uz(n), uz(bits), tol.data(), out.mutable_data(), near);
    }
    carray<int64_t> idx(static_cast<py::ssize_t>(near.size()));
    if (!near.empty()) std::copy(near.begin(), near.end(), idx.mutable_data());
    return {out, idx};
}

carray<bool> near_signs_py(const carray<float>& x, const carray<double>& cols, const carray<int64_t>& near) {
    require_rank(x, 2, "x");
    require_rank(cols, 2, "cols");
    require_rank(near, 1, "near");
    require_len(cols.shape(1), x.shape(1), "cols' width");
    carray<bool> out(near.shape(0));
    int code;
    {
        py::gil_scoped_release release;
        code = near_signs(x.data(), uz(x.shape(0)), uz(x.shape(1)), cols.data(), uz(cols.shape(0)), near.data(),
                          uz(near.shape(0)), reinterpret_cast<uint8_t*>(out.mutable_data()));
    }
    if (code) throw py::value_error("a near index is out of range of x's rows times cols' rows");
    return out;
}

}  // namespace

void bind_codes(py::module_& m) {
    m.def("quantize_int8", &quantize_int8_py, py::arg("x"),
          "Rows as int8 codes times a scale each (max |x| / 127): (codes, scales, first non-finite row or -1).");
    m.def("sign_bits", &sign_bits_py, py::arg("y"), py::arg("tol"),
          "Packed sign bits of rows, entries within +-tol of 0 left 0 and listed: (bits, flat indices near 0).");
    m.def("near_signs", &near_signs_py, py::arg("x"), py::arg("cols"), py::arg("near"),
          "Per flat index r * bits + c, whether the float64 dot product of x's row r and cols' row c is > 0.");
}

}  // namespace engramdb::bind
