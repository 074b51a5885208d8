// density.cpp: HDBSCAN over a precomputed distance matrix (see density.h for the contract).
#include "engramdb/density.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "engramdb/dispatch.h"

namespace engramdb {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Edge {  // one step of Prim's tree, or one merge of the single linkage
    int64_t a, b;
    double w;
    int64_t size;
    double raw = 0.0;  // Prim's steps: the plain distance of the pair that gave w
};

struct Condensed {  // one row of the condensed tree
    int64_t parent, child;
    double lambda;
    int64_t size;
};

// Puts v in the sorted window of the k smallest so far (w[0..k), ascending), if it belongs.
template <typename T>
inline void insert_smallest(T* w, size_t k, T v) {
    if (!(v < w[k - 1])) return;
    size_t p = k - 1;
    while (p > 0 && w[p - 1] > v) {
        w[p] = w[p - 1];
        --p;
    }
    w[p] = v;
}

// Lanes of 16 bytes (GCC and Clang vector extensions; other compilers take the scalar loops).
#if defined(__GNUC__) || defined(__clang__)
typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));

// The entries of b[0..16) under `top`, as bits (bit q: b[q] < top), their soundness (not NaN,
// not infinite, not negative: false lanes for a NaN) ANDed into `ok`, branch-free over four
// lanes at a time.
inline unsigned block_under(const float* b, const F4 top, I4& ok) {
    const F4 zero = {0.f, 0.f, 0.f, 0.f};
    const F4 most = {std::numeric_limits<float>::max(), std::numeric_limits<float>::max(),
                     std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
    unsigned bits = 0;
    for (unsigned q = 0; q < 16; q += 4) {
        F4 x;
        __builtin_memcpy(&x, b + q, sizeof x);
        ok &= (x >= zero) & (x <= most);
        const I4 lo = x < top;
#if defined(__SSE__)
        bits |= static_cast<unsigned>(__builtin_ia32_movmskps(reinterpret_cast<F4>(lo))) << q;
#else
        bits |= ((lo[0] & 1u) | (lo[1] & 2u) | (lo[2] & 4u) | (lo[3] & 8u)) << q;
#endif
    }
    return bits;
}

// kth_smallest's window scan of a float row (k <= 16): see there. Only the entries under the
// window's largest are inserted, found by their bits (a block holding one was inserted entry by
// entry, a branch each: a tenth of the blocks of a 2,000-row matrix, most of the scan's time).
inline double kth_smallest_window(const float* row, size_t n, size_t k) {
    constexpr float kMax = std::numeric_limits<float>::max();
    float w[16];
    std::fill(w, w + k, std::numeric_limits<float>::infinity());
    I4 ok = {-1, -1, -1, -1};
    bool sound = true;
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const float top = w[k - 1];
        const F4 t = {top, top, top, top};
        for (unsigned bits = block_under(row + j, t, ok); bits != 0; bits &= bits - 1)
            insert_smallest(w, k, row[j + static_cast<size_t>(__builtin_ctz(bits))]);
    }
    for (; j < n; ++j) {
        sound &= row[j] >= 0.0f && row[j] <= kMax;
        insert_smallest(w, k, row[j]);
    }
    sound &= (ok[0] & ok[1] & ok[2] & ok[3]) != 0;
    return sound ? static_cast<double>(w[k - 1]) : std::nan("");
}
#endif

template <typename T>
inline void check_block(const T* b, T top, bool& sound, bool& under) {
    under = false;
    for (size_t t = 0; t < 16; ++t) {
        sound &= b[t] >= T(0) && b[t] <= std::numeric_limits<T>::max();
        under |= b[t] < top;
    }
}

