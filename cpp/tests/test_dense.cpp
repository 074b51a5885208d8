// N1 (dense.h): the scan drivers against float64 references, under every ISA, one and several
// threads, with and without a mask, float32 and binary16 rows, every metric.
#include <algorithm>
#include <limits>

#include "engramdb/dense.h"
#include "harness.h"

using engramdb::Metric;
using harness::Scope;

namespace {

struct Rows {  // n rows of d values as float32 and as binary16, with their exact values
    std::vector<float> f32;
    std::vector<uint16_t> f16;
    std::vector<double> exact32, exact16;
};

Rows make_rows(size_t n, size_t d) {
    Rows r;
    r.f32 = harness::randvec(n * d);
    r.f16.resize(n * d);
    for (uint16_t& h : r.f16) h = harness::random_half();
    for (float f : r.f32) r.exact32.push_back(f);
    for (uint16_t h : r.f16) r.exact16.push_back(harness::half_value(h));
    if (n > 4)  // a zero row: cosine scores it 0
        for (size_t i = 0; i < d; ++i) r.f32[3 * d + i] = 0.f, r.f16[3 * d + i] = 0, r.exact32[3 * d + i] = 0,
                                          r.exact16[3 * d + i] = 0;
    return r;
}

// The metric's score of query q against row x in double, and a bound on the kernel's error.
double ref_score(Metric m, const float* q, const double* x, size_t d, double* tol) {
    double dot = 0, mag = 0, qq = 0, xx = 0;
    for (size_t i = 0; i < d; ++i) {
        dot += q[i] * x[i];
        mag += std::fabs(q[i] * x[i]);
        qq += static_cast<double>(q[i]) * q[i];
        xx += x[i] * x[i];
    }
    const double t = harness::dot_tol(d, mag);
    if (m == Metric::dot) {
        *tol = t;
        return dot;
    }
    if (m == Metric::born) {
        *tol = 2 * std::fabs(dot) * t + t * t + 1e-12;
        return dot > 0 ? dot * dot : 0.0;
    }
    if (qq == 0 || xx == 0) {
        *tol = 1e-6;
        return 0.0;
    }
    *tol = 4 * t / std::sqrt(qq * xx) + 4e-7;  // normalised query, float norms, a division
    return dot / std::sqrt(qq * xx);
}

std::vector<uint8_t> random_mask(size_t n, bool use) {
    std::vector<uint8_t> m(use ? n : 0);
    for (uint8_t& b : m) b = harness::randint(0, 3) != 0;
    return m;
}

}  // namespace

