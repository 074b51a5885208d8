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

constexpr int32_t kTableLimit = 1 << 24;  // ids below this use a direct table (2 MiB bitmap)
constexpr int32_t kWeightTableLimit = 1 << 22;  // 16 MiB of float weights

}  // namespace

SparseError jaccard_topk(const int32_t* q_ids, const float* q_w, size_t nq_ids, const int64_t* indptr, size_t n,
                         const int32_t* ids, const float* w, const uint8_t* mask, size_t k, size_t threads,
                         int64_t* idx, float* scores, float* full) {
    const bool weighted = q_w != nullptr;
    const int32_t qmax = nq_ids > 0 ? q_ids[nq_ids - 1] : -1;
    // An empty query has no table (every row then scores 0: nothing intersects).
    const bool table = nq_ids > 0 && qmax < (weighted ? kWeightTableLimit : kTableLimit);
    std::vector<uint64_t> bits;
    std::vector<float> wtab;
    double q_total = 0;
    if (weighted) {
        for (size_t i = 0; i < nq_ids; ++i) q_total += q_w[i];
        if (table) {
            wtab.assign(static_cast<size_t>(qmax) + 1, 0.f);
            for (size_t i = 0; i < nq_ids; ++i) wtab[static_cast<size_t>(q_ids[i])] = q_w[i];
        }
    } else if (table) {
        bits.assign(static_cast<size_t>(qmax) / 64 + 1, 0);
        for (size_t i = 0; i < nq_ids; ++i) bits[static_cast<size_t>(q_ids[i]) >> 6] |= 1ULL << (q_ids[i] & 63);
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
            int32_t prev = -1;
            double inter = 0, d_total = 0;
            size_t qi = 0;  // merge cursor (no-table path)
            for (int64_t p = a; p < b; ++p) {
                const int32_t id = ids[p];
                if (id <= prev) {
                    errs[t] = {static_cast<int64_t>(r), id < 0 ? 2 : 1};
                    return;
                }
                prev = id;
                float wv = 1.f;
                if (weighted) {
                    wv = w[p];
                    if (!(wv >= 0.f) || !std::isfinite(wv)) {
                        errs[t] = {static_cast<int64_t>(r), 3};
                        return;
                    }
                    d_total += wv;
                }
                if (id > qmax) continue;
                if (table) {
                    if (weighted) {
                        inter += std::min(wtab[static_cast<size_t>(id)], wv);
                    } else {
                        inter += static_cast<double>((bits[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1ULL);
                    }
                } else {
                    while (qi < nq_ids && q_ids[qi] < id) ++qi;
                    if (qi < nq_ids && q_ids[qi] == id) inter += weighted ? std::min(q_w[qi], wv) : 1.0;
                }
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
