// centroids.h: N2, the two steps of k-means and the running-mean update of a tree's centroids.
//
// centroid_update applies c' = c + (v - c) / (n + 1), n' = n + 1 for each (node, vector) pair in
//   order (pairs for the same node compound exactly as one-by-one updates would), in float32.
// assign_nearest: nearest centroid per vector; l2 = squared distance (smallest wins), dot/cosine/
//   born = similarity (largest wins); ties go to the lower centroid index.
// cluster_sums: per-cluster float64 sums and counts.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engramdb/dense.h"

namespace engramdb {

// Counts must be >= 0 and stay below INT64_MAX through the batch (the binding checks). Returns
// -1, or the first pair whose vector makes its centroid non-finite (a NaN or inf in the
// vector, or overflow); then the batch is refused as a whole and nothing is changed. Rows are
// updated in input order, each saved before its first update.
int64_t centroid_update(float* C, int64_t* counts, size_t c, size_t d, const int64_t* nodes, const float* V, size_t m);

enum class AssignMetric : int { l2 = 0, dot = 1, cosine = 2, born = 3 };

// Returns the first vector with a non-finite score, or -1.
int64_t assign_nearest(const float* V, size_t n, const float* C, size_t c, size_t d, AssignMetric metric,
                       size_t threads, int64_t* labels, float* scores);

// The m nearest centroids of every vector, nearest first (labels and scores are (n, m) row-major;
// scores as assign_nearest's). Ties go to the lower centroid index. Returns the first vector with a
// non-finite score, or -1.
int64_t assign_topk(const float* V, size_t n, const float* C, size_t c, size_t d, AssignMetric metric, size_t m,
                    size_t threads, int64_t* labels, float* scores);

void cluster_sums(const float* V, size_t n, size_t d, const int64_t* labels, size_t c, double* sums,
                  int64_t* counts);

// Spherical k-means iterations from unit starting centroids C (k, d), updated in place; labels (n)
// are written. Each iteration: cosine assignment (assign_nearest), float64 cluster sums, an empty
// cluster re-seeded with the vector its cluster fits worst (lowest cosine, ties to the lower
// index), sums normalised to unit length. Stops after `iters` or once at most n / 1000 labels
// changed. One thread: for the small problems of a tree's leaf splits, where a Python loop over
// the same steps cost more than the arithmetic. Returns the iterations run, or -(1 + row) for a
// vector with a non-finite score.
int64_t spherical_kmeans_loop(const float* V, size_t n, size_t d, float* C, size_t k, size_t iters, int64_t* labels);

}  // namespace engramdb