// The k-th smallest entry of a row (k >= 1), as np.partition(row, k - 1)[k - 1]; NaN when the row
// holds a NaN, an infinity or a negative entry (checked in the same pass). For k <= 16, a sorted
// window of the k smallest: the row is read a block of 16 entries at a time, each block checked
// (every entry a distance? any under the window's largest?) without a branch per entry; only a
// block with an entry under the window's largest (few, once the window fills) is inserted entry
// by entry (issue 29: entry by entry throughout, the core distances were two thirds of a
// 2,000-memory HDBSCAN).
template <typename T>
double kth_smallest(const T* row, size_t n, size_t k, std::vector<double>& scratch) {
    constexpr T kMax = std::numeric_limits<T>::max();
    constexpr size_t kBlock = 16;
#if defined(__GNUC__) || defined(__clang__)
    if constexpr (std::is_same_v<T, float>)
        if (k <= kBlock) return kth_smallest_window(row, n, k);
#endif
    if (k <= kBlock) {
        T w[kBlock];
        std::fill(w, w + k, std::numeric_limits<T>::infinity());
        bool sound = true, under = false;
        size_t j = 0;
        for (; j + kBlock <= n; j += kBlock) {
            check_block(row + j, w[k - 1], sound, under);
            if (under)
                for (size_t t = 0; t < kBlock; ++t) insert_smallest(w, k, row[j + t]);
        }
        for (; j < n; ++j) {
            sound &= row[j] >= T(0) && row[j] <= kMax;
            insert_smallest(w, k, row[j]);
        }
        return sound ? static_cast<double>(w[k - 1]) : std::nan("");
    }
    bool sound = true;
    for (size_t j = 0; j < n; ++j) sound &= row[j] >= T(0) && row[j] <= kMax;
    if (!sound) return std::nan("");
    scratch.assign(row, row + n);
    std::nth_element(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(k - 1), scratch.end());
    return scratch[k - 1];
}

// Prim's minimum spanning tree of the mutual reachability graph, as scikit-learn's
// mst_from_mutual_reachability builds it (including the edge's recorded source).
template <typename T>
std::vector<Edge> prim(const T* D, size_t n, const std::vector<double>& core) {
    std::vector<Edge> mst;
    mst.reserve(n - 1);
    // The nodes still outside the tree, in ascending order (so ties go to the lowest index), and
    // each one's least reachability from the tree so far: the work halves as the tree grows. The
    // node a step picks leaves the list during the next step's pass, the nodes after it moved
    // down by one as they are read (issue 29: an erase from each list per step was a third of it).
    std::vector<uint32_t> out(n);
    std::iota(out.begin(), out.end(), 0u);
    std::vector<double> best(n, kInf);
    std::vector<uint32_t> from(n, 0);  // the tree node that gave each best
    size_t current = 0, gone = 0, m = n;  // gone: the list position of the node added last
    while (m > 1) {
        const T* row = D + current * n;
        const double cc = core[current];
        double low = kInf;
        size_t at = 0;
        for (size_t t = 0; t < gone; ++t) {  // before the node that left: in place
            const uint32_t j = out[t];
            const double r = std::max(std::max(cc, core[j]), static_cast<double>(row[j]));
            if (r < best[t]) {
                best[t] = r;
                from[t] = static_cast<uint32_t>(current);
            }
            if (best[t] < low) {  // strict: ties go to the lowest index
                low = best[t];
                at = t;
            }
        }
        for (size_t t = gone + 1; t < m; ++t) {  // after it: one place down
            const uint32_t j = out[t];
            const double r = std::max(std::max(cc, core[j]), static_cast<double>(row[j]));
            double b = best[t];
            uint32_t f = from[t];
            if (r < b) {
                b = r;
                f = static_cast<uint32_t>(current);
            }
            out[t - 1] = j;
            best[t - 1] = b;
            from[t - 1] = f;
            if (b < low) {
                low = b;
                at = t - 1;
            }
        }
        --m;
        const size_t pick = out[at];
        mst.push_back({static_cast<int64_t>(current), static_cast<int64_t>(pick), best[at], 0,
                       static_cast<double>(D[static_cast<size_t>(from[at]) * n + pick])});
        current = pick;
        gone = at;
    }
    return mst;
}

