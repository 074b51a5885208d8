// The block primitives of every ISA (isa_kernels.h) against double-precision references computed
// here, over shapes that exercise each tail: dimensions around every vector width, query counts
// around every tile and panel width, row counts around every row tile. Inputs sit in buffers of
// exactly their size, so a tail that reads past its row is an AddressSanitizer report.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engramdb/dispatch.h"
#include "engramdb/isa_kernels.h"
#include "engramdb/panels.h"
#include "harness.h"

using engramdb::IsaKernels;
using engramdb::kernels;
using harness::Scope;

namespace {

const size_t kDims[] = {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 257, 385};
const size_t kQueries[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17};
const size_t kRows[] = {1, 2, 3, 5, 6, 7, 13};

double ref_dot(const float* a, const float* b, size_t d, double* mag) {
    double s = 0, m = 0;
    for (size_t i = 0; i < d; ++i) {
        s += static_cast<double>(a[i]) * b[i];
        m += std::fabs(static_cast<double>(a[i]) * b[i]);
    }
    *mag = m;
    return s;
}

}  // namespace

TEST(compiled_and_available_isas) {
    const auto compiled = engramdb::compiled_isas();
    const auto avail = engramdb::available_isas();
    REQUIRE(!compiled.empty() && !avail.empty());
    CHECK_EQ(compiled.back(), std::string("scalar"));
    for (const auto& a : avail) CHECK(std::find(compiled.begin(), compiled.end(), a) != compiled.end());
    CHECK(!engramdb::set_isa("no-such-isa"));
    harness::each_isa([](const std::string& isa) { CHECK_EQ(std::string(kernels().name), isa); });
}

TEST(dot_f32_matches_float64) {
    harness::each_isa([](const std::string&) {
        const IsaKernels& K = kernels();
        for (size_t d : kDims)
            for (size_t nq : kQueries)
                for (size_t nx : kRows) {
                    Scope s("d", d, "nq", nq, "nx", nx);
                    const std::vector<float> Q = harness::randvec(nq * d), X = harness::randvec(nx * d);
                    std::vector<float> out(nx * nq, std::nanf(""));
                    K.dot_f32(Q.data(), nq, X.data(), nx, d, out.data());
                    for (size_t r = 0; r < nx; ++r)
                        for (size_t j = 0; j < nq; ++j) {
                            double mag;
                            const double want = ref_dot(Q.data() + j * d, X.data() + r * d, d, &mag);
                            CHECK_NEAR(out[r * nq + j], want, harness::dot_tol(d, mag));
                        }
                }
    });
}

TEST(dot_f16_and_sqnorm_f16_match_float64) {
    harness::each_isa([](const std::string&) {
        const IsaKernels& K = kernels();
        for (size_t d : kDims)
            for (size_t nq : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{5}, size_t{9}})
                for (size_t nx : kRows) {
                    Scope s("d", d, "nq", nq, "nx", nx);
                    const std::vector<float> Q = harness::randvec(nq * d);
                    std::vector<uint16_t> X(nx * d);
                    for (uint16_t& h : X) h = harness::random_half();
                    std::vector<float> out(nx * nq, std::nanf("")), sq(nx, std::nanf(""));
                    K.dot_f16(Q.data(), nq, X.data(), nx, d, out.data());
                    K.sqnorm_f16(X.data(), nx, d, sq.data());
                    for (size_t r = 0; r < nx; ++r) {
                        double s2 = 0;
                        for (size_t i = 0; i < d; ++i) s2 += harness::half_value(X[r * d + i]) * harness::half_value(X[r * d + i]);
                        CHECK_NEAR(sq[r], s2, harness::dot_tol(d, s2));
                        for (size_t j = 0; j < nq; ++j) {
                            double want = 0, mag = 0;
                            for (size_t i = 0; i < d; ++i) {
                                const double p = Q[j * d + i] * harness::half_value(X[r * d + i]);
                                want += p;
                                mag += std::fabs(p);
                            }
                            CHECK_NEAR(out[r * nq + j], want, harness::dot_tol(d, mag));
                        }
                    }
                }
    });
}

TEST(dot_i8_is_exact_with_and_without_minus_128) {
    harness::each_isa([](const std::string&) {
        const IsaKernels& K = kernels();
        for (bool with_min : {false, true})
            for (size_t d : kDims)
                for (size_t nq : kQueries)
                    for (size_t nx : {size_t{1}, size_t{3}, size_t{4}, size_t{5}}) {
                        Scope s("d", d, "nq", nq, "nx", nx, "with -128", with_min);
                        std::vector<int8_t> Q(nq * d), X(nx * d);
                        for (int8_t& v : Q) v = static_cast<int8_t>(harness::randint(with_min ? -128 : -127, 127));
                        for (int8_t& v : X) v = static_cast<int8_t>(harness::randint(-128, 127));
                        if (with_min && !Q.empty()) Q[Q.size() / 2] = -128;
                        std::vector<int32_t> out(nx * nq, -1);
                        K.dot_i8(Q.data(), nq, X.data(), nx, d, out.data());
                        for (size_t r = 0; r < nx; ++r)
                            for (size_t j = 0; j < nq; ++j) {
                                int64_t want = 0;
                                for (size_t i = 0; i < d; ++i) want += int64_t{Q[j * d + i]} * X[r * d + i];
                                CHECK_EQ(int64_t{out[r * nq + j]}, want);
                            }
                    }
    });
}

