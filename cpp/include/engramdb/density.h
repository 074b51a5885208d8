// density.h: HDBSCAN over a precomputed distance matrix (C4: each space's clustering of a
// namespace's memories).
//
// It follows scikit-learn's HDBSCAN(metric="precomputed") with its defaults (excess-of-mass
// selection, no single cluster, epsilon 0, alpha 1) step by step, so that its labels are that
// estimator's, numbered the same way:
//   core distance = the min_samples-th smallest entry of a row (the row's own zero included);
//   mutual reachability = max(core_i, core_j, d_ij);
//   Prim's tree from node 0, each step taking the nearest outside node (ties: the lowest index)
//     and recording the edge from the node added last, as scikit-learn does;
//   single linkage of the edges sorted by weight, condensed at min_cluster_size, stabilities,
//     excess-of-mass selection, labels numbered by condensed cluster id.
// One difference: the order of edges of equal weight. scikit-learn leaves it to numpy's sort (the
// platform's, arbitrary); here the edge whose pair is nearer in plain distance comes first, then
// Prim's order. Mutual reachability makes many weights equal (every edge that a core distance
// dominates), and the order decides the dendrogram among them: Prim's order alone chains a tied
// plateau into one lump (a LoCoMo conversation's term-set space: one cluster of 297 of 590
// memories), while nearer-first keeps what the plain distances say below the plateau.
//
// Why not scikit-learn itself: a 2,000-point fit spends a third of its time checking symmetry and
// holds the GIL through the tree, so a namespace's spaces could not be clustered side by side.
#pragma once
#include <cstddef>
#include <cstdint>

namespace engramdb {

// D is n x n row-major, read as given (it should be symmetric with a zero diagonal). Writes
// labels[n] (-1: noise). Returns -1, or the first row holding a NaN, an infinity or a negative
// distance (then labels are not written). Needs 2 <= min_samples <= n and min_cluster_size >= 2.
template <typename T>
int64_t hdbscan_precomputed(const T* D, size_t n, size_t min_cluster_size, size_t min_samples, int64_t* labels);

// Sums of a distance matrix's entries over groups of columns, for some of its rows (C4's join:
// each memory's distances to each topic's members). D is n x n row-major; `cols` holds m column
// indices, group k being cols[starts[k] .. starts[k + 1]) (the last ending at m). Writes
// out[i * groups + k] = the sum, in double, in the group's column order, of D[rows[i]][c] over its
// columns c. Needs every index in 0..n-1 and starts non-decreasing from 0, at most m (the binding
// checks).
// The distances HDBSCAN reads, made in place in one pass over an n x n float32 matrix (C4; numpy
// took a pass per operation). From term-set overlaps, 1 - Jaccard: union = (sizes[i] - x) +
// sizes[j], x = 1 - x / union (x / union left as x, 0, where the union is 0). From cosines,
// 1 - x clipped at 0 (a NaN stays NaN), x being rows x cols. float32 arithmetic, as numpy's on
// float32 arrays. With `sums` (one double per row; square x only for the cosines), each row's
// sum of its distances but the diagonal entry's, made in the same pass (exact: see density.cpp).
void jaccard_from_overlaps(float* x, size_t n, const float* sizes, double* sums = nullptr);
void distances_from_cosines(float* x, size_t rows, size_t cols, double* sums = nullptr);

template <typename T>
void group_sums(const T* D, size_t n, const int64_t* rows, size_t r, const int64_t* cols, size_t m,
                const int64_t* starts, size_t groups, double* out);

}  // namespace engramdb
