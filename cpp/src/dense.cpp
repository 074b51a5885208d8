// dense.cpp: the N1 scan driver. Baseline-compiled: it only loops over row blocks, calls the
// active ISA's block primitive, checks, transforms and feeds the per-query heaps.
#include "engramdb/dense.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "engramdb/dispatch.h"
#include "engramdb/panels.h"
#include "engramdb/parallel.h"
#include "engramdb/topk.h"

namespace engramdb {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline void dot_block(const IsaKernels& K, const float* Q, size_t nq, const float* X, size_t m, size_t d, float* o) {
    K.dot_f32(Q, nq, X, m, d, o);
}
inline void dot_block(const IsaKernels& K, const float* Q, size_t nq, const uint16_t* X, size_t m, size_t d,
                      float* o) {
    K.dot_f16(Q, nq, X, m, d, o);
}
inline void norm_block(const IsaKernels& K, const float* X, size_t m, size_t d, float* o) { K.sqnorm_f32(X, m, d, o); }
inline void norm_block(const IsaKernels& K, const uint16_t* X, size_t m, size_t d, float* o) {
    K.sqnorm_f16(X, m, d, o);
}

// Rows per block: enough to amortise the call, small enough that the score buffer stays in L1/L2
// and, for cosine, that the rows are still cached when their norms are taken.
size_t block_rows(size_t nq, size_t d, size_t elem, bool cosine) {
    size_t b = 16384 / std::max<size_t>(nq, 1);
    if (cosine) b = std::min(b, (192 * 1024) / std::max<size_t>(d * elem, 1));
    b = std::clamp<size_t>(b, 12, 2048);
    return b / 6 * 6;  // whole 6-row tiles: a leftover row runs a slower 1-row tile
}

// Rows per thread: at least ~2M multiply-adds each, so a thread is never started for less work
// than its start-up cost (tens of microseconds).
size_t work_grain(size_t nq, size_t d) {
    return std::max<size_t>(1024, (size_t{1} << 21) / std::max<size_t>(nq * d, 1));
}

std::vector<float> normalised(const float* Q, size_t nq, size_t d) {
    std::vector<float> out(Q, Q + nq * d);
    for (size_t j = 0; j < nq; ++j) {
        double s = 0;
        for (size_t i = 0; i < d; ++i) s += static_cast<double>(out[j * d + i]) * out[j * d + i];
        const float inv = s > 0 ? static_cast<float>(1.0 / std::sqrt(s)) : 0.f;
        for (size_t i = 0; i < d; ++i) out[j * d + i] *= inv;
    }
    return out;
}

// Calls fn(first, count) for each maximal run of allowed rows in [b, b + m).
template <typename F>
void for_runs(const uint8_t* mask, size_t b, size_t m, F&& fn) {
    if (mask == nullptr) {
        fn(b, m);
        return;
    }
    size_t r = b;
    const size_t end = b + m;
    while (r < end) {
        while (r < end && !mask[r]) ++r;
        const size_t s = r;
        while (r < end && mask[r]) ++r;
        if (r > s) fn(s, r - s);
    }
}

inline float apply_metric(Metric metric, float v, float sqnorm) {
    if (metric == Metric::cosine) return sqnorm > 0 ? v / std::sqrt(sqnorm) : 0.f;
    if (metric == Metric::born) return v > 0 ? v * v : 0.f;
    return v;
}

template <typename T>
int64_t scan(const float* Q, size_t nq, const T* X, size_t n, size_t d, Metric metric, const uint8_t* mask, size_t k,
             size_t threads, int64_t* idx, float* scores, float* full) {
    const IsaKernels& K = kernels();
    const bool cosine = metric == Metric::cosine;
    std::vector<float> qn;
    if (cosine) qn = normalised(Q, nq, d);
    const float* Qp = cosine ? qn.data() : Q;
    // Many queries against float32 rows: pack them into panels once for the whole scan.
    PanelBuffer panels;
    if (std::is_same_v<T, float> && nq >= kPanelWidth) panels = pack_panels(Qp, nq, d);
    const size_t block = block_rows(nq, d, sizeof(T), cosine);
    const size_t nt = plan_threads(n, threads, work_grain(nq, d));
    std::vector<std::vector<TopK>> heaps(nt, std::vector<TopK>(nq, TopK(k)));
    std::vector<int64_t> bad(nt, -1);

    parallel_for(n, nt, [&](size_t begin, size_t end, size_t t) {
        std::vector<float> buf(block * nq), norms(cosine ? block : 0);
        std::vector<TopK>& h = heaps[t];
        for (size_t b = begin; b < end; b += block) {
            const size_t m = std::min(block, end - b);
            for_runs(mask, b, m, [&](size_t s, size_t cnt) {
                if constexpr (std::is_same_v<T, float>) {
                    if (panels) {
                        K.dot_panels(panels.get(), nq, X + s * d, cnt, d, buf.data() + (s - b) * nq);
                    } else {
                        dot_block(K, Qp, nq, X + s * d, cnt, d, buf.data() + (s - b) * nq);
                    }
                } else {
                    dot_block(K, Qp, nq, X + s * d, cnt, d, buf.data() + (s - b) * nq);
                }
                if (cosine) norm_block(K, X + s * d, cnt, d, norms.data() + (s - b));
            });
            for (size_t r = 0; r < m; ++r) {
                const size_t row = b + r;
                if (mask != nullptr && !mask[row]) {
                    if (full != nullptr)
                        for (size_t j = 0; j < nq; ++j) full[j * n + row] = kNegInf;
                    continue;
                }
                const float* s = buf.data() + r * nq;
                const float sq = cosine ? norms[r] : 0.f;
                if (cosine && !std::isfinite(sq)) {
                    bad[t] = static_cast<int64_t>(row);
                    return;
                }
                for (size_t j = 0; j < nq; ++j) {
                    const float raw = s[j];
                    if (!std::isfinite(raw)) {
                        bad[t] = static_cast<int64_t>(row);
                        return;
                    }
                    const float v = apply_metric(metric, raw, sq);
                    if (full != nullptr) full[j * n + row] = v;
                    if (v > h[j].threshold()) h[j].push(v, static_cast<int64_t>(row));
                }
            }
        }
    });

    int64_t first_bad = -1;
    for (int64_t b : bad)
        if (b >= 0 && (first_bad < 0 || b < first_bad)) first_bad = b;
    if (first_bad >= 0) return first_bad;
    for (size_t j = 0; j < nq; ++j) {
        for (size_t t = 1; t < nt; ++t) heaps[0][j].merge(heaps[t][j]);
        heaps[0][j].write(idx + j * k, scores + j * k);
    }
    return -1;
}

}  // namespace

