// centroids.cpp: N2 drivers over the ISA block primitives.
#include "engramdb/centroids.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engramdb/dispatch.h"
#include "engramdb/panels.h"
#include "engramdb/parallel.h"
#include "engramdb/topk.h"

namespace engramdb {

int64_t centroid_update(float* C, int64_t* counts, size_t c, size_t d, const int64_t* nodes, const float* V, size_t m) {
    const IsaKernels& K = kernels();
    // Pairs are applied in input order: the vectors then stream sequentially from memory (grouping
    // by node measured 2x slower: it turns that stream into random row reads). A row is saved the
    // first time the batch touches it, while it is being read anyway, so a refused batch can be
    // undone exactly; the blend itself reports a non-finite result. Scratch is kept per thread:
    // a fresh multi-megabyte buffer per batch costs page faults comparable to the update.
    thread_local std::vector<int64_t> slot;
    thread_local std::vector<size_t> touched;
    thread_local std::vector<float> saved;
    thread_local std::vector<int64_t> saved_counts;
    slot.assign(c, -1);
    touched.clear();
    saved.clear();
    saved_counts.clear();
    const size_t most = std::min(m, c);  // reserve once: growing would copy the snapshot again
    touched.reserve(most);
    saved.reserve(most * d);
    saved_counts.reserve(most);
    int64_t bad = -1;
    for (size_t p = 0; p < m; ++p) {
        const size_t node = static_cast<size_t>(nodes[p]);
        float* row = C + node * d;
        if (slot[node] < 0) {
            slot[node] = static_cast<int64_t>(touched.size());
            touched.push_back(node);
            saved.insert(saved.end(), row, row + d);
            saved_counts.push_back(counts[node]);
        }
        const int64_t n = counts[node];
        counts[node] = n + 1;
        if (!K.blend(row, V + p * d, d, 1.0f / static_cast<float>(n + 1))) {
            bad = static_cast<int64_t>(p);
            break;
        }
    }
    if (bad >= 0) {
        for (size_t t = 0; t < touched.size(); ++t) {
            std::memcpy(C + touched[t] * d, saved.data() + t * d, d * sizeof(float));
            counts[touched[t]] = saved_counts[t];
        }
    }
    if (saved.capacity() > (size_t{1} << 24)) std::vector<float>().swap(saved);  // pin <= 64 MiB
    return bad;
}

namespace {

// The scan both assignment kernels share: every vector's raw scores against all centroids, block
// by block, in parallel over the vectors. Centroid-side terms are computed once: squared norms
// (l2) or normalised copies (cosine), packed into panels. fn(row, scores of that row, |v|^2) sees
// finite scores only; the first row with a non-finite score is returned (or -1).
template <typename F>
int64_t scan_scores(const float* V, size_t n, const float* C, size_t c, size_t d, AssignMetric metric,
                    size_t threads, const std::vector<float>& csq, F&& fn) {
    const IsaKernels& K = kernels();
    std::vector<float> cn;
    const float* Cp = C;
    if (metric == AssignMetric::cosine) {
        cn.assign(C, C + c * d);
        for (size_t j = 0; j < c; ++j) {
            const float inv = csq[j] > 0 ? 1.f / std::sqrt(csq[j]) : 0.f;
            for (size_t i = 0; i < d; ++i) cn[j * d + i] *= inv;
        }
        Cp = cn.data();
    }
    const PanelBuffer panels = pack_panels(Cp, c, d);  // once per call, not once per block
    bool finite_c = true;
    for (size_t j = 0; j < c; ++j) finite_c &= std::isfinite(csq[j]);
    // Rows per block: the (block x c) score buffer stays near 256 KiB; whole 6-row tiles.
    const size_t block = std::clamp<size_t>(65536 / std::max<size_t>(c, 1), 6, 1020) / 6 * 6;
    const size_t nt = plan_threads(n, threads, 256);
    std::vector<int64_t> bad(nt, -1);
    parallel_for(n, nt, [&](size_t begin, size_t end, size_t t) {
        std::vector<float> buf(block * c), vsq(block, 0.f);
        for (size_t b = begin; b < end; b += block) {
            const size_t m = std::min(block, end - b);
            K.dot_panels(panels.get(), c, V + b * d, m, d, buf.data());
            if (metric == AssignMetric::l2 || metric == AssignMetric::cosine) K.sqnorm_f32(V + b * d, m, d, vsq.data());
            for (size_t r = 0; r < m; ++r) {
                const float* s = buf.data() + r * c;
                bool finite = std::isfinite(vsq[r]) && finite_c;  // one vectorisable pass
                for (size_t j = 0; j < c; ++j) finite &= (s[j] - s[j]) == 0.f;
                if (!finite) {
                    bad[t] = static_cast<int64_t>(b + r);
                    return;
                }
                fn(b + r, s, vsq[r]);
            }
        }
    });
    for (int64_t b : bad)
        if (b >= 0) return b;
    return -1;
}

// A raw score turned into what callers get: squared distance for l2 (from 2<v,c> - |c|^2, larger
// is nearer), cosine over |v|, born = max(0, s)^2, dot as is.
inline float finish(AssignMetric metric, float raw, float vsq) {
    if (metric == AssignMetric::l2) return std::max(0.f, vsq - raw);
    if (metric == AssignMetric::cosine) return vsq > 0 ? raw / std::sqrt(vsq) : 0.f;
    if (metric == AssignMetric::born) return raw > 0 ? raw * raw : 0.f;
    return raw;
}

// The m (<= kSmallTop, <= c) best of value(0..c-1), all finite, written best first: higher value,
// then lower j, as TopK orders them. An insertion-sorted array on the stack: TopK's heap allocates
// twice per row and sorts (allocating again) to write, which cost more than the scores themselves
// when c is a few dozen (a build's spill candidates score each vector against one parent's leaves).
constexpr size_t kSmallTop = 16;

template <typename F>
void small_top(size_t m, size_t c, F&& value, int64_t* labels, float* scores) {
    float top[kSmallTop];
    int64_t at[kSmallTop];
    size_t held = 0;
    for (size_t j = 0; j < c; ++j) {
        const float v = value(j);
        if (held == m && !(v > top[m - 1])) continue;  // an equal later value never wins its tie
        size_t pos = held < m ? held++ : m - 1;
        for (; pos > 0 && v > top[pos - 1]; --pos) {
            top[pos] = top[pos - 1];
            at[pos] = at[pos - 1];
        }
        top[pos] = v;
        at[pos] = static_cast<int64_t>(j);
    }
    for (size_t i = 0; i < m; ++i) {
        labels[i] = at[i];
        scores[i] = top[i];
    }
}

}  // namespace

int64_t assign_nearest(const float* V, size_t n, const float* C, size_t c, size_t d, AssignMetric metric,
                       size_t threads, int64_t* labels, float* scores) {
    std::vector<float> csq(c);
    kernels().sqnorm_f32(C, c, d, csq.data());
    const bool l2 = metric == AssignMetric::l2;
    return scan_scores(V, n, C, c, d, metric, threads, csq, [&](size_t row, const float* s, float vsq) {
        // arg-best of 2<v,c> - |c|^2 (l2: |v|^2 is the same for every centroid) or of the similarity
        size_t best = 0;
        float best_v = l2 ? 2.f * s[0] - csq[0] : s[0];
        for (size_t j = 1; j < c; ++j) {
            const float v = l2 ? 2.f * s[j] - csq[j] : s[j];
            if (v > best_v) {
                best_v = v;
                best = j;
            }
        }
        labels[row] = static_cast<int64_t>(best);
        scores[row] = finish(metric, best_v, vsq);
    });
}

int64_t assign_topk(const float* V, size_t n, const float* C, size_t c, size_t d, AssignMetric metric, size_t m,
                    size_t threads, int64_t* labels, float* scores) {
    std::vector<float> csq(c);
    kernels().sqnorm_f32(C, c, d, csq.data());
    const bool l2 = metric == AssignMetric::l2;
    if (m >= 1 && m <= kSmallTop && m <= c)  // else TopK, which pads rows past c with -1
        return scan_scores(V, n, C, c, d, metric, threads, csq, [&](size_t row, const float* s, float vsq) {
            if (l2)
                small_top(m, c, [&](size_t j) { return 2.f * s[j] - csq[j]; }, labels + row * m, scores + row * m);
            else
                small_top(m, c, [&](size_t j) { return s[j]; }, labels + row * m, scores + row * m);
            for (size_t i = 0; i < m; ++i) scores[row * m + i] = finish(metric, scores[row * m + i], vsq);
        });
    return scan_scores(V, n, C, c, d, metric, threads, csq, [&](size_t row, const float* s, float vsq) {
        TopK best(m);  // higher first, then lower centroid index
        for (size_t j = 0; j < c; ++j) {
            const float v = l2 ? 2.f * s[j] - csq[j] : s[j];
            if (v > best.threshold()) best.push(v, static_cast<int64_t>(j));
        }
        int64_t* lab = labels + row * m;
        float* sc = scores + row * m;
        best.write(lab, sc);
        for (size_t i = 0; i < m; ++i)
            if (lab[i] >= 0) sc[i] = finish(metric, sc[i], vsq);
    });
}

void cluster_sums(const float* V, size_t n, size_t d, const int64_t* labels, size_t c, double* sums,
                  int64_t* counts) {
    const IsaKernels& K = kernels();
    std::fill(sums, sums + c * d, 0.0);  // not memset: an empty output may be a null pointer
    std::fill(counts, counts + c, int64_t{0});
    for (size_t r = 0; r < n; ++r) {
        const size_t l = static_cast<size_t>(labels[r]);
        K.add_f64(sums + l * d, V + r * d, d);
        counts[l] += 1;
    }
}

int64_t spherical_kmeans_loop(const float* V, size_t n, size_t d, float* C, size_t k, size_t iters, int64_t* labels) {
    std::vector<int64_t> next(n);
    std::vector<float> score(n);
    std::vector<double> sums(k * d);
    std::vector<int64_t> counts(k);
    for (size_t r = 0; r < n; ++r) labels[r] = -1;
    size_t it = 0;
    while (it < iters) {
        ++it;
        const int64_t bad = assign_nearest(V, n, C, k, d, AssignMetric::cosine, 1, next.data(), score.data());
        if (bad >= 0) return -(1 + bad);
        size_t changed = 0;
        for (size_t r = 0; r < n; ++r) {
            changed += next[r] != labels[r];
            labels[r] = next[r];
        }
        cluster_sums(V, n, d, labels, k, sums.data(), counts.data());
        std::vector<size_t> empty;
        for (size_t c = 0; c < k; ++c)
            if (counts[c] == 0) empty.push_back(c);
        if (!empty.empty()) {  // re-seed each empty cluster with a vector its cluster fits worst
            std::vector<size_t> order(n);
            for (size_t r = 0; r < n; ++r) order[r] = r;
            std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });
            for (size_t j = 0; j < empty.size() && j < n; ++j) {
                const size_t w = order[j], c = empty[j];
                for (size_t t = 0; t < d; ++t) sums[c * d + t] = V[w * d + t];
                labels[w] = static_cast<int64_t>(c);
            }
        }
        for (size_t c = 0; c < k; ++c) {  // cast first, then normalise in float32 (as kmeans._unit)
            float* row = C + c * d;
            double nn = 0;
            for (size_t t = 0; t < d; ++t) {
                row[t] = static_cast<float>(sums[c * d + t]);
                nn += static_cast<double>(row[t]) * row[t];
            }
            const float norm = static_cast<float>(std::sqrt(nn));
            if (norm > 0)
                for (size_t t = 0; t < d; ++t) row[t] /= norm;
        }
        if (changed <= n / 1000) break;
    }
    return static_cast<int64_t>(it);
}

}  // namespace engramdb
