// N2 (centroids.h): the running-mean update and its all-or-nothing refusal, nearest-centroid
// assignment (one and m best) for every metric, float64 cluster sums and the spherical k-means
// loop of a tree's leaf splits; every ISA.
#include <algorithm>
#include <cstring>
#include <limits>

#include "engramdb/centroids.h"
#include "harness.h"

using engramdb::AssignMetric;
using harness::Scope;

namespace {

// Reference score of vector v against centroid c and a bound on the kernel's error; `higher`
// says whether larger is nearer for this metric.
double ref_assign(AssignMetric m, const float* v, const float* c, size_t d, double* tol) {
    double dot = 0, vv = 0, cc = 0, mag = 0;
    for (size_t i = 0; i < d; ++i) {
        dot += static_cast<double>(v[i]) * c[i];
        vv += static_cast<double>(v[i]) * v[i];
        cc += static_cast<double>(c[i]) * c[i];
        mag += std::fabs(static_cast<double>(v[i]) * c[i]);
    }
    const double t = harness::dot_tol(d, mag + vv + cc);
    switch (m) {
        case AssignMetric::l2:
            *tol = 4 * t;
            return std::max(0.0, vv - 2 * dot + cc);
        case AssignMetric::dot:
            *tol = t;
            return dot;
        case AssignMetric::cosine:
            *tol = (vv > 0 && cc > 0) ? 4 * t / std::sqrt(vv * cc) + 1e-6 : 1e-6;
            return (vv > 0 && cc > 0) ? dot / std::sqrt(vv * cc) : 0.0;
        case AssignMetric::born:
            *tol = 2 * std::fabs(dot) * t + 1e-9;
            return dot > 0 ? dot * dot : 0.0;
    }
    return 0;
}

const AssignMetric kMetrics[] = {AssignMetric::l2, AssignMetric::dot, AssignMetric::cosine, AssignMetric::born};

}  // namespace

TEST(centroid_update_is_a_running_mean_in_input_order) {
    harness::each_isa([](const std::string&) {
        for (size_t d : {1, 7, 8, 33, 64}) {
            Scope s("d", d);
            const size_t c = 6, m = 40;
            std::vector<float> C = harness::randvec(c * d);
            std::vector<int64_t> counts(c);
            for (int64_t& n : counts) n = harness::randint(0, 5);
            std::vector<int64_t> nodes(m);
            for (int64_t& n : nodes) n = harness::randint(0, static_cast<int64_t>(c) - 1);
            const std::vector<float> V = harness::randvec(m * d);
            // double reference: each centroid the mean of what it held and what it received
            std::vector<double> want(C.begin(), C.end());
            std::vector<int64_t> wc = counts;
            for (size_t p = 0; p < m; ++p) {
                const auto node = static_cast<size_t>(nodes[p]);
                for (size_t i = 0; i < d; ++i)
                    want[node * d + i] += (V[p * d + i] - want[node * d + i]) / static_cast<double>(wc[node] + 1);
                ++wc[node];
            }
            CHECK_EQ(engramdb::centroid_update(C.data(), counts.data(), c, d, nodes.data(), V.data(), m), int64_t{-1});
            CHECK(counts == wc);
            for (size_t i = 0; i < c * d; ++i) CHECK_NEAR(C[i], want[i], 2e-5);
        }
    });
}

TEST(centroid_update_refuses_a_batch_whole) {
    harness::each_isa([](const std::string&) {
        const float inf = std::numeric_limits<float>::infinity();
        for (size_t d : {1, 9, 40})
            for (int kind = 0; kind < 3; ++kind) {
                Scope s("d", d, "kind", kind);
                const size_t c = 4, m = 7;
                std::vector<float> C = harness::randvec(c * d);
                std::vector<int64_t> counts{0, 3, 1, 9};
                const std::vector<int64_t> nodes{1, 2, 1, 0, 3, 2, 1};
                std::vector<float> V = harness::randvec(m * d);
                if (kind == 0) V[5 * d + d - 1] = std::nanf("");
                if (kind == 1) V[5 * d] = inf;
                if (kind == 2) {  // finite values whose difference overflows float32
                    C[2 * d] = -3e38f;
                    V[5 * d] = 3e38f;
                    counts[2] = 0;
                }
                const std::vector<float> C0 = C;
                const std::vector<int64_t> counts0 = counts;
                if (kind == 2) {  // pair 1 already moved node 2 to a finite mean: then pair 5 overflows
                    V[1 * d] = -3e38f;
                }
                CHECK_EQ(engramdb::centroid_update(C.data(), counts.data(), c, d, nodes.data(), V.data(), m), int64_t{5});
                CHECK(std::memcmp(C.data(), C0.data(), C.size() * sizeof(float)) == 0);
                CHECK(counts == counts0);
            }
    });
}

