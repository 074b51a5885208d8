// tree_search.h: J4 in one call: top-K beam descent of a centroid tree, then a top-k scan of the
// kept leaves' members, all by cosine. Python keeps the tree; this walks flat views of it.
//
// Nodes are numbered 0..n_nodes-1 with their (unnormalised) centroids as rows of C. Children and
// leaf members are CSR arrays over the same numbering: node i's children are
// child_idx[child_ptr[i]..child_ptr[i+1]), a leaf's memory keys member_idx[member_ptr[i]..).
// Keys index the rows of the vector matrices: key r lives in matrix s with bases[s] <= r <
// bases[s+1] (several segments in a store; one matrix for a bare tree). `allowed`, when given,
// is a byte per key: 0 = never scored (filters inside the scan). At each level above the leaves
// the `beam` best children are kept, at the leaf level the `probe` best leaves; fewer candidates
// than that are all kept without being scored. Ties go to the lower node id / key.
#pragma once
#include <cstddef>
#include <cstdint>

namespace engramdb {

struct TreeView {
    const float* centroids;
    size_t n_nodes;
    size_t d;
    const int64_t* child_ptr;
    const int64_t* child_idx;
    const int64_t* member_ptr;
    const int64_t* member_idx;
    int64_t root;
    int height;  // root level; leaves are level 1
};

struct TreeSearchStats {
    int64_t centroids = 0;  // centroid scores computed
    int64_t memories = 0;   // member scores computed
    int64_t leaves = 0;     // leaves kept
};

// Writes k keys and scores best first (padded with -1 / NaN). Returns -1, or the first key whose
// vector is not finite. `unit_rows`: the matrices' rows are already unit length (a tree's packed
// copy), so a member's cosine is its dot product alone (no norm pass over the row).
int64_t tree_search(const float* q, const TreeView& tree, const float* const* mats, const int64_t* bases,
                    size_t n_mats, const uint8_t* allowed, size_t n_keys, size_t beam, size_t probe, size_t k,
                    int64_t* keys, float* scores, TreeSearchStats* stats, int64_t* kept_leaves,
                    bool unit_rows = false, const uint16_t* rows_f16 = nullptr);
// rows_f16: when given, member keys are rows of this one (n_keys, d) matrix of IEEE binary16 unit
// rows (a tree's half-precision packed copy); mats and bases are then not read.

}  // namespace engramdb