// Prim's tree as `prim` builds it (the same edges, sources and weights), each step by the ISA's
// `prim_row` over every node at once, a node already in the tree marked by NaN: contiguous
// vector loads where `prim`'s list of the nodes still out needs a gather per node (issue 29:
// 3.3 -> 2.0 ms at 2,000 nodes with AVX2). The weights are float32 entries, so float arithmetic
// gives `prim`'s double figures exactly; the ties go to the lowest node as there.
std::vector<Edge> prim_rows(const float* D, size_t n, const std::vector<double>& core,
                            size_t (*scan)(const float*, const float*, float*, uint32_t*, size_t, float, uint32_t)) {
    std::vector<Edge> mst;
    mst.reserve(n - 1);
    const float gone = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> best(n, std::numeric_limits<float>::infinity()), open(n);
    for (size_t i = 0; i < n; ++i) open[i] = static_cast<float>(core[i]);  // exact: each is a row's entry
    std::vector<uint32_t> from(n, 0);
    size_t current = 0;
    for (size_t step = 1; step < n; ++step) {
        best[current] = gone;
        open[current] = gone;
        const size_t pick = scan(D + current * n, open.data(), best.data(), from.data(), n,
                                 static_cast<float>(core[current]), static_cast<uint32_t>(current));
        if (pick >= n) break;  // no node left with a finite reach: not for a sound matrix (checked)
        mst.push_back({static_cast<int64_t>(current), static_cast<int64_t>(pick), static_cast<double>(best[pick]), 0,
                       static_cast<double>(D[static_cast<size_t>(from[pick]) * n + pick])});
        current = pick;
    }
    return mst;
}

// The single linkage of the tree's edges in weight order: merge i makes node n + i.
std::vector<Edge> single_linkage(std::vector<Edge> mst, size_t n) {
    std::stable_sort(mst.begin(), mst.end(),
                     [](const Edge& x, const Edge& y) { return x.w < y.w || (x.w == y.w && x.raw < y.raw); });
    std::vector<int64_t> parent(2 * n - 1), size(2 * n - 1, 1);
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](int64_t x) {
        int64_t r = x;
        while (parent[static_cast<size_t>(r)] != r) r = parent[static_cast<size_t>(r)];
        while (parent[static_cast<size_t>(x)] != r) {
            const int64_t next = parent[static_cast<size_t>(x)];
            parent[static_cast<size_t>(x)] = r;
            x = next;
        }
        return r;
    };
    std::vector<Edge> out;
    out.reserve(n - 1);
    int64_t next = static_cast<int64_t>(n);
    for (const Edge& e : mst) {
        const int64_t a = find(e.a), b = find(e.b);
        const int64_t s = size[static_cast<size_t>(a)] + size[static_cast<size_t>(b)];
        out.push_back({a, b, e.w, s});
        parent[static_cast<size_t>(a)] = parent[static_cast<size_t>(b)] = next;
        size[static_cast<size_t>(next)] = s;
        ++next;
    }
    return out;
}

// Breadth-first order of the dendrogram below `root` (leaves and merges), as bfs_from_hierarchy.
void bfs(const std::vector<Edge>& h, size_t n, int64_t root, std::vector<int64_t>& out) {
    out.clear();
    out.push_back(root);
    for (size_t i = 0; i < out.size(); ++i) {
        const int64_t x = out[i];
        if (x >= static_cast<int64_t>(n)) {
            const Edge& e = h[static_cast<size_t>(x) - n];
            out.push_back(e.a);
            out.push_back(e.b);
        }
    }
}

