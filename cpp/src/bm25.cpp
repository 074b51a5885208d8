// bm25.cpp: N3 BM25 term-at-a-time scoring into a dense accumulator, then a top-k over the docs
// the query touched. Scalar on purpose: the loop is a random read-modify-write per posting
// (latency-bound), as in bm25s and Lucene's term-at-a-time scorers.
#include "engramdb/bm25.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "engramdb/parallel.h"
#include "engramdb/topk.h"

namespace engramdb {
namespace {

struct Hit {
    float score;
    int64_t doc;
};

constexpr size_t kHeapK = 256;  // up to this k a heap beats selection

}  // namespace

Bm25Error bm25_topk(const int64_t* q_indptr, size_t nq, const int64_t* q_rows, const float* q_w,
                    const int64_t* indptr, size_t n_rows, const int32_t* docs, const float* tf, size_t n_postings,
                    const float* norm, size_t n_docs, float k1, const uint8_t* mask, size_t k, size_t threads,
                    int64_t* idx, float* scores, size_t sorted_k) {
    // one query per task; a thread keeps its accumulator (zeroed again through the touched list)
    const size_t nt = plan_threads(nq, threads, 1);
    std::vector<Bm25Error> errs(nt);
    const float kp1 = k1 + 1.f;
    parallel_for(nq, nt, [&](size_t begin, size_t end, size_t t) {
        // the accumulator outlives the call on this thread: every query leaves it all zero again
        // (through the touched list), so the next call skips allocating and zeroing n_docs floats
        thread_local std::vector<float> acc;
        thread_local std::vector<int32_t> touched;
        thread_local std::vector<Hit> hits;
        if (acc.size() < n_docs) acc.resize(n_docs, 0.f);
        for (size_t q = begin; q < end; ++q) {
            int err = 0;
            size_t n_touched = 0;
            for (int64_t j = q_indptr[q]; j < q_indptr[q + 1] && err == 0; ++j) {
                const int64_t r = q_rows[j];
                const float w = q_w[j];
                if (!(w >= 0.f) || !std::isfinite(w)) {
                    err = 4;
                    break;
                }
                if (r < 0 || w == 0.f) continue;
                if (static_cast<uint64_t>(r) >= n_rows) {
                    err = 1;
                    break;
                }
                const int64_t a = indptr[r], b = indptr[r + 1];
                if (a < 0 || b < a || static_cast<uint64_t>(b) > n_postings) {
                    err = 2;
                    break;
                }
                // a doc is listed when its cell is still 0: written always, counted when new, so
                // the loop has no branch on data (whether a doc is new is a coin toss after the
                // first term, and a mispredict per posting cost a third of the query)
                size_t used = n_touched;
                if (touched.size() < used + static_cast<size_t>(b - a)) touched.resize(used + static_cast<size_t>(b - a));
                int32_t* list = touched.data();
                float* cells = acc.data();
                for (int64_t p = a; p < b; ++p) {
                    const int32_t d = docs[p];
                    if (static_cast<uint32_t>(d) >= n_docs) {
                        err = 3;
                        break;
                    }
                    const float f = tf[p];
                    float& cell = cells[static_cast<size_t>(d)];
                    list[used] = d;
                    used += cell == 0.f ? 1 : 0;
                    cell += w * f * kp1 / (f + norm[d]);
                }
                n_touched = used;
            }
            // gather the allowed, matching docs (and zero the accumulator for the next query); a
            // doc listed twice (a zero-tf posting left it at 0) is read at 0 the second time
            if (err != 0) {
                for (size_t i = 0; i < n_touched; ++i) acc[static_cast<size_t>(touched[i])] = 0.f;
                if (errs[t].query < 0) errs[t] = {static_cast<int64_t>(q), err};
                continue;
            }
            if (k <= kHeapK) {  // a few results: a bounded heap rejects most docs at its threshold
                TopK h(k);
                for (size_t i = 0; i < n_touched; ++i) {
                    const int32_t d = touched[i];
                    const float v = acc[static_cast<size_t>(d)];
                    acc[static_cast<size_t>(d)] = 0.f;
                    if (v > 0.f && v >= h.threshold() && (mask == nullptr || mask[d])) h.push(v, d);
                }
                h.write(idx + q * k, scores + q * k);
                continue;
            }
            hits.clear();
            for (size_t i = 0; i < n_touched; ++i) {
                const int32_t d = touched[i];
                const float v = acc[static_cast<size_t>(d)];
                acc[static_cast<size_t>(d)] = 0.f;
                if (v > 0.f && (mask == nullptr || mask[d])) hits.push_back({v, d});
            }
            // many results: selection then a sort of the k kept, O(n + k log k), where a heap costs
            // O(n log k) (a pipeline asks for 10,000 candidates)
            auto better = [](const Hit& a, const Hit& b) { return TopK::better(a.score, a.doc, b.score, b.doc); };
            const size_t keep = hits.size() < k ? hits.size() : k;
            if (keep < hits.size()) std::nth_element(hits.begin(), hits.begin() + static_cast<std::ptrdiff_t>(keep), hits.end(), better);
            // only the first `sorted_k` need an order (a pipeline ranks the best ~1,000 of its
            // 10,000 candidates); the rest follow them, each worse than every sorted one
            const size_t ordered = keep < sorted_k ? keep : sorted_k;
            if (ordered < keep)
                std::nth_element(hits.begin(), hits.begin() + static_cast<std::ptrdiff_t>(ordered),
                                 hits.begin() + static_cast<std::ptrdiff_t>(keep), better);
            std::sort(hits.begin(), hits.begin() + static_cast<std::ptrdiff_t>(ordered), better);
            for (size_t i = 0; i < k; ++i) {
                idx[q * k + i] = i < keep ? hits[i].doc : -1;
                scores[q * k + i] = i < keep ? hits[i].score : std::numeric_limits<float>::quiet_NaN();
            }
        }
    });
    Bm25Error first;
    for (const Bm25Error& e : errs)
        if (e.query >= 0 && (first.query < 0 || e.query < first.query)) first = e;
    return first;
}

}  // namespace engramdb
