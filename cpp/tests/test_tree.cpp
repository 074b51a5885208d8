// J4 tree search (tree_search.h) against a descent done here in double: the kept nodes at each
// level, the kept leaves, and the k best members by cosine over segmented float32 rows, unit rows
// and binary16 unit rows; filters, out-of-range member keys and a non-finite row.
#include <algorithm>
#include <limits>
#include <numeric>

#include "engramdb/tree_search.h"
#include "harness.h"

using harness::Scope;

namespace {

struct Tree {
    // root 0 (level 3) -> nodes 1..3 (level 2) -> leaves 4..12 (level 1, three each)
    std::vector<float> C;
    std::vector<int64_t> child_ptr, child_idx, member_ptr, member_idx;
    size_t d;
};

Tree make_tree(size_t d, size_t n_keys) {
    Tree t;
    t.d = d;
    const size_t n_nodes = 13;
    t.C = harness::randvec(n_nodes * d);
    t.child_ptr = {0};
    for (size_t node = 0; node < n_nodes; ++node) {
        if (node == 0)
            for (int64_t c : {1, 2, 3}) t.child_idx.push_back(c);
        else if (node <= 3)
            for (int64_t j = 0; j < 3; ++j) t.child_idx.push_back(4 + 3 * (static_cast<int64_t>(node) - 1) + j);
        t.child_ptr.push_back(static_cast<int64_t>(t.child_idx.size()));
    }
    t.member_ptr = {0};
    for (size_t node = 0; node < n_nodes; ++node) {
        if (node >= 4)
            for (size_t key = node - 4; key < n_keys; key += 9) t.member_idx.push_back(static_cast<int64_t>(key));
        if (node == 5) {  // a repeated key and keys no matrix holds: skipped
            t.member_idx.push_back(1);
            t.member_idx.push_back(static_cast<int64_t>(n_keys));
            t.member_idx.push_back(-4);
        }
        t.member_ptr.push_back(static_cast<int64_t>(t.member_idx.size()));
    }
    return t;
}

double cosine(const float* q, const double* x, size_t d) {
    double dot = 0, qq = 0, xx = 0;
    for (size_t i = 0; i < d; ++i) {
        dot += q[i] * x[i];
        qq += static_cast<double>(q[i]) * q[i];
        xx += x[i] * x[i];
    }
    return qq > 0 && xx > 0 ? dot / std::sqrt(qq * xx) : 0.0;
}

// The `keep` best of `cand` by cosine with q (all of them when there are no more than keep).
std::vector<int64_t> best_nodes(const Tree& t, const float* q, std::vector<int64_t> cand, size_t keep) {
    if (cand.size() <= keep) return cand;
    std::vector<std::pair<double, int64_t>> s;
    for (int64_t c : cand) {
        std::vector<double> row(t.C.begin() + c * static_cast<int64_t>(t.d), t.C.begin() + (c + 1) * static_cast<int64_t>(t.d));
        s.push_back({cosine(q, row.data(), t.d), c});
    }
    std::sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    std::vector<int64_t> out;
    for (size_t i = 0; i < keep; ++i) out.push_back(s[i].second);
    return out;
}

}  // namespace