int64_t dense_topk(const float* Q, size_t nq, const void* X, bool f16, size_t n, size_t d, Metric metric,
                   const uint8_t* mask, size_t k, size_t threads, int64_t* idx, float* scores, float* full) {
    if (f16)
        return scan(Q, nq, static_cast<const uint16_t*>(X), n, d, metric, mask, k, threads, idx, scores, full);
    return scan(Q, nq, static_cast<const float*>(X), n, d, metric, mask, k, threads, idx, scores, full);
}

void dense_topk_i8(const int8_t* Q, size_t nq, const int8_t* X, size_t n, size_t d, const float* row_scale,
                   const uint8_t* mask, size_t k, size_t threads, int64_t* idx, float* scores) {
    const IsaKernels& K = kernels();
    const size_t block = block_rows(nq, d, 1, false);
    const size_t nt = plan_threads(n, threads, work_grain(nq, d));
    std::vector<std::vector<TopK>> heaps(nt, std::vector<TopK>(nq, TopK(k)));
    parallel_for(n, nt, [&](size_t begin, size_t end, size_t t) {
        std::vector<int32_t> buf(block * nq);
        std::vector<TopK>& h = heaps[t];
        for (size_t b = begin; b < end; b += block) {
            const size_t m = std::min(block, end - b);
            for_runs(mask, b, m, [&](size_t s, size_t cnt) {
                K.dot_i8(Q, nq, X + s * d, cnt, d, buf.data() + (s - b) * nq);
            });
            for (size_t r = 0; r < m; ++r) {
                const size_t row = b + r;
                if (mask != nullptr && !mask[row]) continue;
                const float scale = row_scale != nullptr ? row_scale[row] : 1.f;
                for (size_t j = 0; j < nq; ++j) {
                    const float v = static_cast<float>(buf[r * nq + j]) * scale;
                    if (v > h[j].threshold()) h[j].push(v, static_cast<int64_t>(row));
                }
            }
        }
    });
    for (size_t j = 0; j < nq; ++j) {
        for (size_t t = 1; t < nt; ++t) heaps[0][j].merge(heaps[t][j]);
        heaps[0][j].write(idx + j * k, scores + j * k);
    }
}

namespace {
// One row's score against a prepared query (unit length for cosine); false when it is not finite.
template <typename T>
inline bool score_row(const IsaKernels& K, const float* q, const T* row, size_t d, Metric metric, float* out) {
    float raw = 0.f, sq = 0.f;
    dot_block(K, q, 1, row, 1, d, &raw);
    if (metric == Metric::cosine) norm_block(K, row, 1, d, &sq);
    if (!std::isfinite(raw) || !std::isfinite(sq)) return false;
    *out = apply_metric(metric, raw, sq);
    return true;
}

template <typename T>
int64_t rescore(const float* Q, size_t nq, const T* X, size_t n, size_t d, Metric metric, const int64_t* cand,
                size_t L, size_t k, int64_t* idx, float* scores) {
    const IsaKernels& K = kernels();
    const bool cosine = metric == Metric::cosine;
    std::vector<float> qn;
    if (cosine) qn = normalised(Q, nq, d);
    const float* Qp = cosine ? qn.data() : Q;
    for (size_t j = 0; j < nq; ++j) {
        TopK h(k);
        for (size_t l = 0; l < L; ++l) {
            const int64_t r = cand[j * L + l];
            if (r < 0 || static_cast<size_t>(r) >= n) continue;
            float v;
            if (!score_row(K, Qp + j * d, X + static_cast<size_t>(r) * d, d, metric, &v)) return r;
            h.push(v, r);
        }
        h.write(idx + j * k, scores + j * k);
    }
    return -1;
}
}  // namespace