TEST(dense_topk_matches_float64_and_its_own_full_scores) {
    struct Shape {
        size_t nq, n, d, threads;
    };
    const Shape shapes[] = {{1, 1, 1, 1},   {1, 50, 7, 1},   {3, 50, 17, 1},  {9, 61, 33, 1},
                            {9, 8000, 64, 3}, {2, 3000, 385, 2}, {17, 300, 8, 2}, {8, 13, 0, 1}};
    for (const Shape& sh : shapes) {
        const Rows rows = make_rows(sh.n, sh.d);
        const std::vector<float> Q = harness::randvec(sh.nq * sh.d);
        for (bool f16 : {false, true})
            for (Metric metric : {Metric::dot, Metric::cosine, Metric::born}) {
                Scope s("nq", sh.nq, "n", sh.n, "d", sh.d, "threads", sh.threads, "f16", f16, "metric",
                        static_cast<int>(metric));
                // the float64 scores, computed once for every ISA, mask and k below
                const std::vector<double>& exact = f16 ? rows.exact16 : rows.exact32;
                std::vector<double> want(sh.nq * sh.n), tol(sh.nq * sh.n);
                for (size_t j = 0; j < sh.nq; ++j)
                    for (size_t r = 0; r < sh.n; ++r)
                        want[j * sh.n + r] =
                            ref_score(metric, Q.data() + j * sh.d, exact.data() + r * sh.d, sh.d, &tol[j * sh.n + r]);
                const void* X = f16 ? static_cast<const void*>(rows.f16.data()) : rows.f32.data();
                harness::each_isa([&](const std::string&) {
                    for (bool masked : {false, true})
                        for (size_t k : {size_t{0}, size_t{1}, size_t{5}, sh.n <= 64 ? sh.n + 3 : size_t{40}}) {
                            if (sh.n > 1000 && k < 5) continue;  // the small shapes cover k = 0 and 1
                            Scope s2("masked", masked, "k", k);
                            const std::vector<uint8_t> mask = random_mask(sh.n, masked);
                            std::vector<int64_t> idx(sh.nq * k, 77);
                            std::vector<float> sc(sh.nq * k), full(sh.nq * sh.n, std::nanf(""));
                            const int64_t bad = engramdb::dense_topk(Q.data(), sh.nq, X, f16, sh.n, sh.d, metric,
                                                                     masked ? mask.data() : nullptr, k, sh.threads,
                                                                     idx.data(), sc.data(), full.data());
                            REQUIRE(bad == -1);
                            for (size_t j = 0; j < sh.nq; ++j) {
                                std::vector<std::pair<int64_t, double>> cand;
                                std::vector<std::pair<float, int64_t>> own;
                                double worst_tol = 0;
                                for (size_t r = 0; r < sh.n; ++r) {
                                    const float got = full[j * sh.n + r];
                                    if (masked && !mask[r]) {
                                        CHECK_EQ(got, -std::numeric_limits<float>::infinity());
                                        continue;
                                    }
                                    CHECK_NEAR(got, want[j * sh.n + r], tol[j * sh.n + r]);
                                    cand.push_back({static_cast<int64_t>(r), want[j * sh.n + r]});
                                    own.push_back({got, static_cast<int64_t>(r)});
                                    worst_tol = std::max(worst_tol, tol[j * sh.n + r]);
                                }
                                CHECK_TOPK(idx.data() + j * k, sc.data() + j * k, k, cand, worst_tol);
                                // and exactly the k best of the kernel's own full scores
                                std::sort(own.begin(), own.end(), [](const auto& a, const auto& b) {
                                    return a.first > b.first || (a.first == b.first && a.second < b.second);
                                });
                                for (size_t i = 0; i < std::min(k, own.size()); ++i) {
                                    CHECK_EQ(idx[j * k + i], own[i].second);
                                    CHECK_EQ(sc[j * k + i], own[i].first);
                                }
                            }
                        }
                });
            }
    }
}

TEST(dense_topk_without_full_equals_with_full) {
    harness::each_isa([](const std::string&) {
        const size_t nq = 5, n = 5000, d = 40, k = 10;
        const Rows rows = make_rows(n, d);
        const std::vector<float> Q = harness::randvec(nq * d);
        std::vector<int64_t> a(nq * k), b(nq * k);
        std::vector<float> sa(nq * k), sb(nq * k), full(nq * n);
        CHECK_EQ(engramdb::dense_topk(Q.data(), nq, rows.f32.data(), false, n, d, Metric::cosine, nullptr, k, 3,
                                      a.data(), sa.data(), nullptr),
                 int64_t{-1});
        CHECK_EQ(engramdb::dense_topk(Q.data(), nq, rows.f32.data(), false, n, d, Metric::cosine, nullptr, k, 1,
                                      b.data(), sb.data(), full.data()),
                 int64_t{-1});
        CHECK(a == b);
        CHECK(sa == sb);
    });
}

TEST(dense_topk_names_the_first_non_finite_allowed_row) {
    harness::each_isa([](const std::string&) {
        for (bool f16 : {false, true})
            for (size_t threads : {1, 3}) {
                Scope s("f16", f16, "threads", threads);
                const size_t n = 6000, d = 64, nq = 8, k = 3;  // threads > 1: two ranges of 3000
                Rows rows = make_rows(n, d);
                rows.f32[4100 * d + 5] = std::numeric_limits<float>::infinity();
                rows.f16[4100 * d + 5] = 0x7c00;  // +inf
                rows.f32[5000 * d] = std::nanf("");
                rows.f16[5000 * d] = 0x7e00;  // NaN
                rows.f32[5900 * d + 63] = std::numeric_limits<float>::infinity();  // the last element of a row
                rows.f16[5900 * d + 63] = 0xfc00;
                const std::vector<float> Q = harness::randvec(nq * d, 0.1f, 1.f);
                std::vector<int64_t> idx(nq * k);
                std::vector<float> sc(nq * k);
                const void* X = f16 ? static_cast<const void*>(rows.f16.data()) : rows.f32.data();
                for (Metric m : {Metric::dot, Metric::cosine, Metric::born})
                    CHECK_EQ(engramdb::dense_topk(Q.data(), nq, X, f16, n, d, m, nullptr, k, threads, idx.data(),
                                                  sc.data(), nullptr),
                             int64_t{4100});
                std::vector<uint8_t> mask(n, 1);
                mask[4100] = 0;  // a row outside the mask is never read as a score
                CHECK_EQ(engramdb::dense_topk(Q.data(), nq, X, f16, n, d, Metric::dot, mask.data(), k, threads,
                                              idx.data(), sc.data(), nullptr),
                         int64_t{5000});
                mask[5000] = 0;
                mask[5900] = 0;
                CHECK_EQ(engramdb::dense_topk(Q.data(), nq, X, f16, n, d, Metric::dot, mask.data(), k, threads,
                                              idx.data(), sc.data(), nullptr),
                         int64_t{-1});
            }
    });
}

