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

}  // namespace

void bind_density(py::module_& m) {
    m.def("hdbscan_precomputed", &hdbscan_py<float>, py::arg("distances").noconvert(), py::arg("min_cluster_size"),
          py::arg("min_samples"),
          "HDBSCAN labels (-1: noise) of a square distance matrix, as scikit-learn's precomputed HDBSCAN "
          "(excess of mass). Returns (labels, bad_row): bad_row is -1, or the first row with a NaN, inf or "
          "negative distance (then labels are meaningless).");
    m.def("hdbscan_precomputed", &hdbscan_py<double>, py::arg("distances").noconvert(), py::arg("min_cluster_size"),
          py::arg("min_samples"));
}

}  // namespace engramdb::bind
