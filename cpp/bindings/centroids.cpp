// Bindings for N2 (running-mean centroid updates, nearest-centroid assignment, cluster sums).
#include "engramdb/centroids.h"

#include <algorithm>
#include <limits>

#include "util.h"

namespace engramdb::bind {

namespace {

int64_t centroid_update_py(carray<float> C, carray<int64_t> counts, const carray<int64_t>& nodes,
                           const carray<float>& V) {
    require_rank(C, 2, "centroids");
    require_rank(counts, 1, "counts");
    require_rank(nodes, 1, "node_ids");
    require_rank(V, 2, "vectors");
    const py::ssize_t c = C.shape(0), d = C.shape(1), m = V.shape(0);
    require_len(counts.shape(0), c, "counts");
    require_len(nodes.shape(0), m, "node_ids");
    require_len(V.shape(1), d, "vectors columns");
    const int64_t* np_ = nodes.data();
    for (py::ssize_t i = 0; i < m; ++i)
        if (np_[i] < 0 || np_[i] >= c) throw py::index_error("node_ids[" + std::to_string(i) + "] out of range");
    // the update's weight is 1 / (n + 1) and n grows by one per pair: a count within m of the
    // largest int64 overflowed (undefined behaviour), a negative one made the weight infinite or
    // an extrapolation. Only the counts this batch touches matter.
    const int64_t* kp0 = counts.data();
    for (py::ssize_t i = 0; i < m; ++i) {
        const int64_t n = kp0[np_[i]];
        if (n < 0 || n > std::numeric_limits<int64_t>::max() - m)
            throw py::value_error("counts[" + std::to_string(np_[i]) + "] = " + std::to_string(n) +
                                  " is outside 0..2^63-1 - len(node_ids)");
    }
    float* cp = C.mutable_data();
    int64_t* kp = counts.mutable_data();
    const float* vp = V.data();
    py::gil_scoped_release release;
    return centroid_update(cp, kp, uz(c), uz(d), np_, vp, uz(m));
}

// The checks assign_nearest and assign_topk share: 2-D vectors and centroids of one width, at
// least one centroid, a known metric.
void check_assign(const carray<float>& V, const carray<float>& C, int metric) {
    require_rank(V, 2, "vectors");
    require_rank(C, 2, "centroids");
    require_len(C.shape(1), V.shape(1), "centroids columns");
    if (C.shape(0) < 1) throw py::value_error("centroids must have at least one row");
    if (metric < 0 || metric > 3) throw py::value_error("bad metric");
}

std::tuple<carray<int64_t>, carray<float>, int64_t> assign_nearest_py(const carray<float>& V, const carray<float>& C, int metric, py::ssize_t threads) {
    check_assign(V, C, metric);
    const py::ssize_t n = V.shape(0), d = V.shape(1), c = C.shape(0);
    carray<int64_t> labels({n});
    carray<float> scores({n});
    const float *vp = V.data(), *cp = C.data();
    int64_t* lp = labels.mutable_data();
    float* sp = scores.mutable_data();
    int64_t bad;
    {
        py::gil_scoped_release release;
        bad = assign_nearest(vp, uz(n), cp, uz(c), uz(d), static_cast<AssignMetric>(metric), uz(threads), lp, sp);
    }
    return {labels, scores, bad};
}

std::tuple<carray<int64_t>, carray<float>, int64_t> assign_topk_py(const carray<float>& V, const carray<float>& C, int metric,
                                                                   py::ssize_t m, py::ssize_t threads) {
    check_assign(V, C, metric);
    const py::ssize_t n = V.shape(0), d = V.shape(1), c = C.shape(0);
    if (m < 1 || m > c) throw py::value_error("m must be in 1..number of centroids");
    carray<int64_t> labels({n, m});
    carray<float> scores({n, m});
    const float *vp = V.data(), *cp = C.data();
    int64_t* lp = labels.mutable_data();
    float* sp = scores.mutable_data();
    int64_t bad;
    {
        py::gil_scoped_release release;
        bad = assign_topk(vp, uz(n), cp, uz(c), uz(d), static_cast<AssignMetric>(metric), uz(m), uz(threads), lp, sp);
    }
    return {labels, scores, bad};
}

std::tuple<carray<double>, carray<int64_t>> cluster_sums_py(const carray<float>& V, const carray<int64_t>& labels, py::ssize_t c) {
    require_rank(V, 2, "vectors");
    require_rank(labels, 1, "labels");
    const py::ssize_t n = V.shape(0), d = V.shape(1);
    require_len(labels.shape(0), n, "labels");
    if (c < 0) throw py::value_error("n_clusters must be >= 0");
    const int64_t* lp = labels.data();
    for (py::ssize_t i = 0; i < n; ++i)
        if (lp[i] < 0 || lp[i] >= c) throw py::index_error("labels[" + std::to_string(i) + "] out of range");
    carray<double> sums({c, d});
    carray<int64_t> counts({c});
    const float* vp = V.data();
    double* sp = sums.mutable_data();
    int64_t* kp = counts.mutable_data();
    {
        py::gil_scoped_release release;
        cluster_sums(vp, uz(n), uz(d), lp, uz(c), sp, kp);
    }
    return {sums, counts};
}

std::tuple<carray<float>, carray<int64_t>, int64_t> spherical_kmeans_loop_py(const carray<float>& V, const carray<float>& C0,
                                                                            py::ssize_t iters) {
    require_rank(V, 2, "vectors");
    require_rank(C0, 2, "centroids");
    const py::ssize_t n = V.shape(0), d = V.shape(1), k = C0.shape(0);
    require_len(C0.shape(1), d, "centroids columns");
    if (k < 1 || iters < 0) throw py::value_error("need at least one centroid and iters >= 0");
    carray<float> C({k, d});
    std::copy(C0.data(), C0.data() + k * d, C.mutable_data());
    carray<int64_t> labels({n});
    const float* vp = V.data();
    float* cp = C.mutable_data();
    int64_t* lp = labels.mutable_data();
    int64_t ran;
    {
        py::gil_scoped_release release;
        ran = spherical_kmeans_loop(vp, uz(n), uz(d), cp, uz(k), uz(iters), lp);
    }
    return {C, labels, ran};
}

}  // namespace

void bind_centroids(py::module_& m) {
    m.def("spherical_kmeans_loop", &spherical_kmeans_loop_py, py::arg("vectors").noconvert(),
          py::arg("centroids").noconvert(), py::arg("iters"),
          "Spherical k-means iterations from unit centroids (one thread). Returns (centroids, labels, "
          "iterations or -(1 + bad row)).");
    m.def("centroid_update", &centroid_update_py, py::arg("centroids").noconvert(), py::arg("counts").noconvert(),
          py::arg("node_ids").noconvert(), py::arg("vectors").noconvert(),
          "In-place running-mean update of centroids and counts for (node, vector) pairs, in order. "
          "Returns -1, or the first pair that made a centroid non-finite (then nothing changed).");
    m.def("assign_nearest", &assign_nearest_py, py::arg("vectors").noconvert(), py::arg("centroids").noconvert(),
          py::arg("metric"), py::arg("threads") = 0,
          "Nearest centroid per vector. Returns (labels, scores, bad_row).");
    m.def("assign_topk", &assign_topk_py, py::arg("vectors").noconvert(), py::arg("centroids").noconvert(),
          py::arg("metric"), py::arg("m"), py::arg("threads") = 0,
          "The m nearest centroids per vector, nearest first. Returns (labels (n, m), scores (n, m), bad_row).");
    m.def("cluster_sums", &cluster_sums_py, py::arg("vectors").noconvert(), py::arg("labels").noconvert(),
          py::arg("n_clusters"), "Per-cluster float64 sums and int64 counts.");
}

}  // namespace engramdb::bind