TEST(assign_nearest_and_topk_match_float64) {
    for (size_t d : {1, 5, 8, 17, 64})
        for (size_t c : {1, 3, 9, 20})
            for (size_t n : {1, 13, 2000}) {
                const std::vector<float> V = harness::randvec(n * d), C = harness::randvec(c * d);
                for (AssignMetric metric : kMetrics) {
                    const bool higher = metric != AssignMetric::l2;
                    std::vector<double> ref(n * c), tol(n * c);
                    for (size_t r = 0; r < n; ++r)
                        for (size_t j = 0; j < c; ++j)
                            ref[r * c + j] = ref_assign(metric, V.data() + r * d, C.data() + j * d, d, &tol[r * c + j]);
                    harness::each_isa([&](const std::string&) {
                        Scope s("d", d, "c", c, "n", n, "metric", static_cast<int>(metric));
                        std::vector<int64_t> labels(n, -5);
                        std::vector<float> scores(n);
                        REQUIRE(engramdb::assign_nearest(V.data(), n, C.data(), c, d, metric, 3, labels.data(),
                                                         scores.data()) == -1);
                        const size_t m = std::min<size_t>(c, 3);
                        std::vector<int64_t> tl(n * m, -5);
                        std::vector<float> ts(n * m);
                        REQUIRE(engramdb::assign_topk(V.data(), n, C.data(), c, d, metric, m, 3, tl.data(), ts.data()) == -1);
                        for (size_t r = 0; r < n; ++r) {
                            const double* rr = ref.data() + r * c;
                            const double best = higher ? *std::max_element(rr, rr + c) : *std::min_element(rr, rr + c);
                            const double slack = 2 * *std::max_element(tol.begin() + static_cast<std::ptrdiff_t>(r * c),
                                                                       tol.begin() + static_cast<std::ptrdiff_t>(r * c + c));
                            REQUIRE(labels[r] >= 0 && labels[r] < static_cast<int64_t>(c));
                            const auto l = static_cast<size_t>(labels[r]);
                            CHECK_NEAR(rr[l], best, slack);
                            CHECK_NEAR(scores[r], rr[l], slack);
                            // the m best: distinct, nearest first, none better left out
                            for (size_t i = 0; i < m; ++i) {
                                const int64_t li = tl[r * m + i];
                                REQUIRE(li >= 0 && li < static_cast<int64_t>(c));
                                CHECK_NEAR(ts[r * m + i], rr[li], slack);
                                for (size_t i2 = 0; i2 < i; ++i2) CHECK(tl[r * m + i2] != li);
                                if (i > 0) CHECK(higher ? ts[r * m + i - 1] >= ts[r * m + i] : ts[r * m + i - 1] <= ts[r * m + i]);
                            }
                            CHECK_EQ(tl[r * m], labels[r]);
                            const double last = rr[tl[r * m + m - 1]];
                            for (size_t j = 0; j < c; ++j)
                                if (std::find(tl.begin() + static_cast<std::ptrdiff_t>(r * m),
                                              tl.begin() + static_cast<std::ptrdiff_t>(r * m + m),
                                              static_cast<int64_t>(j)) == tl.begin() + static_cast<std::ptrdiff_t>(r * m + m))
                                    CHECK(higher ? rr[j] <= last + 2 * slack : rr[j] >= last - 2 * slack);
                        }
                    });
                }
            }
}

TEST(assign_names_a_non_finite_vector) {
    harness::each_isa([](const std::string&) {
        const size_t n = 3000, d = 12, c = 5;
        std::vector<float> V = harness::randvec(n * d);
        const std::vector<float> C = harness::randvec(c * d);
        V[2500 * d + 11] = std::nanf("");
        V[2900 * d] = std::numeric_limits<float>::infinity();
        std::vector<int64_t> labels(n), tl(n * 2);
        std::vector<float> scores(n), ts(n * 2);
        for (AssignMetric metric : kMetrics) {
            Scope s("metric", static_cast<int>(metric));
            CHECK_EQ(engramdb::assign_nearest(V.data(), n, C.data(), c, d, metric, 3, labels.data(), scores.data()),
                     int64_t{2500});
            CHECK_EQ(engramdb::assign_topk(V.data(), n, C.data(), c, d, metric, 2, 3, tl.data(), ts.data()), int64_t{2500});
        }
    });
}

