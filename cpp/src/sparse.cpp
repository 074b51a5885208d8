// sparse.cpp: N3 Jaccard scan. Scalar on purpose: the work is one cached table probe per id
// (latency-bound), where AVX2 gathers measured no faster on the CPUs we target.
#include "engramdb/sparse.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engramdb/parallel.h"
#include "engramdb/topk.h"

namespace engramdb {
namespace {

constexpr int32_t kTableLimit = 1 << 22;  // ids below this use a direct table (4 MiB of marks at most)
constexpr int32_t kWeightTableLimit = 1 << 22;  // 16 MiB of float weights

}  // namespace

SparseError jaccard_topk(const int32_t* q_ids, const float* q_w, size_t nq_ids, const int64_t* indptr, size_t n,
                         const int32_t* ids, const float* w, const uint8_t* mask, size_t k, size_t threads,
                         int64_t* idx, float* scores, float* full) {
    const bool weighted = q_w != nullptr;
    const int32_t qmax = nq_ids > 0 ? q_ids[nq_ids - 1] : -1;
    // An empty query has no table (every row then scores 0: nothing intersects).
    const bool table = nq_ids > 0 && qmax < (weighted ? kWeightTableLimit : kTableLimit);
    std::vector<uint8_t> marks;
    std::vector<float> wtab;
    double q_total = 0;
    if (weighted) {
        for (size_t i = 0; i < nq_ids; ++i) q_total += q_w[i];
        if (table) {
            wtab.assign(static_cast<size_t>(qmax) + 1, 0.f);
            for (size_t i = 0; i < nq_ids; ++i) wtab[static_cast<size_t>(q_ids[i])] = q_w[i];
        }
    } else if (table) {
        // One byte per id up to the query's largest: a probe is one load, no shift or mask.
        marks.assign(static_cast<size_t>(qmax) + 1, 0);
        for (size_t i = 0; i < nq_ids; ++i) marks[static_cast<size_t>(q_ids[i])] = 1;
    }

    const size_t nt = plan_threads(n, threads, 16384);
    std::vector<TopK> heaps(nt, TopK(k));
    std::vector<SparseError> errs(nt);
    parallel_for(n, nt, [&](size_t begin, size_t end, size_t t) {
        TopK& h = heaps[t];
        for (size_t r = begin; r < end; ++r) {
            if (mask != nullptr && !mask[r]) {
                if (full != nullptr) full[r] = -1.f;
                continue;
            }
            const int64_t a = indptr[r], b = indptr[r + 1];
            const size_t nd = static_cast<size_t>(b - a);
            double inter = 0, d_total = 0;
            int err = 0;
            if (table && !weighted) {
                // Hot path: an integer count and a branch-free order check, no float chain.
                int32_t prev = -1;
                uint32_t unordered = 0, count = 0;
                for (int64_t p = a; p < b; ++p) {
                    const int32_t id = ids[p];
                    unordered |= static_cast<uint32_t>(id <= prev);
                    prev = id;
                    // Unsigned compare folds id < 0 into the range check.
                    if (static_cast<uint32_t>(id) <= static_cast<uint32_t>(qmax)) count += marks[static_cast<size_t>(id)];
                }
                if (unordered) err = (a < b && ids[a] < 0) ? 2 : 1;
                inter = count;
            } else {
                int32_t prev = -1;
                size_t qi = 0;  // merge cursor (no-table path)
                for (int64_t p = a; p < b && err == 0; ++p) {
                    const int32_t id = ids[p];
                    if (id <= prev) {
                        err = id < 0 ? 2 : 1;
                        break;
                    }
                    prev = id;
                    float wv = 1.f;
                    if (weighted) {
                        wv = w[p];
                        if (!(wv >= 0.f) || !std::isfinite(wv)) {
                            err = 3;
                            break;
                        }
                        d_total += wv;
                    }
                    if (id > qmax) continue;
                    if (table) {
                        inter += std::min(wtab[static_cast<size_t>(id)], wv);
                    } else {
                        while (qi < nq_ids && q_ids[qi] < id) ++qi;
                        if (qi < nq_ids && q_ids[qi] == id) inter += weighted ? std::min(q_w[qi], wv) : 1.0;
                    }
                }
            }
            if (err != 0) {
                errs[t] = {static_cast<int64_t>(r), err};
                return;
            }
            if (!weighted) d_total = static_cast<double>(nd);
            const double uni = (weighted ? q_total : static_cast<double>(nq_ids)) + d_total - inter;
            const float v = uni > 0 ? static_cast<float>(inter / uni) : 0.f;
            if (full != nullptr) full[r] = v;
            if (v > h.threshold()) h.push(v, static_cast<int64_t>(r));
        }
    });
    SparseError first;
    for (const SparseError& e : errs)
        if (e.row >= 0 && (first.row < 0 || e.row < first.row)) first = e;
    if (first.row >= 0) return first;
    for (size_t t = 1; t < nt; ++t) heaps[0].merge(heaps[t]);
    heaps[0].write(idx, scores);
    return first;
}

}  // namespace engramdb