// The condensed tree (_condense_tree): clusters of at least min_size, and the points that fall out.
std::vector<Condensed> condense(const std::vector<Edge>& h, size_t n, int64_t min_size) {
    const int64_t root = static_cast<int64_t>(2 * n - 2);
    std::vector<int64_t> order, sub;
    bfs(h, n, root, order);
    std::vector<int64_t> relabel(2 * n - 1, 0);
    std::vector<char> ignore(2 * n - 1, 0);
    int64_t next = static_cast<int64_t>(n) + 1;
    relabel[static_cast<size_t>(root)] = static_cast<int64_t>(n);
    std::vector<Condensed> out;
    auto count = [&](int64_t x) { return x >= static_cast<int64_t>(n) ? h[static_cast<size_t>(x) - n].size : int64_t{1}; };
    auto fall_out = [&](int64_t from, int64_t node, double lambda) {
        bfs(h, n, from, sub);
        for (const int64_t s : sub) {
            if (s < static_cast<int64_t>(n)) out.push_back({relabel[static_cast<size_t>(node)], s, lambda, 1});
            ignore[static_cast<size_t>(s)] = 1;
        }
    };
    for (const int64_t node : order) {
        if (node < static_cast<int64_t>(n) || ignore[static_cast<size_t>(node)]) continue;
        const Edge& e = h[static_cast<size_t>(node) - n];
        const double lambda = e.w > 0.0 ? 1.0 / e.w : kInf;
        const int64_t lc = count(e.a), rc = count(e.b);
        const int64_t me = relabel[static_cast<size_t>(node)];
        if (lc >= min_size && rc >= min_size) {
            relabel[static_cast<size_t>(e.a)] = next++;
            out.push_back({me, relabel[static_cast<size_t>(e.a)], lambda, lc});
            relabel[static_cast<size_t>(e.b)] = next++;
            out.push_back({me, relabel[static_cast<size_t>(e.b)], lambda, rc});
        } else if (lc < min_size && rc < min_size) {
            fall_out(e.a, node, lambda);
            fall_out(e.b, node, lambda);
        } else if (lc < min_size) {
            relabel[static_cast<size_t>(e.b)] = me;
            fall_out(e.a, node, lambda);
        } else {
            relabel[static_cast<size_t>(e.a)] = me;
            fall_out(e.b, node, lambda);
        }
    }
    return out;
}

// Excess-of-mass selection (_compute_stability and _get_clusters' "eom"), then labels
// (_do_labelling): a point belongs to its nearest selected ancestor, else it is noise.
void select_and_label(const std::vector<Condensed>& tree, size_t n, int64_t* labels) {
    if (tree.empty()) {
        std::fill(labels, labels + n, int64_t{-1});
        return;
    }
    int64_t lo = tree[0].parent, hi = tree[0].parent, top_child = 0;
    for (const Condensed& r : tree) {
        lo = std::min(lo, r.parent);
        hi = std::max(hi, r.parent);
        top_child = std::max(top_child, r.child);
        if (r.size > 1) hi = std::max(hi, r.child);  // every cluster is some row's parent; guard anyway
    }
    const size_t span = static_cast<size_t>(std::max(top_child, lo)) + 1;
    std::vector<double> birth(span, std::nan(""));
    for (const Condensed& r : tree) birth[static_cast<size_t>(r.child)] = r.lambda;
    birth[static_cast<size_t>(lo)] = 0.0;
    std::vector<double> stability(static_cast<size_t>(hi - lo + 1), 0.0);
    for (const Condensed& r : tree)
        stability[static_cast<size_t>(r.parent - lo)] +=
            (r.lambda - birth[static_cast<size_t>(r.parent)]) * static_cast<double>(r.size);

    // Cluster-to-cluster rows: each cluster's children (two, or none) and its parent.
    const size_t clusters = stability.size();
    std::vector<std::vector<int64_t>> kids(clusters);
    std::vector<int64_t> up(clusters, -1);
    for (const Condensed& r : tree)
        if (r.size > 1) {
            kids[static_cast<size_t>(r.parent - lo)].push_back(r.child);
            up[static_cast<size_t>(r.child - lo)] = r.parent;
        }
    std::vector<char> chosen(clusters, 0);
    std::vector<int64_t> stack;
    for (int64_t c = hi; c > lo; --c) {  // children before parents; the root is never a cluster
        const size_t i = static_cast<size_t>(c - lo);
        chosen[i] = 1;
        double below = 0.0;
        for (const int64_t k : kids[i]) below += stability[static_cast<size_t>(k - lo)];
        if (below > stability[i]) {
            chosen[i] = 0;
            stability[i] = below;
        } else {
            stack.assign(kids[i].begin(), kids[i].end());
            while (!stack.empty()) {
                const int64_t d = stack.back();
                stack.pop_back();
                chosen[static_cast<size_t>(d - lo)] = 0;
                for (const int64_t k : kids[static_cast<size_t>(d - lo)]) stack.push_back(k);
            }
        }
    }
    std::vector<int64_t> number(clusters, -1);
    int64_t k = 0;
    for (size_t i = 0; i < clusters; ++i)
        if (chosen[i]) number[i] = k++;
    std::vector<int64_t> home(n, lo);  // each point's row: the cluster it fell out of
    for (const Condensed& r : tree)
        if (r.size == 1 && r.child < static_cast<int64_t>(n)) home[static_cast<size_t>(r.child)] = r.parent;
    for (size_t p = 0; p < n; ++p) {
        int64_t c = home[p];
        while (c != lo && !chosen[static_cast<size_t>(c - lo)]) c = up[static_cast<size_t>(c - lo)];
        labels[p] = c == lo ? -1 : number[static_cast<size_t>(c - lo)];
    }
}

}  // namespace

