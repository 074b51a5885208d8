// Bindings for the fused centroid-tree search (J4).
#include "engramdb/tree_search.h"

#include <vector>

#include "util.h"

namespace engramdb::bind {

namespace {

std::tuple<carray<int64_t>, carray<float>, std::tuple<int64_t, int64_t, int64_t>, carray<int64_t>, int64_t>
tree_search_py(const carray<float>& q, const carray<float>& C, const carray<int64_t>& child_ptr,
               const carray<int64_t>& child_idx, const carray<int64_t>& member_ptr, const carray<int64_t>& member_idx,
               int64_t root, int height, const std::vector<carray<float>>& mats, const carray<int64_t>& bases,
               const std::optional<carray<uint8_t>>& allowed, py::ssize_t beam, py::ssize_t probe, py::ssize_t k,
               bool unit_rows, const std::optional<carray<uint16_t>>& rows_f16) {
    require_rank(q, 1, "query");
    require_rank(C, 2, "centroids");
    const py::ssize_t n_nodes = C.shape(0), d = C.shape(1);
    require_len(q.shape(0), d, "query");
    require_len(child_ptr.shape(0), n_nodes + 1, "child_ptr");
    require_len(member_ptr.shape(0), n_nodes + 1, "member_ptr");
    require_len(bases.shape(0), static_cast<py::ssize_t>(mats.size()) + 1, "bases");
    if (root < 0 || root >= n_nodes || height < 1 || k < 0 || beam < 1 || probe < 1)
        throw py::value_error("bad root, height, k, beam or probe");
    const int64_t* cp = child_ptr.data();
    const int64_t* mp = member_ptr.data();
    // CSR offsets are checked to rise up to their index array's length; a first offset below 0
    // made the kernel read before the index array.
    if (cp[0] != 0) throw py::value_error("child_ptr must start at 0, got " + std::to_string(cp[0]));
    if (mp[0] != 0) throw py::value_error("member_ptr must start at 0, got " + std::to_string(mp[0]));
    for (py::ssize_t i = 0; i < n_nodes; ++i)
        if (cp[i] > cp[i + 1] || mp[i] > mp[i + 1]) throw py::value_error("CSR pointers must not decrease");
    if (cp[n_nodes] != child_idx.shape(0) || mp[n_nodes] != member_idx.shape(0))
        throw py::value_error("CSR pointers do not match their index arrays");
    for (py::ssize_t i = 0; i < child_idx.shape(0); ++i)
        if (child_idx.data()[i] < 0 || child_idx.data()[i] >= n_nodes) throw py::index_error("child id out of range");
    std::vector<const float*> mp_rows;
    const int64_t* bp = bases.data();
    // key r lives in the matrix s with bases[s] <= r < bases[s + 1]: bases[0] above 0 made the
    // kernel read keys below it before the first matrix
    if (bp[0] != 0) throw py::value_error("bases must start at 0, got " + std::to_string(bp[0]));
    for (size_t s = 0; s < mats.size(); ++s) {
        require_rank(mats[s], 2, "matrix");
        require_len(mats[s].shape(1), d, "matrix columns");
        // bp[s] is a sum of row counts already checked, so adding one more cannot overflow (a
        // difference of two unchecked bases could)
        if (bp[s + 1] != bp[s] + mats[s].shape(0))
            throw py::value_error("matrix " + std::to_string(s) + " has " + std::to_string(mats[s].shape(0)) +
                                  " rows, but bases[" + std::to_string(s + 1) + "] = " + std::to_string(bp[s + 1]) +
                                  " (expected " + std::to_string(bp[s] + mats[s].shape(0)) + ")");
        mp_rows.push_back(mats[s].data());
    }
    py::ssize_t n_keys = mats.empty() ? 0 : bp[mats.size()];
    const uint16_t* hp = nullptr;
    if (rows_f16.has_value()) {
        require_rank(*rows_f16, 2, "rows_f16");
        require_len(rows_f16->shape(1), d, "rows_f16 columns");
        n_keys = rows_f16->shape(0);
        hp = rows_f16->data();
    }
    const uint8_t* ap = opt_ptr(allowed, n_keys, "allowed");
    TreeView view{C.data(), static_cast<size_t>(n_nodes), static_cast<size_t>(d), cp, child_idx.data(), mp,
                  member_idx.data(), root, height};
    carray<int64_t> keys({k});
    carray<float> scores({k});
    carray<int64_t> leaves({std::max<py::ssize_t>(probe, 1)});
    std::fill(leaves.mutable_data(), leaves.mutable_data() + leaves.size(), -1);
    TreeSearchStats st;
    int64_t bad;
    {
        py::gil_scoped_release release;
        bad = tree_search(q.data(), view, mp_rows.data(), bp, mp_rows.size(), ap, static_cast<size_t>(n_keys),
                          uz(beam), uz(probe), uz(k), keys.mutable_data(), scores.mutable_data(), &st,
                          leaves.mutable_data(), unit_rows, hp);
    }
    return {keys, scores, {st.centroids, st.memories, st.leaves}, leaves, bad};
}

}  // namespace

void bind_tree(py::module_& m) {
    m.def("tree_search", &tree_search_py, py::arg("query").noconvert(), py::arg("centroids").noconvert(),
          py::arg("child_ptr").noconvert(), py::arg("child_idx").noconvert(), py::arg("member_ptr").noconvert(),
          py::arg("member_idx").noconvert(), py::arg("root"), py::arg("height"), py::arg("matrices"),
          py::arg("bases").noconvert(), py::arg("allowed").noconvert(), py::arg("beam"), py::arg("probe"),
          py::arg("k"), py::arg("unit_rows") = false, py::arg("rows_f16").noconvert() = py::none(),
          "Top-K beam descent of a centroid tree and a top-k cosine scan of the kept leaves' members. "
          "unit_rows: the matrices' rows are unit length (cosine = dot). rows_f16: member keys are rows of "
          "this binary16 unit-row matrix instead (a packed copy). "
          "Returns (keys, scores, (centroids, memories, leaves) scored, kept leaf ids, bad_key).");
}

}  // namespace engramdb::bind
