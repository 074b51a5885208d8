// density.cpp: HDBSCAN over a precomputed distance matrix (see density.h for the contract).
#include "engramdb/density.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

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

// The k-th smallest entry of a row (k >= 1), as np.partition(row, k - 1)[k - 1]; NaN when the row
// holds a NaN, an infinity or a negative entry (checked in the same pass).
template <typename T>
double kth_smallest(const T* row, size_t n, size_t k, std::vector<double>& scratch) {
    constexpr double kMax = std::numeric_limits<double>::max();
    bool sound = true;
    if (k <= 16) {  // a sorted window of the k smallest: one pass, no copy of the row
        scratch.assign(k, kInf);
        for (size_t j = 0; j < n; ++j) {
            const double v = static_cast<double>(row[j]);
            sound &= v >= 0.0 && v <= kMax;
            if (!(v < scratch[k - 1])) continue;
            size_t p = k - 1;
            while (p > 0 && scratch[p - 1] > v) {
                scratch[p] = scratch[p - 1];
                --p;
            }
            scratch[p] = v;
        }
        return sound ? scratch[k - 1] : std::nan("");
    }
    scratch.assign(row, row + n);
    for (const double v : scratch) sound &= v >= 0.0 && v <= kMax;
    if (!sound) return std::nan("");
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
    // each one's least reachability from the tree so far: the work halves as the tree grows.
    std::vector<uint32_t> out(n - 1);
    std::iota(out.begin(), out.end(), 1u);
    std::vector<double> best(n - 1, kInf);
    std::vector<uint32_t> from(n - 1, 0);  // the tree node that gave each best
    size_t current = 0;
    while (!out.empty()) {
        const T* row = D + current * n;
        const double cc = core[current];
        const size_t m = out.size();
        double low = kInf;
        size_t at = 0;
        for (size_t t = 0; t < m; ++t) {
            const uint32_t j = out[t];
            const double r = std::max(std::max(cc, core[j]), static_cast<double>(row[j]));
            if (r < best[t]) {
                best[t] = r;
                from[t] = static_cast<uint32_t>(current);
            }
            const double b = best[t];
            if (b < low) {  // strict: ties go to the lowest index
                low = b;
                at = t;
            }
        }
        const size_t pick = out[at];
        mst.push_back({static_cast<int64_t>(current), static_cast<int64_t>(pick), best[at], 0,
                       static_cast<double>(D[static_cast<size_t>(from[at]) * n + pick])});
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(at));
        best.erase(best.begin() + static_cast<std::ptrdiff_t>(at));
        from.erase(from.begin() + static_cast<std::ptrdiff_t>(at));
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
    const std::vector<Edge> h = single_linkage(prim(D, n, core), n);
    select_and_label(condense(h, n, static_cast<int64_t>(min_cluster_size)), n, labels);
    return -1;
}

template int64_t hdbscan_precomputed<float>(const float*, size_t, size_t, size_t, int64_t*);
template int64_t hdbscan_precomputed<double>(const double*, size_t, size_t, size_t, int64_t*);

}  // namespace engramdb