template <typename T>
int64_t hdbscan_precomputed(const T* D, size_t n, size_t min_cluster_size, size_t min_samples, int64_t* labels) {
    std::vector<double> core(n), scratch;
    for (size_t i = 0; i < n; ++i) {
        core[i] = kth_smallest(D + i * n, n, min_samples, scratch);
        if (std::isnan(core[i])) return static_cast<int64_t>(i);
    }
    if (n < 2) {
        std::fill(labels, labels + n, int64_t{-1});
        return -1;
    }
    std::vector<Edge> tree;
    if constexpr (std::is_same_v<T, float>) {
        if (auto* scan = kernels().prim_row; scan != nullptr && n <= UINT32_MAX) tree = prim_rows(D, n, core, scan);
    }
    if (tree.size() + 1 != n) tree = prim(D, n, core);
    const std::vector<Edge> h = single_linkage(std::move(tree), n);
    select_and_label(condense(h, n, static_cast<int64_t>(min_cluster_size)), n, labels);
    return -1;
}

template int64_t hdbscan_precomputed<float>(const float*, size_t, size_t, size_t, int64_t*);
template int64_t hdbscan_precomputed<double>(const double*, size_t, size_t, size_t, int64_t*);

namespace {

// Row i's sum in double, its diagonal entry left out. Exact in any order: every entry is a float32
// 1 - x with x >= 0 (a multiple of 2^-24 at most 2: Sterbenz for x in [0.5, 1], rounding above),
// so a row of a few million adds up in double without rounding.
double row_sum_off_diagonal(const float* row, size_t n, size_t i) {
    // four chains of scalar adds: a 32-byte double vector under the baseline ISA (two 16-byte
    // halves) was three times slower than this (3.1 against 1.0 ms a 2,000-row matrix)
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        s0 += static_cast<double>(row[j]);
        s1 += static_cast<double>(row[j + 1]);
        s2 += static_cast<double>(row[j + 2]);
        s3 += static_cast<double>(row[j + 3]);
    }
    double total = (s0 + s1) + (s2 + s3);
    for (; j < n; ++j) total += static_cast<double>(row[j]);
    return total - static_cast<double>(row[i]);
}

}  // namespace

