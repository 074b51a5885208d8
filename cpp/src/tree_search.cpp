// tree_search.cpp: the fused J4 descent (see tree_search.h). Baseline-compiled; the dot products
// and norms go through the active ISA's primitives, one vector at a time, with the next
// candidate's row prefetched (tree rows are scattered through the matrices).
#include "engramdb/tree_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engramdb/dispatch.h"
#include "engramdb/topk.h"

namespace engramdb {
namespace {

struct Scorer {
    const IsaKernels& K;
    std::vector<float> q;  // unit query
    size_t d;
    std::vector<float> dot, sq;

    // cosines of the unit query with m consecutive rows from x (one primitive call per run of
    // rows, not per row); NaN for a row that is not finite
    const float* cosine_run(const float* x, size_t m) {
        dot.resize(m);
        sq.resize(m);
        K.dot_f32(q.data(), 1, x, m, d, dot.data());
        K.sqnorm_f32(x, m, d, sq.data());
        for (size_t i = 0; i < m; ++i) {
            if (!std::isfinite(dot[i]) || !std::isfinite(sq[i]))
                dot[i] = std::numeric_limits<float>::quiet_NaN();
            else
                dot[i] = sq[i] > 0 ? dot[i] / std::sqrt(sq[i]) : 0.f;
        }
        return dot.data();
    }

    // the same over half-precision unit rows
    const float* dot_run_f16(const uint16_t* x, size_t m) {
        dot.resize(m);
        K.dot_f16(q.data(), 1, x, m, d, dot.data());
        for (size_t i = 0; i < m; ++i)
            if (!std::isfinite(dot[i])) dot[i] = std::numeric_limits<float>::quiet_NaN();
        return dot.data();
    }

    // dot products with m consecutive unit rows: already cosines
    const float* dot_run(const float* x, size_t m) {
        dot.resize(m);
        K.dot_f32(q.data(), 1, x, m, d, dot.data());
        for (size_t i = 0; i < m; ++i)
            if (!std::isfinite(dot[i])) dot[i] = std::numeric_limits<float>::quiet_NaN();
        return dot.data();
    }
};

// Calls fn(first, count) for each run of consecutive values in sorted ids.
template <typename F>
void for_id_runs(const std::vector<int64_t>& ids, F&& fn) {
    size_t i = 0;
    while (i < ids.size()) {
        size_t j = i + 1;
        while (j < ids.size() && ids[j] == ids[j - 1] + 1) ++j;
        fn(i, j - i);
        i = j;
    }
}

inline void prefetch_row(const float* x, size_t d) {
#if defined(__GNUC__)
    for (size_t i = 0; i < d; i += 16) __builtin_prefetch(x + i);
#else
    (void)x;
    (void)d;
#endif
}

}  // namespace

int64_t tree_search(const float* q, const TreeView& t, const float* const* mats, const int64_t* bases,
                    size_t n_mats, const uint8_t* allowed, size_t n_keys, size_t beam, size_t probe, size_t k,
                    int64_t* keys, float* scores, TreeSearchStats* stats, int64_t* kept_leaves,
                    bool unit_rows, const uint16_t* rows_f16) {
    Scorer s{kernels(), std::vector<float>(q, q + t.d), t.d, {}, {}};
    double nq = 0;
    for (size_t i = 0; i < t.d; ++i) nq += static_cast<double>(q[i]) * q[i];
    const float inv = nq > 0 ? static_cast<float>(1.0 / std::sqrt(nq)) : 0.f;
    for (float& v : s.q) v *= inv;

    std::vector<int64_t> frontier{t.root}, cand;
    for (int level = t.height - 1; level >= 1; --level) {
        cand.clear();
        for (int64_t n : frontier)
            for (int64_t c = t.child_ptr[n]; c < t.child_ptr[n + 1]; ++c) cand.push_back(t.child_idx[c]);
        const size_t keep = level == 1 ? probe : beam;
        if (cand.size() <= keep) {
            frontier = cand;
            continue;
        }
        TopK best(keep);
        std::sort(cand.begin(), cand.end());  // in-order pushes make ties go to the lower id
        for_id_runs(cand, [&](size_t a, size_t m) {
            const float* v = s.cosine_run(t.centroids + static_cast<size_t>(cand[a]) * t.d, m);
            for (size_t i = 0; i < m; ++i)
                if (!std::isnan(v[i])) best.push(v[i], cand[a + i]);  // a broken node is never kept
        });
        stats->centroids += static_cast<int64_t>(cand.size());
        std::vector<int64_t> idx(keep);
        std::vector<float> sc(keep);
        best.write(idx.data(), sc.data());
        frontier.clear();
        for (int64_t n : idx)
            if (n >= 0) frontier.push_back(n);
    }
    stats->leaves = static_cast<int64_t>(frontier.size());
    for (size_t i = 0; i < frontier.size() && kept_leaves != nullptr; ++i) kept_leaves[i] = frontier[i];

    std::vector<int64_t> members;
    for (int64_t leaf : frontier)
        for (int64_t m = t.member_ptr[leaf]; m < t.member_ptr[leaf + 1]; ++m) {
            const int64_t key = t.member_idx[m];
            if (key < 0 || static_cast<size_t>(key) >= n_keys) continue;
            if (allowed != nullptr && !allowed[key]) continue;
            members.push_back(key);
        }
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    auto row_of = [&](int64_t key) {
        const size_t m = static_cast<size_t>(std::upper_bound(bases + 1, bases + n_mats + 1, key) - (bases + 1));
        return mats[m] + static_cast<size_t>(key - bases[m]) * t.d;
    };
    TopK top(k);
    int64_t bad = -1;
    size_t next = 0;
    if (rows_f16 != nullptr) {  // one half-precision matrix of unit rows: runs never split
        for_id_runs(members, [&](size_t a, size_t m) {
            if (bad >= 0) return;
            const float* v = s.dot_run_f16(rows_f16 + static_cast<size_t>(members[a]) * t.d, m);
            for (size_t i = 0; i < m; ++i) {
                if (std::isnan(v[i])) {
                    bad = members[a + i];
                    return;
                }
                if (v[i] > top.threshold()) top.push(v[i], members[a + i]);
            }
        });
        if (bad >= 0) return bad;
        stats->memories = static_cast<int64_t>(members.size());
        top.write(keys, scores);
        return -1;
    }
    for_id_runs(members, [&](size_t a, size_t m) {
        if (bad >= 0) return;
        // a run never crosses a matrix boundary: split it where the next matrix starts
        size_t done = 0;
        while (done < m) {
            const int64_t key = members[a + done];
            const size_t mat = static_cast<size_t>(std::upper_bound(bases + 1, bases + n_mats + 1, key) - (bases + 1));
            const size_t len = std::min<size_t>(m - done, static_cast<size_t>(bases[mat + 1] - key));
            next = a + done + len;
            if (next < members.size()) prefetch_row(row_of(members[next]), t.d);
            const float* v = unit_rows ? s.dot_run(row_of(key), len) : s.cosine_run(row_of(key), len);
            for (size_t i = 0; i < len; ++i) {
                if (std::isnan(v[i])) {
                    bad = members[a + done + i];
                    return;
                }
                if (v[i] > top.threshold()) top.push(v[i], members[a + done + i]);
            }
            done += len;
        }
    });
    if (bad >= 0) return bad;
    stats->memories = static_cast<int64_t>(members.size());
    top.write(keys, scores);
    return -1;
}

}  // namespace engramdb