TEST(dense_topk_i8_is_exact) {
    harness::each_isa([](const std::string&) {
        for (size_t nq : {1, 3, 5})
            for (size_t d : {1, 15, 16, 33, 100})
                for (bool scaled : {false, true})
                    for (bool masked : {false, true}) {
                        Scope s("nq", nq, "d", d, "scaled", scaled, "masked", masked);
                        const size_t n = 3000, k = 7;
                        std::vector<int8_t> Q(nq * d), X(n * d);
                        for (int8_t& v : Q) v = static_cast<int8_t>(harness::randint(-128, 127));
                        for (int8_t& v : X) v = static_cast<int8_t>(harness::randint(-128, 127));
                        const std::vector<float> scale = harness::randvec(scaled ? n : 0, 0.5f, 2.f);
                        const std::vector<uint8_t> mask = random_mask(n, masked);
                        std::vector<int64_t> idx(nq * k);
                        std::vector<float> sc(nq * k);
                        engramdb::dense_topk_i8(Q.data(), nq, X.data(), n, d, scaled ? scale.data() : nullptr,
                                                masked ? mask.data() : nullptr, k, 2, idx.data(), sc.data());
                        for (size_t j = 0; j < nq; ++j) {
                            std::vector<std::pair<float, int64_t>> all;
                            for (size_t r = 0; r < n; ++r) {
                                if (masked && !mask[r]) continue;
                                int64_t dot = 0;
                                for (size_t i = 0; i < d; ++i) dot += int64_t{Q[j * d + i]} * X[r * d + i];
                                all.push_back({static_cast<float>(dot) * (scaled ? scale[r] : 1.f), static_cast<int64_t>(r)});
                            }
                            std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
                                return a.first > b.first || (a.first == b.first && a.second < b.second);
                            });
                            for (size_t i = 0; i < k; ++i) {
                                CHECK_EQ(idx[j * k + i], all[i].second);
                                CHECK_EQ(sc[j * k + i], all[i].first);
                            }
                        }
                    }
    });
}

TEST(dense_rescore_scores_only_valid_candidates) {
    harness::each_isa([](const std::string&) {
        for (bool f16 : {false, true})
            for (Metric metric : {Metric::dot, Metric::cosine, Metric::born}) {
                Scope s("f16", f16, "metric", static_cast<int>(metric));
                const size_t nq = 3, n = 200, d = 19, L = 12, k = 5;
                const Rows rows = make_rows(n, d);
                const std::vector<float> Q = harness::randvec(nq * d);
                std::vector<int64_t> cand(nq * L);
                for (size_t j = 0; j < nq; ++j)
                    for (size_t l = 0; l < L; ++l)  // distinct rows, a -1 and two past the end
                        cand[j * L + l] = l == 2 ? -1 : l == 5 ? static_cast<int64_t>(n) : l == 7 ? int64_t{1} << 40
                                                                                                   : static_cast<int64_t>(j * 50 + l * 3);
                std::vector<int64_t> idx(nq * k);
                std::vector<float> sc(nq * k);
                const void* X = f16 ? static_cast<const void*>(rows.f16.data()) : rows.f32.data();
                REQUIRE(engramdb::dense_rescore(Q.data(), nq, X, f16, n, d, metric, cand.data(), L, k, idx.data(),
                                                sc.data()) == -1);
                const std::vector<double>& exact = f16 ? rows.exact16 : rows.exact32;
                for (size_t j = 0; j < nq; ++j) {
                    std::vector<std::pair<int64_t, double>> ref;
                    double worst = 0;
                    for (size_t l = 0; l < L; ++l) {
                        const int64_t r = cand[j * L + l];
                        if (r < 0 || r >= static_cast<int64_t>(n)) continue;
                        double tol;
                        ref.push_back({r, ref_score(metric, Q.data() + j * d, exact.data() + static_cast<size_t>(r) * d, d, &tol)});
                        worst = std::max(worst, tol);
                    }
                    CHECK_TOPK(idx.data() + j * k, sc.data() + j * k, k, ref, worst);
                }
            }
    });
}