void jaccard_from_overlaps(float* x, size_t n, const float* sizes, double* sums) {
    for (size_t i = 0; i < n; ++i) {
        float* row = x + i * n;
        const float si = sizes[i];
        size_t j = 0;
#if defined(__GNUC__) || defined(__clang__)
        // four lanes at a time, a zero (or NaN) union dividing by 1: the overlap as it is, as the
        // scalar loop leaves it. GCC keeps the scalar loop scalar (a select under its default
        // trapping math is control flow): 4.2 -> ~1.5 ms a 2,000-row matrix, the same figures
        const F4 one = {1.f, 1.f, 1.f, 1.f}, zero = {0.f, 0.f, 0.f, 0.f}, s4 = {si, si, si, si};
        for (; j + 4 <= n; j += 4) {
            F4 o, sj;
            __builtin_memcpy(&o, row + j, sizeof o);
            __builtin_memcpy(&sj, sizes + j, sizeof sj);
            const F4 u = (s4 - o) + sj;
            const I4 pos = u > zero;
            const F4 d = reinterpret_cast<F4>((reinterpret_cast<I4>(u) & pos) | (reinterpret_cast<I4>(one) & ~pos));
            const F4 r = one - o / d;
            __builtin_memcpy(row + j, &r, sizeof r);
        }
#endif
        for (; j < n; ++j) {
            const float u = (si - row[j]) + sizes[j];
            const float sim = u > 0.0f ? row[j] / u : row[j];
            row[j] = 1.0f - sim;
        }
        // while the row is in the core's cache (a pass of its own over the cold matrix later cost
        // a topic refresh ~3 ms a space at 2,000 memories)
        if (sums != nullptr) sums[i] = row_sum_off_diagonal(row, n, i);
    }
}

void distances_from_cosines(float* x, size_t rows, size_t cols, double* sums) {
    for (size_t i = 0; i < rows; ++i) {
        float* row = x + i * cols;
        for (size_t j = 0; j < cols; ++j) {
            const float d = 1.0f - row[j];
            row[j] = d < 0.0f ? 0.0f : d;
        }
        if (sums != nullptr) sums[i] = row_sum_off_diagonal(row, cols, i);
    }
}

// One pass over each row's member columns, group by group, four rows side by side: each row's sum
// still adds its columns in order, and the four chains of additions overlap (one alone waits on
// each add's latency). numpy needed a gather of the rows, one of their columns, a float64 copy and
// a reduceat over segments of a few columns each: eight times as long at 2,000 memories (issue 29).
template <typename T>
void group_sums(const T* D, size_t n, const int64_t* rows, size_t r, const int64_t* cols, size_t m,
                const int64_t* starts, size_t groups, double* out) {
    auto end_of = [&](size_t k) { return k + 1 < groups ? static_cast<size_t>(starts[k + 1]) : m; };
    size_t i = 0;
    for (; i + 4 <= r; i += 4) {
        const T* r0 = D + static_cast<size_t>(rows[i]) * n;
        const T* r1 = D + static_cast<size_t>(rows[i + 1]) * n;
        const T* r2 = D + static_cast<size_t>(rows[i + 2]) * n;
        const T* r3 = D + static_cast<size_t>(rows[i + 3]) * n;
        for (size_t k = 0; k < groups; ++k) {
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
            for (size_t c = static_cast<size_t>(starts[k]), b = end_of(k); c < b; ++c) {
                const size_t j = static_cast<size_t>(cols[c]);
                s0 += static_cast<double>(r0[j]);
                s1 += static_cast<double>(r1[j]);
                s2 += static_cast<double>(r2[j]);
                s3 += static_cast<double>(r3[j]);
            }
            out[i * groups + k] = s0;
            out[(i + 1) * groups + k] = s1;
            out[(i + 2) * groups + k] = s2;
            out[(i + 3) * groups + k] = s3;
        }
    }
    for (; i < r; ++i) {
        const T* row = D + static_cast<size_t>(rows[i]) * n;
        for (size_t k = 0; k < groups; ++k) {
            double sum = 0.0;
            for (size_t c = static_cast<size_t>(starts[k]), b = end_of(k); c < b; ++c)
                sum += static_cast<double>(row[static_cast<size_t>(cols[c])]);
            out[i * groups + k] = sum;
        }
    }
}

template void group_sums<float>(const float*, size_t, const int64_t*, size_t, const int64_t*, size_t, const int64_t*,
                                size_t, double*);
template void group_sums<double>(const double*, size_t, const int64_t*, size_t, const int64_t*, size_t,
                                 const int64_t*, size_t, double*);

}  // namespace engramdb
