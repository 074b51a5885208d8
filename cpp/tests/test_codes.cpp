// The vector code passes (codes.h): int8 token codes against the definition computed here with
// libm's nearbyint (ties to even), on ties, zero rows, -0.0 and subnormal scales; non-finite rows
// refused; sign bits against a bit-by-bit packing with the near entries listed. Buffers are exactly
// sized std::vectors (ASan's redzones right after), widths not a multiple of 4 or 8 included.
#include <cfloat>
#include <cmath>
#include <limits>

#include "engramdb/codes.h"
#include "harness.h"

using harness::Scope;

namespace {

void ref_quantize(const std::vector<float>& x, size_t n, size_t dim, std::vector<int8_t>& q, std::vector<float>& s) {
    for (size_t r = 0; r < n; ++r) {
        float amax = 0.0f;
        for (size_t j = 0; j < dim; ++j) amax = std::max(amax, std::fabs(x[r * dim + j]));
        s[r] = amax / 127.0f;
        for (size_t j = 0; j < dim; ++j) {
            if (!(s[r] > 0.0f)) {
                q[r * dim + j] = 0;
                continue;
            }
            const float v = std::nearbyint(x[r * dim + j] / s[r]);
            q[r * dim + j] = static_cast<int8_t>(std::min(127.0f, std::max(-127.0f, v)));
        }
    }
}

}  // namespace

TEST(quantize_int8_matches_the_definition) {
    for (size_t dim : {1, 3, 4, 5, 128, 131}) {
        Scope sc("dim", dim);
        std::vector<float> x;
        auto row = [&](auto f) {
            for (size_t j = 0; j < dim; ++j) x.push_back(f(j));
        };
        row([](size_t) { return 0.0f; });
        row([](size_t) { return -0.0f; });
        row([&](size_t j) { return (static_cast<float>(j) - static_cast<float>(dim) / 2) * 0.5f; });  // .5 ties
        for (int a : {1, 63, 127, 190, 191, 254, 1000})  // subnormal scales: x / s past 127
            row([&](size_t j) { return j == 0 ? std::ldexp(static_cast<float>(a), -149) : 0.0f; });
        for (int k = 0; k < 200; ++k) row([](size_t) { return harness::uniform(-2.f, 2.f); });
        const size_t n = x.size() / dim;
        std::vector<int8_t> q(n * dim, 99), want_q(n * dim);
        std::vector<float> s(n, -1.f), want_s(n);
        CHECK_EQ(engramdb::quantize_int8(x.data(), n, dim, q.data(), s.data()), int64_t{-1});
        ref_quantize(x, n, dim, want_q, want_s);
        CHECK(q == want_q);
        for (size_t r = 0; r < n; ++r) CHECK(std::memcmp(&s[r], &want_s[r], sizeof(float)) == 0);
    }
}

TEST(quantize_int8_refuses_non_finite_rows) {
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity()}) {
        std::vector<float> x(4 * 7, 1.0f);
        x[2 * 7 + 6] = bad;
        std::vector<int8_t> q(4 * 7);
        std::vector<float> s(4);
        CHECK_EQ(engramdb::quantize_int8(x.data(), 4, 7, q.data(), s.data()), int64_t{2});
    }
    CHECK_EQ(engramdb::quantize_int8(nullptr, 0, 7, nullptr, nullptr), int64_t{-1});
}

TEST(sign_bits_pack_the_signs_and_list_the_near_entries) {
    for (size_t bits : {1, 7, 8, 13, 1024}) {
        Scope sc("bits", bits);
        const size_t n = 50, nbytes = (bits + 7) / 8;
        std::vector<float> y = harness::randvec(n * bits);
        std::vector<float> tol(n);
        for (size_t r = 0; r < n; ++r) tol[r] = r % 5 == 0 ? -1.0f : harness::uniform(0.f, 0.2f);
        y[0] = 0.0f;
        std::vector<uint8_t> out(n * nbytes, 0xAB);
        std::vector<int64_t> near;
        engramdb::sign_bits(y.data(), n, bits, tol.data(), out.data(), near);
        std::vector<uint8_t> want(n * nbytes, 0);
        std::vector<int64_t> want_near;
        for (size_t r = 0; r < n; ++r)
            for (size_t j = 0; j < bits; ++j) {
                const float v = y[r * bits + j];
                if (v <= tol[r] && v >= -tol[r])
                    want_near.push_back(static_cast<int64_t>(r * bits + j));
                else if (v > 0)
                    want[r * nbytes + j / 8] |= static_cast<uint8_t>(0x80u >> (j % 8));
            }
        CHECK(out == want);
        CHECK(near == want_near);
        CHECK(!want_near.empty());
    }
}

HARNESS_MAIN