TEST(cluster_sums_are_exact_float64_sums) {
    harness::each_isa([](const std::string&) {
        for (size_t d : {1, 3, 4, 8, 37}) {
            Scope s("d", d);
            const size_t n = 500, c = 7;
            const std::vector<float> V = harness::randvec(n * d, -1e4f, 1e4f);
            std::vector<int64_t> labels(n);
            for (int64_t& l : labels) l = harness::randint(0, static_cast<int64_t>(c) - 2);  // the last stays empty
            std::vector<double> sums(c * d, 99.0), want(c * d, 0.0);
            std::vector<int64_t> counts(c, 99), wc(c, 0);
            for (size_t r = 0; r < n; ++r) {
                const auto l = static_cast<size_t>(labels[r]);
                for (size_t i = 0; i < d; ++i) want[l * d + i] += V[r * d + i];
                ++wc[l];
            }
            engramdb::cluster_sums(V.data(), n, d, labels.data(), c, sums.data(), counts.data());
            CHECK(sums == want);
            CHECK(counts == wc);
        }
    });
}

TEST(cluster_sums_of_nothing_touch_nothing) {
    // empty outputs may come as null pointers (an empty numpy array's data): clearing zero bytes
    // through one was undefined behaviour (memset's pointer must not be null)
    engramdb::cluster_sums(nullptr, 0, 4, nullptr, 0, nullptr, nullptr);
    const std::vector<float> V;  // three vectors of zero dimensions
    const std::vector<int64_t> labels{1, 0, 1};
    std::vector<double> sums;  // c * d = 0
    std::vector<int64_t> counts(2, 99);
    engramdb::cluster_sums(V.data(), 3, 0, labels.data(), 2, sums.data(), counts.data());
    CHECK_EQ(counts[0], int64_t{1});
    CHECK_EQ(counts[1], int64_t{2});
}

TEST(spherical_kmeans_separates_two_clusters_and_reseeds_empty_ones) {
    harness::each_isa([](const std::string&) {
        const size_t d = 16, n = 400;
        std::vector<float> V(n * d);
        for (size_t r = 0; r < n; ++r) {  // two tight groups around e0 and e1
            for (size_t i = 0; i < d; ++i) V[r * d + i] = harness::uniform(-0.05f, 0.05f);
            V[r * d + (r < n / 2 ? 0 : 1)] += 1.f;
        }
        for (size_t k : {2, 3, 5}) {
            Scope s("k", k);
            std::vector<float> C(k * d, 0.f);
            for (size_t j = 0; j < k; ++j) C[j * d + (j % 2)] = 1.f;  // k > 2: duplicated starts (an empty cluster)
            std::vector<int64_t> labels(n);
            const int64_t it = engramdb::spherical_kmeans_loop(V.data(), n, d, C.data(), k, 20, labels.data());
            CHECK(it >= 1 && it <= 20);
            std::vector<size_t> sizes(k, 0);
            for (size_t r = 0; r < n; ++r) {
                REQUIRE(labels[r] >= 0 && labels[r] < static_cast<int64_t>(k));
                ++sizes[static_cast<size_t>(labels[r])];
            }
            if (k == 2) {
                for (size_t r = 0; r < n; ++r) CHECK_EQ(labels[r], labels[r < n / 2 ? 0 : n - 1]);
                CHECK(labels[0] != labels[n - 1]);
            }
            for (size_t j = 0; j < k; ++j) {
                double nn = 0;
                for (size_t i = 0; i < d; ++i) nn += static_cast<double>(C[j * d + i]) * C[j * d + i];
                CHECK(std::fabs(nn - 1.0) < 1e-5 || nn == 0.0);
            }
        }
        std::vector<float> C(2 * d, 0.f);
        C[0] = C[d + 1] = 1.f;
        V[123 * d + 4] = std::nanf("");
        std::vector<int64_t> labels(n);
        CHECK_EQ(engramdb::spherical_kmeans_loop(V.data(), n, d, C.data(), 2, 5, labels.data()), int64_t{-124});
    });
}

HARNESS_MAIN