TEST(tree_search_matches_a_float64_descent) {
    const size_t d = 24, n_keys = 150;
    const Tree t = make_tree(d, n_keys);
    // keys 0..69 in matrix 0, 70..149 in matrix 1; float32 rows, the same rows at unit length,
    // and binary16 unit rows
    std::vector<float> rows = harness::randvec(n_keys * d), unit(n_keys * d);
    std::vector<uint16_t> half(n_keys * d);
    std::vector<double> exact32(n_keys * d), exact16(n_keys * d);
    for (size_t r = 0; r < n_keys; ++r) {
        double nn = 0;
        for (size_t i = 0; i < d; ++i) nn += static_cast<double>(rows[r * d + i]) * rows[r * d + i];
        for (size_t i = 0; i < d; ++i) {
            unit[r * d + i] = static_cast<float>(rows[r * d + i] / std::sqrt(nn));
            half[r * d + i] = harness::random_half();
        }
    }
    for (size_t i = 0; i < n_keys * d; ++i) exact16[i] = harness::half_value(half[i]);
    const engramdb::TreeView view{t.C.data(), 13, d, t.child_ptr.data(), t.child_idx.data(), t.member_ptr.data(),
                                  t.member_idx.data(), 0, 3};
    harness::each_isa([&](const std::string&) {
        for (int layout = 0; layout < 3; ++layout)  // 0 float32, 1 unit float32, 2 binary16
            for (size_t beam : {1, 2, 3})
                for (size_t probe : {1, 4, 9})
                    for (bool filtered : {false, true})
                        for (size_t k : {1, 10, 200}) {
                            Scope s("layout", layout, "beam", beam, "probe", probe, "filtered", filtered, "k", k);
                            const std::vector<float> q = harness::randvec(d);
                            const std::vector<float>& m = layout == 1 ? unit : rows;
                            const float* mats[] = {m.data(), m.data() + 70 * d};
                            const int64_t bases[] = {0, 70, 150};
                            std::vector<uint8_t> allowed(filtered ? n_keys : 0);
                            for (uint8_t& b : allowed) b = harness::randint(0, 2) != 0;
                            std::vector<int64_t> keys(k, 3), leaves(std::max<size_t>(probe, 1), -1);
                            std::vector<float> sc(k);
                            engramdb::TreeSearchStats st;
                            const int64_t bad = engramdb::tree_search(
                                q.data(), view, mats, bases, 2, filtered ? allowed.data() : nullptr, n_keys, beam,
                                probe, k, keys.data(), sc.data(), &st, leaves.data(), layout == 1,
                                layout == 2 ? half.data() : nullptr);
                            REQUIRE(bad == -1);
                            // the descent, in double
                            std::vector<int64_t> level2 = best_nodes(t, q.data(), {1, 2, 3}, beam), cand;
                            for (int64_t n : level2)
                                for (int64_t c = t.child_ptr[static_cast<size_t>(n)]; c < t.child_ptr[static_cast<size_t>(n) + 1]; ++c)
                                    cand.push_back(t.child_idx[static_cast<size_t>(c)]);
                            std::vector<int64_t> kept = best_nodes(t, q.data(), cand, probe);
                            CHECK_EQ(st.leaves, static_cast<int64_t>(kept.size()));
                            std::vector<int64_t> got_leaves(leaves.begin(), leaves.begin() + static_cast<std::ptrdiff_t>(kept.size()));
                            std::sort(got_leaves.begin(), got_leaves.end());
                            std::sort(kept.begin(), kept.end());
                            CHECK(got_leaves == kept);
                            std::vector<std::pair<int64_t, double>> ref;
                            for (int64_t leaf : kept)
                                for (int64_t p = t.member_ptr[static_cast<size_t>(leaf)]; p < t.member_ptr[static_cast<size_t>(leaf) + 1]; ++p) {
                                    const int64_t key = t.member_idx[static_cast<size_t>(p)];
                                    if (key < 0 || key >= static_cast<int64_t>(n_keys)) continue;
                                    if (filtered && !allowed[static_cast<size_t>(key)]) continue;
                                    if (std::any_of(ref.begin(), ref.end(), [key](const auto& x) { return x.first == key; })) continue;
                                    const auto at = static_cast<size_t>(key) * d;
                                    double score;
                                    if (layout == 2) {  // the half rows taken as unit: a dot product
                                        double qq = 0, dot = 0;
                                        for (size_t i = 0; i < d; ++i) qq += static_cast<double>(q[i]) * q[i], dot += q[i] * exact16[at + i];
                                        score = dot / std::sqrt(qq);
                                    } else {
                                        std::vector<double> x(m.begin() + static_cast<std::ptrdiff_t>(at), m.begin() + static_cast<std::ptrdiff_t>(at + d));
                                        score = cosine(q.data(), x.data(), d);
                                    }
                                    ref.push_back({key, score});
                                }
                            CHECK_EQ(st.memories, static_cast<int64_t>(ref.size()));
                            CHECK_TOPK(keys.data(), sc.data(), k, ref, layout == 2 ? 2e-5 : 2e-6);
                        }
    });
}