TEST(sqnorm_f32_matches_float64) {
    harness::each_isa([](const std::string&) {
        const IsaKernels& K = kernels();
        for (size_t d : kDims)
            for (size_t nx : kRows) {
                Scope s("d", d, "nx", nx);
                const std::vector<float> X = harness::randvec(nx * d);
                std::vector<float> out(nx, std::nanf(""));
                K.sqnorm_f32(X.data(), nx, d, out.data());
                for (size_t r = 0; r < nx; ++r) {
                    double mag;
                    const double want = ref_dot(X.data() + r * d, X.data() + r * d, d, &mag);
                    CHECK_NEAR(out[r], want, harness::dot_tol(d, mag));
                }
            }
    });
}

TEST(hamming_is_exact_for_every_length) {
    harness::each_isa([](const std::string&) {
        const IsaKernels& K = kernels();
        for (size_t nbytes : {0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 128, 129, 300, 2100})
            for (size_t n : {1, 3, 17}) {
                Scope s("nbytes", nbytes, "n", n);
                std::vector<uint8_t> q(nbytes), codes(n * nbytes);
                for (uint8_t& b : q) b = static_cast<uint8_t>(harness::randint(0, 255));
                for (uint8_t& b : codes) b = static_cast<uint8_t>(harness::randint(0, 255));
                if (n > 1 && nbytes > 0) std::fill(codes.begin(), codes.begin() + static_cast<std::ptrdiff_t>(nbytes), 0xff);
                std::vector<uint32_t> out(n, 0xdeadbeef);
                K.hamming(q.data(), codes.data(), n, nbytes, out.data());
                for (size_t r = 0; r < n; ++r) {
                    uint32_t want = 0;
                    for (size_t i = 0; i < nbytes; ++i)
                        for (int b = 0; b < 8; ++b) want += ((q[i] ^ codes[r * nbytes + i]) >> b) & 1u;
                    CHECK_EQ(out[r], want);
                }
            }
    });
}

TEST(add_f64_is_exact) {
    harness::each_isa([](const std::string&) {
        const IsaKernels& K = kernels();
        for (size_t d : kDims) {
            Scope s("d", d);
            const std::vector<float> v = harness::randvec(d, -1e6f, 1e6f);
            std::vector<double> acc(d), want(d);
            for (size_t i = 0; i < d; ++i) acc[i] = want[i] = harness::uniform() * 1e-3;
            K.add_f64(acc.data(), v.data(), d);
            for (size_t i = 0; i < d; ++i) CHECK_EQ(acc[i], want[i] + static_cast<double>(v[i]));
        }
    });
}

TEST(blend_is_a_running_mean_step_and_flags_non_finite) {
    harness::each_isa([](const std::string&) {
        const IsaKernels& K = kernels();
        for (size_t d : kDims) {
            Scope s("d", d);
            const std::vector<float> v = harness::randvec(d);
            std::vector<float> c = harness::randvec(d);
            const std::vector<float> before = c;
            const float w = 1.f / 7.f;
            CHECK(K.blend(c.data(), v.data(), d, w));
            for (size_t i = 0; i < d; ++i) {
                const double want = before[i] + (static_cast<double>(v[i]) - before[i]) * w;
                CHECK_NEAR(c[i], want, 4e-7 * (std::fabs(before[i]) + std::fabs(v[i])) + 1e-30);
            }
            // a non-finite value anywhere (each position: the vector body and the tail) is flagged
            for (size_t at = 0; at < d; at += (d > 40 ? 7 : 1))
                for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
                    std::vector<float> v2 = v, c2 = before;
                    v2[at] = bad;
                    CHECK(!K.blend(c2.data(), v2.data(), d, w));
                }
        }
    });
}

TEST(stream_sum_matches_float64) {
    harness::each_isa([](const std::string&) {
        const IsaKernels& K = kernels();
        for (size_t n : {0, 1, 7, 31, 32, 33, 100, 1000, 4097}) {
            Scope s("n", n);
            const std::vector<float> x = harness::randvec(n, 0.f, 1.f);
            double want = 0;
            for (float f : x) want += f;
            CHECK_NEAR(K.stream_sum(x.data(), n), want, harness::dot_tol(n, want));
        }
    });
}