int64_t dense_rescore(const float* Q, size_t nq, const void* X, bool f16, size_t n, size_t d, Metric metric,
                      const int64_t* cand, size_t L, size_t k, int64_t* idx, float* scores) {
    if (f16) return rescore(Q, nq, static_cast<const uint16_t*>(X), n, d, metric, cand, L, k, idx, scores);
    return rescore(Q, nq, static_cast<const float*>(X), n, d, metric, cand, L, k, idx, scores);
}

namespace {
constexpr size_t kKeysAhead = 6;  // rows requested ahead of the one being scored

template <typename T>
int64_t rescore_keys(const float* q, size_t d, const T* const* mats, const int64_t* bases, size_t nseg, Metric metric,
                     const std::vector<int64_t>& keys, size_t k, size_t threads, std::vector<TopK>& heaps) {
    const IsaKernels& K = kernels();
    const bool cosine = metric == Metric::cosine;
    std::vector<float> qn;
    if (cosine) qn = normalised(q, 1, d);
    const float* qp = cosine ? qn.data() : q;
    const size_t nt = plan_threads(keys.size(), threads, 2048);
    heaps.assign(nt, TopK(k));
    std::vector<int64_t> bad(nt, -1);
    parallel_for(keys.size(), nt, [&](size_t begin, size_t end, size_t t) {
        TopK& h = heaps[t];
        auto row_of = [&](int64_t key) {
            // segments are few: a binary search over their starts finds the key's one
            const size_t s = static_cast<size_t>(std::upper_bound(bases, bases + nseg + 1, key) - bases) - 1;
            return mats[s] + static_cast<size_t>(key - bases[s]) * d;
        };
        for (size_t i = begin; i < end; ++i) {
            // scattered rows are latency-bound (a page walk and a DRAM trip each): request the
            // rows a few keys ahead so their misses overlap this row's arithmetic
            if (i + kKeysAhead < end) {
                const char* p = reinterpret_cast<const char*>(row_of(keys[i + kKeysAhead]));
                for (size_t b = 0; b < d * sizeof(T); b += 64) __builtin_prefetch(p + b);
            }
            const int64_t key = keys[i];
            float v;
            if (!score_row(K, qp, row_of(key), d, metric, &v)) {
                bad[t] = key;
                return;
            }
            h.push(v, key);
        }
    });
    for (int64_t b : bad)
        if (b >= 0) return b;
    return -1;
}
}  // namespace

int64_t dense_rescore_keys(const float* q, size_t d, const void* const* mats, bool f16, const int64_t* bases,
                           size_t nseg, Metric metric, const int64_t* keys, size_t nkeys, size_t k, size_t threads,
                           int64_t* out_keys, float* out_scores, size_t* out_n) {
    // duplicates (a key found by two recall methods) are scored once: a bitmap over the key space
    const size_t total = static_cast<size_t>(bases[nseg]);
    std::vector<uint64_t> seen((total + 63) / 64, 0);
    std::vector<int64_t> uniq;
    uniq.reserve(nkeys);
    for (size_t i = 0; i < nkeys; ++i) {
        const auto key = static_cast<uint64_t>(keys[i]);
        uint64_t& word = seen[key >> 6];
        const uint64_t bit = uint64_t{1} << (key & 63);
        if (word & bit) continue;
        word |= bit;
        uniq.push_back(keys[i]);
    }
    std::vector<TopK> heaps;
    const int64_t bad =
        f16 ? rescore_keys(q, d, reinterpret_cast<const uint16_t* const*>(mats), bases, nseg, metric, uniq, k, threads, heaps)
            : rescore_keys(q, d, reinterpret_cast<const float* const*>(mats), bases, nseg, metric, uniq, k, threads, heaps);
    if (bad >= 0) return bad;
    for (size_t t = 1; t < heaps.size(); ++t) heaps[0].merge(heaps[t]);  // plan_threads gives at least one
    *out_n = heaps[0].size();
    heaps[0].write(out_keys, out_scores);
    return -1;
}

double stream_sum(const float* x, size_t n, size_t threads) {
    const IsaKernels& K = kernels();
    const size_t nt = plan_threads(n, threads, size_t{1} << 20);
    std::vector<double> part(nt, 0.0);
    parallel_for(n, nt, [&](size_t begin, size_t end, size_t t) { part[t] = K.stream_sum(x + begin, end - begin); });
    double s = 0;
    for (double p : part) s += p;
    return s;
}

}  // namespace engramdb