TEST(tree_search_names_a_non_finite_member_row) {
    const size_t d = 8, n_keys = 40;
    const Tree t = make_tree(d, n_keys);
    std::vector<float> rows = harness::randvec(n_keys * d);
    rows[17 * d + 7] = std::nanf("");
    std::vector<uint16_t> half(n_keys * d, 0x3c00);  // 1.0
    half[17 * d + 2] = 0x7c00;                       // +inf
    const float* mats[] = {rows.data()};
    const int64_t bases[] = {0, static_cast<int64_t>(n_keys)};
    const engramdb::TreeView view{t.C.data(), 13, d, t.child_ptr.data(), t.child_idx.data(), t.member_ptr.data(),
                                  t.member_idx.data(), 0, 3};
    const std::vector<float> q = harness::randvec(d);
    std::vector<int64_t> keys(5), leaves(9);
    std::vector<float> sc(5);
    engramdb::TreeSearchStats st;
    for (int layout = 0; layout < 3; ++layout) {
        Scope s("layout", layout);
        CHECK_EQ(engramdb::tree_search(q.data(), view, mats, bases, 1, nullptr, n_keys, 3, 9, 5, keys.data(), sc.data(),
                                       &st, leaves.data(), layout == 1, layout == 2 ? half.data() : nullptr),
                 int64_t{17});
        std::vector<uint8_t> allowed(n_keys, 1);
        allowed[17] = 0;  // filtered out: never read
        CHECK_EQ(engramdb::tree_search(q.data(), view, mats, bases, 1, allowed.data(), n_keys, 3, 9, 5, keys.data(),
                                       sc.data(), &st, leaves.data(), layout == 1, layout == 2 ? half.data() : nullptr),
                 int64_t{-1});
    }
}

TEST(tree_search_of_a_lone_leaf_and_of_an_empty_tree) {
    const size_t d = 4;
    const std::vector<float> C = harness::randvec(d), rows = harness::randvec(3 * d), q = harness::randvec(d);
    const std::vector<int64_t> ptr{0, 0}, mptr{0, 3}, members{2, 0, 1}, none;
    const float* mats[] = {rows.data()};
    const int64_t bases[] = {0, 3};
    std::vector<int64_t> keys(5), leaves(1);
    std::vector<float> sc(5);
    engramdb::TreeSearchStats st;
    const engramdb::TreeView leaf{C.data(), 1, d, ptr.data(), none.data(), mptr.data(), members.data(), 0, 1};
    CHECK_EQ(engramdb::tree_search(q.data(), leaf, mats, bases, 1, nullptr, 3, 1, 1, 5, keys.data(), sc.data(), &st,
                                   leaves.data()),
             int64_t{-1});
    CHECK_EQ(st.memories, int64_t{3});
    CHECK_EQ(keys[3], int64_t{-1});
    const std::vector<int64_t> empty_ptr{0, 0};
    const engramdb::TreeView empty{C.data(), 1, d, ptr.data(), none.data(), empty_ptr.data(), none.data(), 0, 1};
    engramdb::TreeSearchStats st2;
    CHECK_EQ(engramdb::tree_search(q.data(), empty, mats, bases, 1, nullptr, 3, 1, 1, 5, keys.data(), sc.data(), &st2,
                                   leaves.data()),
             int64_t{-1});
    CHECK_EQ(keys[0], int64_t{-1});
}

HARNESS_MAIN