TEST(pack_panels_layout) {
    for (size_t nq : {1, 7, 8, 9, 17})
        for (size_t d : {1, 3, 16}) {
            Scope s("nq", nq, "d", d);
            const std::vector<float> Q = harness::randvec(nq * d);
            const engramdb::PanelBuffer P = engramdb::pack_panels(Q.data(), nq, d);
            CHECK(reinterpret_cast<uintptr_t>(P.get()) % 32 == 0);
            const size_t panels = (nq + 7) / 8;
            for (size_t p = 0; p < panels; ++p)
                for (size_t i = 0; i < d; ++i)
                    for (size_t l = 0; l < 8; ++l) {
                        const size_t j = p * 8 + l;
                        CHECK_EQ(P[(p * d + i) * 8 + l], j < nq ? Q[j * d + i] : 0.f);
                    }
        }
}

TEST(dot_panels_and_max_panels_match_float64) {
    harness::each_isa([](const std::string&) {
        const IsaKernels& K = kernels();
        for (size_t d : kDims)
            for (size_t nq : {1, 5, 8, 9, 16, 17, 24, 33})
                for (size_t nx : {1, 2, 3, 4, 5, 6, 7, 12, 13}) {
                    Scope s("d", d, "nq", nq, "nx", nx);
                    const std::vector<float> Q = harness::randvec(nq * d), X = harness::randvec(nx * d);
                    const engramdb::PanelBuffer P = engramdb::pack_panels(Q.data(), nq, d);
                    std::vector<float> out(nx * nq, std::nanf(""));
                    K.dot_panels(P.get(), nq, X.data(), nx, d, out.data());
                    std::vector<float> best(nq, -std::numeric_limits<float>::infinity());
                    CHECK(K.max_panels(P.get(), nq, X.data(), nx, d, best.data()));
                    for (size_t j = 0; j < nq; ++j) {
                        double top = -HUGE_VAL, top_mag = 0;
                        for (size_t r = 0; r < nx; ++r) {
                            double mag;
                            const double want = ref_dot(Q.data() + j * d, X.data() + r * d, d, &mag);
                            CHECK_NEAR(out[r * nq + j], want, harness::dot_tol(d, mag));
                            if (want > top) top = want;
                            top_mag = std::max(top_mag, mag);
                        }
                        CHECK_NEAR(best[j], top, 2 * harness::dot_tol(d, top_mag));
                    }
                    if (d > 0) {  // an infinity in any row is reported
                        std::vector<float> X2 = X;
                        X2[X2.size() - 1] = std::numeric_limits<float>::infinity();
                        std::fill(best.begin(), best.end(), -std::numeric_limits<float>::infinity());
                        CHECK(!K.max_panels(P.get(), nq, X2.data(), nx, d, best.data()));
                    }
                }
    });
}

TEST(prim_row_follows_the_scalar_rule) {
    // every ISA with a prim_row against the rule written out (isa_kernels.h): values from a small
    // set (many ties), nodes out of the running (NaN), every tail length around the lanes
    harness::each_isa([](const std::string&) {
        const IsaKernels& K = kernels();
        if (K.prim_row == nullptr) return;
        const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
        for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{15}, size_t{16}, size_t{17}, size_t{33},
                         size_t{100}})
            for (int round = 0; round < 20; ++round) {
                Scope s("n", n, "round", round);
                std::vector<float> row(n), core(n), best(n), want_best(n);
                std::vector<uint32_t> from(n), want_from(n);
                for (size_t j = 0; j < n; ++j) {
                    row[j] = static_cast<float>(static_cast<int>(harness::uniform(0.f, 4.f))) * 0.25f;
                    core[j] = static_cast<float>(static_cast<int>(harness::uniform(0.f, 4.f))) * 0.25f;
                    const float u = harness::uniform(0.f, 1.f);
                    best[j] = u < 0.2f ? nan : u < 0.3f ? inf : static_cast<float>(static_cast<int>(u * 5.f)) * 0.25f;
                    if (std::isnan(best[j])) core[j] = nan;
                    from[j] = static_cast<uint32_t>(j + 100);
                }
                const float cc = static_cast<float>(round % 4) * 0.25f;
                want_best = best;
                want_from = from;
                float low = inf;
                size_t want = n;
                for (size_t j = 0; j < n; ++j) {
                    const float r1 = row[j] > core[j] ? row[j] : core[j];
                    const float r = r1 > cc ? r1 : cc;
                    if (r < want_best[j]) {
                        want_best[j] = r;
                        want_from[j] = 7;
                    }
                    if (want_best[j] < low) {
                        low = want_best[j];
                        want = j;
                    }
                }
                CHECK_EQ(K.prim_row(row.data(), core.data(), best.data(), from.data(), n, cc, 7), want);
                for (size_t j = 0; j < n; ++j) {
                    CHECK(std::isnan(best[j]) ? std::isnan(want_best[j]) : best[j] == want_best[j]);
                    CHECK_EQ(from[j], want_from[j]);
                }
            }
    });
}

HARNESS_MAIN
