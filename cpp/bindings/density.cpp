// Bindings for HDBSCAN over a precomputed distance matrix (C4).
#include "engramdb/density.h"

#include <algorithm>

#include "util.h"

namespace engramdb::bind {

namespace {

template <typename T>
std::tuple<carray<int64_t>, int64_t> hdbscan_py(const carray<T>& D, py::ssize_t min_cluster_size,
                                                py::ssize_t min_samples) {
    require_rank(D, 2, "distances");
    const py::ssize_t n = D.shape(0);
    require_len(D.shape(1), n, "distances columns");
    if (min_cluster_size < 2) throw py::value_error("min_cluster_size must be at least 2");
    if (min_samples < 1 || min_samples > std::max<py::ssize_t>(n, 1))
        throw py::value_error("min_samples must be in 1..number of rows");
    carray<int64_t> labels({n});
    const T* dp = D.data();
    int64_t* lp = labels.mutable_data();
    int64_t bad;
    {
        py::gil_scoped_release release;
        bad = hdbscan_precomputed(dp, uz(n), uz(min_cluster_size), uz(min_samples), lp);
    }
    return {labels, bad};
}

template <typename T>
carray<double> group_sums_py(const carray<T>& D, const carray<int64_t>& rows, const carray<int64_t>& cols,
                             const carray<int64_t>& starts) {
    require_rank(D, 2, "distances");
    const py::ssize_t n = D.shape(0);
    require_len(D.shape(1), n, "distances columns");
    require_rank(rows, 1, "rows");
    require_rank(cols, 1, "cols");
    require_rank(starts, 1, "starts");
    const py::ssize_t r = rows.shape(0), m = cols.shape(0), g = starts.shape(0);
    for (py::ssize_t i = 0; i < r; ++i)
        if (rows.data()[i] < 0 || rows.data()[i] >= n) throw py::value_error("rows must be in 0..n-1");
    for (py::ssize_t i = 0; i < m; ++i)
        if (cols.data()[i] < 0 || cols.data()[i] >= n) throw py::value_error("cols must be in 0..n-1");
    for (py::ssize_t k = 0; k < g; ++k) {
        const int64_t s = starts.data()[k];
        if (s < (k ? starts.data()[k - 1] : 0) || s > m || (k == 0 && s != 0))
            throw py::value_error("starts must begin at 0 and not decrease, at most len(cols)");
    }
    carray<double> out({r, g});
    const T* dp = D.data();
    const int64_t *rp = rows.data(), *cp = cols.data(), *sp = starts.data();
    double* op = out.mutable_data();
    {
        py::gil_scoped_release release;
        group_sums(dp, uz(n), rp, uz(r), cp, uz(m), sp, uz(g), op);
    }
    return out;
}

// `sums`: absent, or a writable C-contiguous float64 array of one entry per row (each row's sum
// but its diagonal entry, made in the same pass); noconvert at the def: written, never copied.
double* row_sums_of(std::optional<carray<double>>& sums, py::ssize_t rows, const char* what) {
    if (!sums.has_value()) return nullptr;
    require_rank(*sums, 1, what);
    require_len(sums->shape(0), rows, what);
    return sums->mutable_data();
}

void jaccard_from_overlaps_py(carray<float>& x, const carray<float>& sizes, std::optional<carray<double>> sums) {
    require_rank(x, 2, "overlaps");
    const py::ssize_t n = x.shape(0);
    require_len(x.shape(1), n, "overlaps columns");
    require_rank(sizes, 1, "sizes");
    require_len(sizes.shape(0), n, "sizes");
    double* op = row_sums_of(sums, n, "sums");
    float* xp = x.mutable_data();
    const float* sp = sizes.data();
    py::gil_scoped_release release;
    jaccard_from_overlaps(xp, uz(n), sp, op);
}

void distances_from_cosines_py(carray<float>& x, std::optional<carray<double>> sums) {
    double* op = nullptr;
    size_t rows = 1, cols = uz(x.size());
    if (sums.has_value()) {  // row sums need a square matrix (the diagonal is left out)
        require_rank(x, 2, "cosines");
        require_len(x.shape(1), x.shape(0), "cosines columns");
        op = row_sums_of(sums, x.shape(0), "sums");
        rows = uz(x.shape(0));
        cols = uz(x.shape(1));
    }
    float* xp = x.mutable_data();
    py::gil_scoped_release release;
    distances_from_cosines(xp, rows, cols, op);
}

}  // namespace

void bind_density(py::module_& m) {
    m.def("hdbscan_precomputed", &hdbscan_py<float>, py::arg("distances").noconvert(), py::arg("min_cluster_size"),
          py::arg("min_samples"),
          "HDBSCAN labels (-1: noise) of a square distance matrix, as scikit-learn's precomputed HDBSCAN "
          "(excess of mass). Returns (labels, bad_row): bad_row is -1, or the first row with a NaN, inf or "
          "negative distance (then labels are meaningless).");
    m.def("hdbscan_precomputed", &hdbscan_py<double>, py::arg("distances").noconvert(), py::arg("min_cluster_size"),
          py::arg("min_samples"));
    m.def("jaccard_from_overlaps", &jaccard_from_overlaps_py, py::arg("overlaps").noconvert(), py::arg("sizes").noconvert(),
          py::arg("sums").noconvert() = py::none(),
          "In place: float32 overlaps (n x n) of term sets of these sizes become 1 - Jaccard. With sums "
          "(float64, n), each row's sum of its distances but the diagonal's, in the same pass.");
    m.def("distances_from_cosines", &distances_from_cosines_py, py::arg("cosines").noconvert(), py::arg("sums").noconvert() = py::none(),
          "In place: float32 cosines become 1 - cosine, clipped at 0. With sums (float64, n; a square "
          "matrix), each row's sum of its distances but the diagonal's, in the same pass.");
    m.def("group_sums", &group_sums_py<float>, py::arg("distances").noconvert(), py::arg("rows").noconvert(),
          py::arg("cols").noconvert(), py::arg("starts").noconvert(),
          "Sums (float64, rows x groups) of distances[row] over each group of columns: group k is "
          "cols[starts[k]:starts[k + 1]] (the last runs to the end), added in that order.");
    m.def("group_sums", &group_sums_py<double>, py::arg("distances").noconvert(), py::arg("rows").noconvert(),
          py::arg("cols").noconvert(), py::arg("starts").noconvert());
}

}  // namespace engramdb::bind
