// codes.cpp: int8 codes of token vectors and sign bits of projections (see engramdb/codes.h).
#include "engramdb/codes.h"

#include <cfloat>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace engramdb {

namespace {

// rint in float32 with ties to even, for |v| <= 2^22: adding 1.5 * 2^23 leaves no fraction bits (the
// sum lies in [2^23, 2^24), where floats are whole numbers), so the addition rounds v to the nearest
// whole number, ties to even (1.5 * 2^23 is even), and the subtraction is exact. A libm rint call per
// value would cost more than the rest of the pass on a baseline x86-64 target (no SSE4.1 roundps).
inline float rint_small(float v) {
    constexpr float kShift = 12582912.0f;  // 1.5 * 2^23
    return (v + kShift) - kShift;  // not folded to v: that needs -fassociative-math, never used here
}

}  // namespace

// A float's bits, and back (memcpy: the defined way to reinterpret them).
inline uint32_t bits_of(float v) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
}
inline float float_of(uint32_t u) {
    float v;
    std::memcpy(&v, &u, sizeof v);
    return v;
}

int64_t quantize_int8(const float* x, size_t n, size_t dim, int8_t* q, float* scale) {
    for (size_t r = 0; r < n; ++r) {
        const float* row = x + r * dim;
        // max |x| on the bit patterns: without the sign bit, a non-negative float's bits order as its
        // value does (+-0 -> 0), and inf and NaN lie above every finite value's; an integer maximum
        // the compiler vectorises, where a float one it may not (NaN and signed-zero rules)
        uint32_t top = 0;
        for (size_t j = 0; j < dim; ++j) {
            const uint32_t a = bits_of(row[j]) & 0x7fffffffu;
            top = a > top ? a : top;
        }
        if (top >= 0x7f800000u) return static_cast<int64_t>(r);  // inf or NaN
        const float s = float_of(top) / 127.0f;
        scale[r] = s;
        int8_t* out = q + r * dim;
        if (!(s > 0.0f)) {
            std::memset(out, 0, dim);
            continue;
        }
        for (size_t j = 0; j < dim; ++j) {
            // |x / s| <= ~190.5 (s subnormal and rounded down), far inside rint_small's range
            float v = rint_small(row[j] / s);
            v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
            out[j] = static_cast<int8_t>(v);
        }
    }
    return -1;
}

namespace {

// Row r's byte b of sign_bits (entries j0 .. j0 + m - 1, m <= 8), its open (near) entries listed.
inline uint8_t sign_byte(const float* v, size_t m, float t, int64_t first, std::vector<int64_t>& near) {
    unsigned byte = 0, open = 0;
    // branch-free (half the signs go each way): bitwise & and |, never && and ||
    for (size_t k = 0; k < m; ++k) {
        const unsigned is_near = static_cast<unsigned>(v[k] <= t) & static_cast<unsigned>(v[k] >= -t);
        byte |= (static_cast<unsigned>(v[k] > 0.0f) & (is_near ^ 1u)) << (7 - k);
        open |= is_near << (7 - k);
    }
    if (open != 0)  // rare: a few entries in 10,000
        for (size_t k = 0; k < m; ++k)
            if ((open >> (7 - k)) & 1u) near.push_back(first + static_cast<int64_t>(k));
    return static_cast<uint8_t>(byte);
}

#if defined(__SSE2__)
// movemask's 4 bits (entry 0 in bit 0) in packbits' order (entry 0 in bit 3)
constexpr uint8_t kReverse4[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
#endif

}  // namespace

void sign_bits(const float* y, size_t n, size_t bits, const float* tol, uint8_t* out, std::vector<int64_t>& near) {
    const size_t nbytes = (bits + 7) / 8;
    for (size_t r = 0; r < n; ++r) {
        const float* row = y + r * bits;
        const float t = tol[r];
        uint8_t* o = out + r * nbytes;
        const auto first = static_cast<int64_t>(r * bits);
        size_t b = 0;
#if defined(__SSE2__)
        // 8 entries a step (x86-64's baseline): the same comparisons, as lane masks; a byte with an
        // entry near 0 is redone by the scalar path (which lists it)
        const __m128 hi = _mm_set1_ps(t), lo = _mm_set1_ps(-t), zero = _mm_setzero_ps();
        for (; b + 1 <= bits / 8; ++b) {
            const __m128 a = _mm_loadu_ps(row + 8 * b), c = _mm_loadu_ps(row + 8 * b + 4);
            const int na = _mm_movemask_ps(_mm_and_ps(_mm_cmple_ps(a, hi), _mm_cmpge_ps(a, lo)));
            const int nc = _mm_movemask_ps(_mm_and_ps(_mm_cmple_ps(c, hi), _mm_cmpge_ps(c, lo)));
            if ((na | nc) != 0) {
                o[b] = sign_byte(row + 8 * b, 8, t, first + static_cast<int64_t>(8 * b), near);
                continue;
            }
            const int pa = _mm_movemask_ps(_mm_cmpgt_ps(a, zero)), pc = _mm_movemask_ps(_mm_cmpgt_ps(c, zero));
            o[b] = static_cast<uint8_t>((kReverse4[pa] << 4) | kReverse4[pc]);
        }
#endif
        for (; b < nbytes; ++b) {
            const size_t j0 = b * 8, m = bits - j0 < 8 ? bits - j0 : 8;
            o[b] = sign_byte(row + j0, m, t, first + static_cast<int64_t>(j0), near);
        }
    }
}

int near_signs(const float* x, size_t n, size_t d, const double* cols, size_t bits, const int64_t* near,
               size_t n_near, uint8_t* out) {
    const uint64_t cells = static_cast<uint64_t>(n) * bits;
    for (size_t k = 0; k < n_near; ++k)
        if (near[k] < 0 || static_cast<uint64_t>(near[k]) >= cells) return 1;
    for (size_t k = 0; k < n_near; ++k) {
        const auto at = static_cast<uint64_t>(near[k]);
        const float* row = x + (at / bits) * d;
        const double* col = cols + (at % bits) * d;
        double s = 0.0;
        for (size_t j = 0; j < d; ++j) s += static_cast<double>(row[j]) * col[j];
        out[k] = s > 0.0 ? 1 : 0;
    }
    return 0;
}

}  // namespace engramdb
