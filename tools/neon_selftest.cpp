// neon_selftest.cpp: standalone check of the NEON primitive table against the scalar table and a
// float64 reference computed here. No Python, no pybind11; built and run under qemu-aarch64 by
// tools/check_neon.sh:
//
//   aarch64-linux-gnu-g++ -O2 -std=c++17 -static -I cpp/include -DENGRAMDB_HAVE_NEON
//     cpp/src/isa_scalar.cpp cpp/src/isa_neon.cpp tools/neon_selftest.cpp -o build/neon_selftest
//
// Every call is made on buffers offset by one element (to catch alignment assumptions) and with
// canary elements after the output (to catch out-of-bounds writes). Prints one line per primitive
// and a final "N passed, M failed" line; exits 1 on any failure.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engramdb/isa_kernels.h"

using engramdb::IsaKernels;
using engramdb::kNeonKernels;
using engramdb::kScalarKernels;

namespace {

// ---------------------------------------------------------------- deterministic inputs
struct XorShift {
    uint64_t s;
    explicit XorShift(uint64_t seed) : s(seed ? seed : 0x9e3779b97f4a7c15ULL) {}
    uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    // Uniform in [-1, 1), normal (non-subnormal) or zero.
    float unit() { return static_cast<float>(static_cast<double>(next() >> 40) / 8388608.0 - 1.0); }
    int range(int lo, int hi) { return lo + static_cast<int>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};

// Finite, subnormal-free float32 values with a spread of magnitudes.
std::vector<float> rand_f32(XorShift& g, size_t n) {
    static const float scales[] = {1.0f, 0.01f, 3.0f, 100.0f};
    std::vector<float> v(n);
    for (auto& x : v) x = g.unit() * scales[g.next() & 3];
    return v;
}

// Values exactly representable in binary16: k / 64 with |k| <= 512 (|x| <= 8, 10-bit mantissa ok).
std::vector<float> rand_halfable(XorShift& g, size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(g.range(-512, 512)) / 64.0f;
    return v;
}

// Exact float -> half for the values produced above (zero or normal half, no rounding needed).
uint16_t to_half(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
    if ((b & 0x7fffffffu) == 0) return sign;
    const int e = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
    const uint32_t mant = b & 0x7fffffu;
    if (e <= 0 || e >= 31 || (mant & 0x1fffu) != 0) {
        std::fprintf(stderr, "to_half: %g not exactly representable as normal half\n", f);
        std::abort();
    }
    return static_cast<uint16_t>(sign | (e << 10) | (mant >> 13));
}

// ---------------------------------------------------------------- bookkeeping
int g_pass = 0, g_fail = 0, g_msgs = 0;

void report(bool ok, const char* prim, const char* what) {
    if (ok) {
        ++g_pass;
        return;
    }
    ++g_fail;
    if (g_msgs++ < 40) std::printf("  FAIL %s: %s\n", prim, what);
}

const float kCanaryF = -12345.678f;
const int32_t kCanaryI = 0x5a5a5a5a;
const uint32_t kCanaryU = 0xa5a5a5a5u;
const size_t kPad = 4;

template <typename T>
bool canaries_ok(const std::vector<T>& out, size_t n, T c) {
    for (size_t i = 0; i < kPad; ++i)
        if (!(out[n + i] == c)) return false;
    return true;
}

// Pointer one element into a copy: deliberately not 16-byte aligned.
template <typename T>
std::vector<T> shifted(const std::vector<T>& v) {
    std::vector<T> s(v.size() + 1);
    std::copy(v.begin(), v.end(), s.begin() + 1);
    return s;
}

const size_t kRows[] = {0, 1, 3, 7, 9, 33};
const size_t kDims[] = {1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 384, 1023};
const size_t kNq[] = {1, 2, 3, 4, 5, 9};
const size_t kBytes[] = {1, 7, 8, 9, 15, 16, 17, 128, 130};

char buf[512];

// ---------------------------------------------------------------- float dot products
// Compares got (neon) and sc (scalar) against ref with tol = 1e-5*sqrt(d)*sum|q x| + tiny.
bool close_dot(float got, double ref, double mag, size_t d, double factor) {
    const double tol = factor * (1e-5 * std::sqrt(static_cast<double>(d)) * mag) + 1e-30;
    return std::isfinite(got) && std::fabs(static_cast<double>(got) - ref) <= tol;
}

int test_dot(bool f16) {
    const char* prim = f16 ? "dot_f16" : "dot_f32";
    XorShift g(f16 ? 0x1234567ULL : 0x7654321ULL);
    int cases = 0;
    for (size_t n : kRows)
        for (size_t d : kDims)
            for (size_t nq : kNq) {
                const std::vector<float> Q = rand_f32(g, nq * d);
                const std::vector<float> Xf = f16 ? rand_halfable(g, n * d) : rand_f32(g, n * d);
                std::vector<uint16_t> Xh(n * d);
                if (f16)
                    for (size_t i = 0; i < n * d; ++i) Xh[i] = to_half(Xf[i]);
                const auto Qs = shifted(Q);
                const auto Xfs = shifted(Xf);
                const auto Xhs = shifted(Xh);
                std::vector<float> on(n * nq + kPad, kCanaryF), os(n * nq + kPad, kCanaryF);
                if (f16) {
                    kNeonKernels.dot_f16(Qs.data() + 1, nq, Xhs.data() + 1, n, d, on.data());
                    kScalarKernels.dot_f16(Qs.data() + 1, nq, Xhs.data() + 1, n, d, os.data());
                } else {
                    kNeonKernels.dot_f32(Qs.data() + 1, nq, Xfs.data() + 1, n, d, on.data());
                    kScalarKernels.dot_f32(Qs.data() + 1, nq, Xfs.data() + 1, n, d, os.data());
                }
                bool ok = canaries_ok(on, n * nq, kCanaryF);
                for (size_t r = 0; r < n && ok; ++r)
                    for (size_t j = 0; j < nq && ok; ++j) {
                        double ref = 0, mag = 0;
                        for (size_t i = 0; i < d; ++i) {
                            const double p = static_cast<double>(Q[j * d + i]) * Xf[r * d + i];
                            ref += p;
                            mag += std::fabs(p);
                        }
                        const float a = on[r * nq + j], b = os[r * nq + j];
                        const bool ok_ref = close_dot(a, ref, mag, d, 1.0);
                        const bool ok_sc = close_dot(a, b, mag, d, 2.0);
                        if (!ok_ref || !ok_sc) {
                            std::snprintf(buf, sizeof buf,
                                          "n=%zu d=%zu nq=%zu r=%zu j=%zu neon=%.9g scalar=%.9g ref=%.12g", n, d, nq,
                                          r, j, a, b, ref);
                            ok = false;
                        }
                    }
                if (!canaries_ok(on, n * nq, kCanaryF))
                    std::snprintf(buf, sizeof buf, "n=%zu d=%zu nq=%zu wrote past out", n, d, nq);
                report(ok, prim, buf);
                ++cases;
            }
    return cases;
}

// ---------------------------------------------------------------- int8 dot products
int test_dot_i8() {
    XorShift g(0xabcdefULL);
    int cases = 0;
    for (size_t n : kRows)
        for (size_t d : kDims)
            for (size_t nq : kNq) {
                std::vector<int8_t> Q(nq * d), X(n * d);
                // Mix uniform values with runs of the extremes (-128*-128 stresses int16 products).
                for (size_t i = 0; i < Q.size(); ++i)
                    Q[i] = static_cast<int8_t>((g.next() & 7) == 0 ? -128 : g.range(-128, 127));
                for (size_t i = 0; i < X.size(); ++i)
                    X[i] = static_cast<int8_t>((g.next() & 7) == 0 ? (g.next() & 1 ? -128 : 127) : g.range(-128, 127));
                const auto Qs = shifted(Q);
                const auto Xs = shifted(X);
                std::vector<int32_t> on(n * nq + kPad, kCanaryI), os(n * nq + kPad, kCanaryI);
                kNeonKernels.dot_i8(Qs.data() + 1, nq, Xs.data() + 1, n, d, on.data());
                kScalarKernels.dot_i8(Qs.data() + 1, nq, Xs.data() + 1, n, d, os.data());
                bool ok = canaries_ok(on, n * nq, kCanaryI);
                std::snprintf(buf, sizeof buf, "n=%zu d=%zu nq=%zu wrote past out", n, d, nq);
                for (size_t r = 0; r < n && ok; ++r)
                    for (size_t j = 0; j < nq && ok; ++j) {
                        int64_t ref = 0;
                        for (size_t i = 0; i < d; ++i) ref += int64_t{Q[j * d + i]} * int64_t{X[r * d + i]};
                        if (on[r * nq + j] != ref || os[r * nq + j] != ref) {
                            std::snprintf(buf, sizeof buf, "n=%zu d=%zu nq=%zu r=%zu j=%zu neon=%d scalar=%d ref=%lld",
                                          n, d, nq, r, j, on[r * nq + j], os[r * nq + j], static_cast<long long>(ref));
                            ok = false;
                        }
                    }
                report(ok, "dot_i8", buf);
                ++cases;
            }
    // Saturating extremes on the longest row: all -128 * -128.
    for (size_t d : kDims) {
        std::vector<int8_t> Q(d, -128), X(3 * d, -128);
        std::vector<int32_t> on(3 + kPad, kCanaryI);
        kNeonKernels.dot_i8(Q.data(), 1, X.data(), 3, d, on.data());
        bool ok = canaries_ok(on, 3, kCanaryI);
        for (int r = 0; r < 3; ++r) ok = ok && on[r] == static_cast<int32_t>(16384 * d);
        std::snprintf(buf, sizeof buf, "all -128, d=%zu neon=%d want=%d", d, on[0], static_cast<int>(16384 * d));
        report(ok, "dot_i8", buf);
        ++cases;
    }
    return cases;
}

// ---------------------------------------------------------------- squared norms
int test_sqnorm(bool f16) {
    const char* prim = f16 ? "sqnorm_f16" : "sqnorm_f32";
    XorShift g(f16 ? 0x1111ULL : 0x2222ULL);
    int cases = 0;
    for (size_t n : kRows)
        for (size_t d : kDims) {
            const std::vector<float> Xf = f16 ? rand_halfable(g, n * d) : rand_f32(g, n * d);
            std::vector<uint16_t> Xh(n * d);
            if (f16)
                for (size_t i = 0; i < n * d; ++i) Xh[i] = to_half(Xf[i]);
            const auto Xfs = shifted(Xf);
            const auto Xhs = shifted(Xh);
            std::vector<float> on(n + kPad, kCanaryF), os(n + kPad, kCanaryF);
            if (f16) {
                kNeonKernels.sqnorm_f16(Xhs.data() + 1, n, d, on.data());
                kScalarKernels.sqnorm_f16(Xhs.data() + 1, n, d, os.data());
            } else {
                kNeonKernels.sqnorm_f32(Xfs.data() + 1, n, d, on.data());
                kScalarKernels.sqnorm_f32(Xfs.data() + 1, n, d, os.data());
            }
            bool ok = canaries_ok(on, n, kCanaryF);
            std::snprintf(buf, sizeof buf, "n=%zu d=%zu wrote past out", n, d);
            for (size_t r = 0; r < n && ok; ++r) {
                double ref = 0;
                for (size_t i = 0; i < d; ++i) ref += static_cast<double>(Xf[r * d + i]) * Xf[r * d + i];
                if (!close_dot(on[r], ref, ref, d, 1.0) || !close_dot(on[r], os[r], ref, d, 2.0)) {
                    std::snprintf(buf, sizeof buf, "n=%zu d=%zu r=%zu neon=%.9g scalar=%.9g ref=%.12g", n, d, r, on[r],
                                  os[r], ref);
                    ok = false;
                }
            }
            report(ok, prim, buf);
            ++cases;
        }
    return cases;
}

// ---------------------------------------------------------------- hamming
int test_hamming() {
    XorShift g(0x3333ULL);
    int cases = 0;
    for (size_t n : kRows)
        for (size_t nb : kBytes) {
            std::vector<uint8_t> q(nb), codes(n * nb);
            for (auto& b : q) b = static_cast<uint8_t>(g.next());
            for (size_t i = 0; i < codes.size(); ++i) {
                const uint64_t k = g.next() & 7;  // some all-equal / all-different bytes
                codes[i] = k == 0 ? q[i % nb] : k == 1 ? static_cast<uint8_t>(~q[i % nb]) : static_cast<uint8_t>(g.next());
            }
            const auto qs = shifted(q);
            const auto cs = shifted(codes);
            std::vector<uint32_t> on(n + kPad, kCanaryU), os(n + kPad, kCanaryU);
            kNeonKernels.hamming(qs.data() + 1, cs.data() + 1, n, nb, on.data());
            kScalarKernels.hamming(qs.data() + 1, cs.data() + 1, n, nb, os.data());
            bool ok = canaries_ok(on, n, kCanaryU);
            std::snprintf(buf, sizeof buf, "n=%zu nbytes=%zu wrote past out", n, nb);
            for (size_t r = 0; r < n && ok; ++r) {
                uint32_t ref = 0;
                for (size_t i = 0; i < nb; ++i) {
                    unsigned x = q[i] ^ codes[r * nb + i];
                    for (; x; x &= x - 1) ++ref;
                }
                if (on[r] != ref || os[r] != ref) {
                    std::snprintf(buf, sizeof buf, "n=%zu nbytes=%zu r=%zu neon=%u scalar=%u ref=%u", n, nb, r, on[r],
                                  os[r], ref);
                    ok = false;
                }
            }
            report(ok, "hamming", buf);
            ++cases;
        }
    return cases;
}

// ---------------------------------------------------------------- add_f64
int test_add_f64() {
    XorShift g(0x4444ULL);
    int cases = 0;
    for (size_t d : kDims)
        for (int rep = 0; rep < 3; ++rep) {
            const std::vector<float> v = rand_f32(g, d);
            std::vector<double> acc0(d);
            for (auto& a : acc0) a = static_cast<double>(g.unit()) * 1e3 + static_cast<double>(g.unit()) * 1e-7;
            auto an = shifted(acc0), as = shifted(acc0);
            an.resize(d + 1 + kPad, -1.0);
            as.resize(d + 1 + kPad, -1.0);
            const auto vs = shifted(v);
            kNeonKernels.add_f64(an.data() + 1, vs.data() + 1, d);
            kScalarKernels.add_f64(as.data() + 1, vs.data() + 1, d);
            bool ok = an[0] == 0.0;
            for (size_t i = 0; i < kPad; ++i) ok = ok && an[d + 1 + i] == -1.0;
            std::snprintf(buf, sizeof buf, "d=%zu wrote outside acc", d);
            for (size_t i = 0; i < d && ok; ++i) {
                const double ref = acc0[i] + static_cast<double>(v[i]);  // exact float64 op, bitwise
                if (an[i + 1] != ref || as[i + 1] != ref) {
                    std::snprintf(buf, sizeof buf, "d=%zu i=%zu neon=%.17g scalar=%.17g ref=%.17g", d, i, an[i + 1],
                                  as[i + 1], ref);
                    ok = false;
                }
            }
            report(ok, "add_f64", buf);
            ++cases;
        }
    return cases;
}

// ---------------------------------------------------------------- blend
int test_blend() {
    XorShift g(0x5555ULL);
    const float ws[] = {1.0f, 0.5f, 1.0f / 3.0f, 1.0f / 7.0f, 1.0f / 1000.0f};
    int cases = 0;
    for (size_t d : kDims)
        for (float w : ws) {
            const std::vector<float> c0 = rand_f32(g, d), v = rand_f32(g, d);
            auto cn = shifted(c0), cs = shifted(c0);
            cn.resize(d + 1 + kPad, kCanaryF);
            cs.resize(d + 1 + kPad, kCanaryF);
            const auto vs = shifted(v);
            const bool fn = kNeonKernels.blend(cn.data() + 1, vs.data() + 1, d, w);
            const bool fs = kScalarKernels.blend(cs.data() + 1, vs.data() + 1, d, w);
            bool ok = cn[0] == 0.0f && fn && fs;
            for (size_t i = 0; i < kPad; ++i) ok = ok && cn[d + 1 + i] == kCanaryF;
            std::snprintf(buf, sizeof buf, "d=%zu w=%g wrote outside c", d, w);
            for (size_t i = 0; i < d && ok; ++i) {
                const double c = c0[i], diff = static_cast<double>(v[i]) - c;
                const double ref = c + diff * w;
                // Three float32 roundings (sub, mul, add); FMA may fuse the last two.
                const double tol = 4.0 * std::ldexp(std::fabs(c) + std::fabs(diff * w) + std::fabs(ref), -24) + 1e-30;
                const double a = cn[i + 1], b = cs[i + 1];
                if (!(std::fabs(a - ref) <= tol) || !(std::fabs(a - b) <= 2 * tol)) {
                    std::snprintf(buf, sizeof buf, "d=%zu w=%g i=%zu neon=%.9g scalar=%.9g ref=%.12g", d, w, i, a, b,
                                  ref);
                    ok = false;
                }
            }
            report(ok, "blend", buf);
            ++cases;
            // A NaN or inf anywhere in v must be reported (it always reaches c since w > 0).
            auto vbad = vs;
            vbad[1 + (g.next() % d)] = (g.next() & 1) ? NAN : INFINITY;
            auto cb = shifted(c0);
            std::snprintf(buf, sizeof buf, "d=%zu w=%g non-finite v not reported", d, w);
            report(!kNeonKernels.blend(cb.data() + 1, vbad.data() + 1, d, w), "blend", buf);
            ++cases;
        }
    return cases;
}

// ---------------------------------------------------------------- dot_panels / max_panels
// Queries packed 8 per panel, dimension-major, zero-padded (the layout panels.cpp produces).
std::vector<float> pack(const std::vector<float>& Q, size_t nq, size_t d) {
    const size_t panels = (nq + 7) / 8;
    std::vector<float> P(panels * d * 8 + 1, 0.f);  // +1: P.data() + 1 below is then misaligned
    for (size_t p = 0; p < panels; ++p)
        for (size_t i = 0; i < d; ++i)
            for (size_t l = 0; l < 8; ++l) {
                const size_t j = p * 8 + l;
                P[1 + (p * d + i) * 8 + l] = j < nq ? Q[j * d + i] : 0.f;
            }
    return P;
}

int test_panels() {
    XorShift g(0x7777ULL);
    int cases = 0;
    const size_t nqs[] = {1, 7, 8, 9, 16, 17, 33};
    for (size_t n : kRows)
        for (size_t d : kDims)
            for (size_t nq : nqs) {
                const std::vector<float> Q = rand_f32(g, nq * d), X = rand_f32(g, n * d);
                const auto P = pack(Q, nq, d);
                const auto Xs = shifted(X);
                std::vector<float> on(n * nq + kPad, kCanaryF), os(n * nq + kPad, kCanaryF);
                kNeonKernels.dot_panels(P.data() + 1, nq, Xs.data() + 1, n, d, on.data());
                kScalarKernels.dot_panels(P.data() + 1, nq, Xs.data() + 1, n, d, os.data());
                bool ok = canaries_ok(on, n * nq, kCanaryF);
                std::snprintf(buf, sizeof buf, "n=%zu d=%zu nq=%zu wrote past out", n, d, nq);
                std::vector<double> best(nq, -INFINITY);
                for (size_t r = 0; r < n && ok; ++r)
                    for (size_t j = 0; j < nq && ok; ++j) {
                        double ref = 0, mag = 0;
                        for (size_t i = 0; i < d; ++i) {
                            ref += static_cast<double>(X[r * d + i]) * Q[j * d + i];
                            mag += std::fabs(static_cast<double>(X[r * d + i]) * Q[j * d + i]);
                        }
                        best[j] = std::max(best[j], ref);
                        if (!close_dot(on[r * nq + j], ref, mag, d, 4.0) || !close_dot(os[r * nq + j], ref, mag, d, 4.0)) {
                            std::snprintf(buf, sizeof buf, "dot_panels n=%zu d=%zu nq=%zu r=%zu j=%zu neon=%g ref=%g", n, d,
                                          nq, r, j, on[r * nq + j], ref);
                            ok = false;
                        }
                    }
                report(ok, "dot_panels", buf);
                // max_panels folds the row maxima into best[] (starting from a finite floor).
                std::vector<float> bn(nq + kPad, kCanaryF);
                for (size_t j = 0; j < nq; ++j) bn[j] = -50.f;
                const bool fin = kNeonKernels.max_panels(P.data() + 1, nq, Xs.data() + 1, n, d, bn.data());
                bool ok2 = fin && canaries_ok(bn, nq, kCanaryF);
                std::snprintf(buf, sizeof buf, "max_panels n=%zu d=%zu nq=%zu flag or canary", n, d, nq);
                for (size_t j = 0; j < nq && ok2; ++j) {
                    const double want = std::max(best[j], -50.0);
                    if (std::fabs(bn[j] - want) > 1e-4 * std::sqrt(static_cast<double>(d)) * (1 + std::fabs(want))) {
                        std::snprintf(buf, sizeof buf, "max_panels n=%zu d=%zu nq=%zu j=%zu got=%g want=%g", n, d, nq, j,
                                      bn[j], want);
                        ok2 = false;
                    }
                }
                report(ok2, "max_panels", buf);
                cases += 2;
            }
    // A NaN among the rows must be flagged by max_panels.
    const std::vector<float> Q = rand_f32(g, 9 * 16);
    std::vector<float> X = rand_f32(g, 7 * 16);
    X[3 * 16 + 5] = NAN;
    const auto P = pack(Q, 9, 16);
    std::vector<float> b(9, -1.f);
    std::snprintf(buf, sizeof buf, "max_panels did not flag a NaN row");
    report(!kNeonKernels.max_panels(P.data() + 1, 9, X.data(), 7, 16, b.data()), "max_panels", buf);
    return cases + 1;
}

// ---------------------------------------------------------------- stream_sum
int test_stream_sum() {
    XorShift g(0x6666ULL);
    int cases = 0;
    std::vector<size_t> ns = {0};
    for (size_t d : kDims) ns.push_back(d);
    for (size_t n : {size_t{64}, size_t{65}, size_t{4096}, size_t{100003}}) ns.push_back(n);
    for (size_t n : ns) {
        const std::vector<float> x = rand_f32(g, n);
        const auto xs = shifted(x);
        const double a = kNeonKernels.stream_sum(xs.data() + 1, n);
        const double b = kScalarKernels.stream_sum(xs.data() + 1, n);
        double ref = 0, mag = 0;
        for (float f : x) {
            ref += f;
            mag += std::fabs(f);
        }
        const double tol = 1e-5 * std::sqrt(static_cast<double>(n ? n : 1)) * mag + 1e-30;
        const bool ok = std::isfinite(a) && std::fabs(a - ref) <= tol && std::fabs(a - b) <= 2 * tol;
        std::snprintf(buf, sizeof buf, "n=%zu neon=%.12g scalar=%.12g ref=%.12g", n, a, b, ref);
        report(ok, "stream_sum", buf);
        ++cases;
    }
    return cases;
}

}  // namespace

int main() {
    std::printf("neon_selftest: table \"%s\" vs \"%s\" and float64 reference\n", kNeonKernels.name,
                kScalarKernels.name);
    struct Item {
        const char* name;
        int (*run)();
    };
    const Item items[] = {
        {"dot_f32", [] { return test_dot(false); }},
        {"dot_f16", [] { return test_dot(true); }},
        {"dot_i8", test_dot_i8},
        {"sqnorm_f32", [] { return test_sqnorm(false); }},
        {"sqnorm_f16", [] { return test_sqnorm(true); }},
        {"hamming", test_hamming},
        {"add_f64", test_add_f64},
        {"blend", test_blend},
        {"panels", test_panels},
        {"stream_sum", test_stream_sum},
    };
    for (const Item& it : items) {
        const int before = g_fail;
        const int cases = it.run();
        const int failed = g_fail - before;
        std::printf("%-11s %4d cases, %d failed\n", it.name, cases, failed);
    }
    std::printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail == 0 ? 0 : 1;
}