TEST(dense_rescore_keys_over_segments_scores_each_key_once) {
    harness::each_isa([](const std::string&) {
        for (bool f16 : {false, true})
            for (size_t threads : {1, 2})
                for (size_t nkeys : {0, 3, 40, 6000}) {
                    Scope s("f16", f16, "threads", threads, "nkeys", nkeys);
                    const size_t d = 21, k = 10;
                    const size_t sizes[] = {5, 0, 9, 4000};
                    std::vector<Rows> segs;
                    std::vector<int64_t> bases{0};
                    for (size_t sz : sizes) {
                        segs.push_back(make_rows(sz, d));
                        bases.push_back(bases.back() + static_cast<int64_t>(sz));
                    }
                    std::vector<const void*> mats;
                    for (const Rows& r : segs)
                        mats.push_back(f16 ? static_cast<const void*>(r.f16.data()) : static_cast<const void*>(r.f32.data()));
                    std::vector<int64_t> keys(nkeys);
                    for (int64_t& key : keys) key = harness::randint(0, bases.back() - 1);
                    if (nkeys > 2) keys[1] = keys[0];  // a duplicate
                    const std::vector<float> q = harness::randvec(d);
                    std::vector<int64_t> out(k, 5);
                    std::vector<float> sc(k);
                    size_t got = 99;
                    REQUIRE(engramdb::dense_rescore_keys(q.data(), d, mats.data(), f16, bases.data(), 4, Metric::cosine,
                                                         keys.data(), nkeys, k, threads, out.data(), sc.data(), &got) == -1);
                    std::vector<std::pair<int64_t, double>> ref;
                    double worst = 0;
                    for (int64_t key : keys) {
                        if (std::any_of(ref.begin(), ref.end(), [key](const auto& p) { return p.first == key; })) continue;
                        size_t s2 = 0;
                        while (!(key < bases[s2 + 1])) ++s2;
                        const Rows& r = segs[s2];
                        const std::vector<double>& exact = f16 ? r.exact16 : r.exact32;
                        double tol;
                        ref.push_back({key, ref_score(Metric::cosine, q.data(), exact.data() + static_cast<size_t>(key - bases[s2]) * d, d, &tol)});
                        worst = std::max(worst, tol);
                    }
                    CHECK_EQ(got, std::min(k, ref.size()));
                    CHECK_TOPK(out.data(), sc.data(), k, ref, worst);
                }
    });
}

TEST(dense_rescore_keys_names_a_non_finite_key) {
    const size_t d = 8, n = 10;
    Rows r = make_rows(n, d);
    r.f32[6 * d + 7] = std::nanf("");
    const void* mats[] = {r.f32.data()};
    const int64_t bases[] = {0, static_cast<int64_t>(n)};
    const int64_t keys[] = {2, 6, 9};
    const std::vector<float> q = harness::randvec(d);
    std::vector<int64_t> out(3);
    std::vector<float> sc(3);
    size_t got = 0;
    CHECK_EQ(engramdb::dense_rescore_keys(q.data(), d, mats, false, bases, 1, Metric::dot, keys, 3, 3, 1, out.data(),
                                          sc.data(), &got),
             int64_t{6});
}

TEST(stream_sum_matches_float64) {
    harness::each_isa([](const std::string&) {
        for (size_t threads : {1, 3}) {
            const std::vector<float> x = harness::randvec(3 << 20, 0.f, 1.f);
            double want = 0;
            for (float f : x) want += f;
            CHECK_NEAR(engramdb::stream_sum(x.data(), x.size(), threads), want, want * 1e-3);
        }
    });
}

HARNESS_MAIN
