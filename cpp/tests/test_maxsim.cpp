// N5 MaxSim (maxsim.h) against sum-of-max in double, every ISA, query token counts around the
// panel width, ragged documents (empty ones too), a shortlist, and a non-finite token named.
#include <algorithm>
#include <limits>

#include "engramdb/maxsim.h"
#include "harness.h"

using harness::Scope;

TEST(maxsim_matches_float64) {
    for (size_t m : {1, 7, 8, 9, 17})
        for (size_t d : {1, 8, 31, 96})
            for (bool shortlist : {false, true}) {
                const size_t n_docs = 60;
                std::vector<int64_t> offsets{0};
                for (size_t t = 0; t < n_docs; ++t)
                    offsets.push_back(offsets.back() + (t % 9 == 4 ? 0 : harness::randint(1, 14)));
                const size_t T = static_cast<size_t>(offsets.back());
                const std::vector<float> Q = harness::randvec(m * d), tokens = harness::randvec(T * d);
                std::vector<int64_t> docs;
                if (shortlist)
                    for (size_t i = 0; i < 25; ++i) docs.push_back(harness::randint(0, static_cast<int64_t>(n_docs) - 1));
                const size_t n_out = shortlist ? docs.size() : n_docs;
                std::vector<double> want(n_out), tol(n_out);
                for (size_t o = 0; o < n_out; ++o) {
                    const size_t doc = shortlist ? static_cast<size_t>(docs[o]) : o;
                    double total = 0, err = 0;
                    for (size_t i = 0; i < m && offsets[doc] < offsets[doc + 1]; ++i) {
                        double best = -HUGE_VAL, best_tol = 0;
                        for (auto t = static_cast<size_t>(offsets[doc]); t < static_cast<size_t>(offsets[doc + 1]); ++t) {
                            double dot = 0, mag = 0;
                            for (size_t c = 0; c < d; ++c) {
                                dot += static_cast<double>(Q[i * d + c]) * tokens[t * d + c];
                                mag += std::fabs(static_cast<double>(Q[i * d + c]) * tokens[t * d + c]);
                            }
                            best = std::max(best, dot);
                            best_tol = std::max(best_tol, 2 * harness::dot_tol(d, mag));
                        }
                        total += best;
                        err += best_tol;
                    }
                    want[o] = total;
                    tol[o] = err + 1e-6 * std::fabs(total);
                }
                harness::each_isa([&](const std::string&) {
                    for (size_t threads : {1, 3}) {
                        Scope s("m", m, "d", d, "shortlist", shortlist, "threads", threads);
                        std::vector<float> out(n_out, std::nanf(""));
                        REQUIRE(engramdb::maxsim(Q.data(), m, tokens.data(), d, offsets.data(), n_docs,
                                                 shortlist ? docs.data() : nullptr, n_out, threads, out.data()) == -1);
                        for (size_t o = 0; o < n_out; ++o) CHECK_NEAR(out[o], want[o], tol[o]);
                    }
                });
            }
}

TEST(maxsim_names_a_document_with_a_non_finite_token) {
    harness::each_isa([](const std::string&) {
        const size_t m = 9, d = 16;
        const std::vector<int64_t> offsets{0, 3, 3, 7, 12};
        std::vector<float> tokens = harness::randvec(12 * d);
        tokens[9 * d + 15] = std::numeric_limits<float>::infinity();  // doc 3's third token, last element
        const std::vector<float> Q = harness::randvec(m * d);
        std::vector<float> out(4);
        CHECK_EQ(engramdb::maxsim(Q.data(), m, tokens.data(), d, offsets.data(), 4, nullptr, 4, 1, out.data()), int64_t{3});
        const int64_t docs[] = {0, 2, 1};
        CHECK_EQ(engramdb::maxsim(Q.data(), m, tokens.data(), d, offsets.data(), 4, docs, 3, 1, out.data()), int64_t{-1});
        CHECK_EQ(out[2], 0.f);  // a document without tokens scores 0
    });
}

HARNESS_MAIN
