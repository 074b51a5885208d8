// isa_avx512.cpp: AVX-512 (F, BW, VL, DQ) block primitives, compiled with those flags on this file
// only. Same tiling as the AVX2 file with 16 lanes and 32 registers (tile 4 rows x 4 queries);
// tails use mask registers. Compiled everywhere; tested only on CPUs that run it.
#include <immintrin.h>

#include <cstring>

#include "engramdb/isa_kernels.h"

namespace engramdb {
namespace {

inline __mmask16 tail16(size_t rem) { return static_cast<__mmask16>((1u << rem) - 1u); }

struct LoadF32 {
    using T = float;
    static __m512 full(const float* p) { return _mm512_loadu_ps(p); }
    static __m512 part(const float* p, size_t rem) { return _mm512_maskz_loadu_ps(tail16(rem), p); }
};
struct LoadF16 {
    using T = uint16_t;
    static __m512 full(const uint16_t* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static __m512 part(const uint16_t* p, size_t rem) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(tail16(rem), p));
    }
};

template <typename L, int R, int J>
inline void tile(const float* Q, const typename L::T* X, size_t d, float* out, size_t nq) {
    __m512 acc[R][J];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < J; ++j) acc[r][j] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= d; i += 16) {
        __m512 x[R];
        for (int r = 0; r < R; ++r) x[r] = L::full(X + r * d + i);
        for (int j = 0; j < J; ++j) {
            const __m512 q = _mm512_loadu_ps(Q + j * d + i);
            for (int r = 0; r < R; ++r) acc[r][j] = _mm512_fmadd_ps(x[r], q, acc[r][j]);
        }
    }
    if (i < d) {
        const size_t rem = d - i;
        __m512 x[R];
        for (int r = 0; r < R; ++r) x[r] = L::part(X + r * d + i, rem);
        for (int j = 0; j < J; ++j) {
            const __m512 q = _mm512_maskz_loadu_ps(tail16(rem), Q + j * d + i);
            for (int r = 0; r < R; ++r) acc[r][j] = _mm512_fmadd_ps(x[r], q, acc[r][j]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < J; ++j) out[r * nq + j] = _mm512_reduce_add_ps(acc[r][j]);
}

template <typename L, int R>
inline void rows(const float* Q, size_t nq, const typename L::T* X, size_t d, float* out) {
    size_t j = 0;
    for (; j + 4 <= nq; j += 4) tile<L, R, 4>(Q + j * d, X, d, out + j, nq);
    for (; j < nq; ++j) tile<L, R, 1>(Q + j * d, X, d, out + j, nq);
}

template <typename L>
void dot_any(const float* Q, size_t nq, const typename L::T* X, size_t nx, size_t d, float* out) {
    size_t r = 0;
    for (; r + 4 <= nx; r += 4) rows<L, 4>(Q, nq, X + r * d, d, out + r * nq);
    for (; r < nx; ++r) rows<L, 1>(Q, nq, X + r * d, d, out + r * nq);
}

void dot_f32(const float* Q, size_t nq, const float* X, size_t nx, size_t d, float* out) {
    dot_any<LoadF32>(Q, nq, X, nx, d, out);
}
void dot_f16(const float* Q, size_t nq, const uint16_t* X, size_t nx, size_t d, float* out) {
    dot_any<LoadF16>(Q, nq, X, nx, d, out);
}

template <int R, int J>
inline void tile_i8(const int8_t* Q, const int8_t* X, size_t d, int32_t* out, size_t nq) {
    __m512i acc[R][J];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < J; ++j) acc[r][j] = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 32 <= d; i += 32) {
        __m512i x[R];
        for (int r = 0; r < R; ++r)
            x[r] = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(X + r * d + i)));
        for (int j = 0; j < J; ++j) {
            const __m512i q =
                _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(Q + j * d + i)));
            for (int r = 0; r < R; ++r) acc[r][j] = _mm512_add_epi32(acc[r][j], _mm512_madd_epi16(x[r], q));
        }
    }
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < J; ++j) {
            int32_t s = _mm512_reduce_add_epi32(acc[r][j]);
            for (size_t t = i; t < d; ++t) s += static_cast<int32_t>(X[r * d + t]) * Q[j * d + t];
            out[r * nq + j] = s;
        }
}

template <int R>
inline void rows_i8(const int8_t* Q, size_t nq, const int8_t* X, size_t d, int32_t* out) {
    size_t j = 0;
    for (; j + 2 <= nq; j += 2) tile_i8<R, 2>(Q + j * d, X, d, out + j, nq);
    if (j < nq) tile_i8<R, 1>(Q + j * d, X, d, out + j, nq);
}

void dot_i8(const int8_t* Q, size_t nq, const int8_t* X, size_t nx, size_t d, int32_t* out) {
    size_t r = 0;
    for (; r + 4 <= nx; r += 4) rows_i8<4>(Q, nq, X + r * d, d, out + r * nq);
    for (; r < nx; ++r) rows_i8<1>(Q, nq, X + r * d, d, out + r * nq);
}

template <typename L>
void sqnorm_any(const typename L::T* X, size_t nx, size_t d, float* out) {
    for (size_t r = 0; r < nx; ++r) {
        const typename L::T* x = X + r * d;
        __m512 a = _mm512_setzero_ps();
        size_t i = 0;
        for (; i + 16 <= d; i += 16) {
            const __m512 v = L::full(x + i);
            a = _mm512_fmadd_ps(v, v, a);
        }
        if (i < d) {
            const __m512 v = L::part(x + i, d - i);
            a = _mm512_fmadd_ps(v, v, a);
        }
        out[r] = _mm512_reduce_add_ps(a);
    }
}
void sqnorm_f32(const float* X, size_t nx, size_t d, float* out) { sqnorm_any<LoadF32>(X, nx, d, out); }
void sqnorm_f16(const uint16_t* X, size_t nx, size_t d, float* out) { sqnorm_any<LoadF16>(X, nx, d, out); }

void hamming(const uint8_t* q, const uint8_t* codes, size_t n, size_t nbytes, uint32_t* out) {
    const __m512i lut = _mm512_set4_epi32(0x04030302, 0x03020201, 0x03020201, 0x02010100);
    const __m512i low = _mm512_set1_epi8(0x0f);
    const size_t chunks = nbytes / 64;
    for (size_t r = 0; r < n; ++r) {
        const uint8_t* c = codes + r * nbytes;
        __m512i total = _mm512_setzero_si512();
        size_t k = 0;
        while (k < chunks) {
            const size_t stop = k + 31 < chunks ? k + 31 : chunks;
            __m512i bytes = _mm512_setzero_si512();
            for (; k < stop; ++k) {
                const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(q + 64 * k), _mm512_loadu_si512(c + 64 * k));
                const __m512i lo = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, low));
                const __m512i hi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), low));
                bytes = _mm512_add_epi8(bytes, _mm512_add_epi8(lo, hi));
            }
            total = _mm512_add_epi64(total, _mm512_sad_epu8(bytes, _mm512_setzero_si512()));
        }
        uint64_t acc = static_cast<uint64_t>(_mm512_reduce_add_epi64(total));
        size_t i = chunks * 64;
        for (; i + 8 <= nbytes; i += 8) {
            uint64_t a, b;
            std::memcpy(&a, q + i, 8);
            std::memcpy(&b, c + i, 8);
            acc += static_cast<uint64_t>(_mm_popcnt_u64(a ^ b));
        }
        for (; i < nbytes; ++i) acc += static_cast<uint64_t>(_mm_popcnt_u32(static_cast<uint32_t>(q[i] ^ c[i])));
        out[r] = static_cast<uint32_t>(acc);
    }
}

void add_f64(double* acc, const float* v, size_t d) {
    size_t i = 0;
    for (; i + 8 <= d; i += 8)
        _mm512_storeu_pd(acc + i, _mm512_add_pd(_mm512_loadu_pd(acc + i), _mm512_cvtps_pd(_mm256_loadu_ps(v + i))));
    for (; i < d; ++i) acc[i] += static_cast<double>(v[i]);
}

bool blend(float* c, const float* v, size_t d, float w) {
    const __m512 wv = _mm512_set1_ps(w);
    __mmask16 bad = 0;
    size_t i = 0;
    for (; i + 16 <= d; i += 16) {
        const __m512 cv = _mm512_loadu_ps(c + i);
        const __m512 r = _mm512_fmadd_ps(_mm512_sub_ps(_mm512_loadu_ps(v + i), cv), wv, cv);
        _mm512_storeu_ps(c + i, r);
        const __m512 z = _mm512_sub_ps(r, r);  // 0 for finite, NaN otherwise
        bad |= _mm512_cmp_ps_mask(z, z, _CMP_UNORD_Q);
    }
    bool finite = bad == 0;
    for (; i < d; ++i) {
        c[i] += (v[i] - c[i]) * w;
        finite &= (c[i] - c[i]) == 0.f;
    }
    return finite;
}

double stream_sum(const float* x, size_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
    }
    double s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    for (; i < n; ++i) s += x[i];
    return s;
}

#include "panel_generic.inc"

// Prim's step over every node (isa_kernels.h), 16 lanes a time: as the AVX2 file's, with masks.
size_t prim_row(const float* row, const float* core, float* best, uint32_t* from, size_t n, float cc,
                uint32_t cur) {
    const __m512 vcc = _mm512_set1_ps(cc);
    const __m512i vcur = _mm512_set1_epi32(static_cast<int32_t>(cur));
    const __m512i sixteen = _mm512_set1_epi32(16);
    __m512 low16 = _mm512_set1_ps(__builtin_inff());
    __m512i at16 = _mm512_set1_epi32(-1);
    __m512i pos = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        // max_ps: `a > b ? a : b` (the second operand on a NaN or a tie), as the scalar rule
        const __m512 r = _mm512_max_ps(_mm512_max_ps(_mm512_loadu_ps(row + j), _mm512_loadu_ps(core + j)), vcc);
        const __m512 b0 = _mm512_loadu_ps(best + j);
        const __mmask16 better = _mm512_cmp_ps_mask(r, b0, _CMP_LT_OQ);
        const __m512 b = _mm512_mask_blend_ps(better, b0, r);
        _mm512_storeu_ps(best + j, b);
        _mm512_mask_storeu_epi32(from + j, better, vcur);
        const __mmask16 lower = _mm512_cmp_ps_mask(b, low16, _CMP_LT_OQ);
        low16 = _mm512_mask_blend_ps(lower, low16, b);
        at16 = _mm512_mask_blend_epi32(lower, at16, pos);
        pos = _mm512_add_epi32(pos, sixteen);
    }
    alignas(64) float lows[16];
    alignas(64) int32_t ats[16];
    _mm512_store_ps(lows, low16);
    _mm512_store_si512(ats, at16);
    float low = __builtin_inff();
    size_t at = n;
    for (int q = 0; q < 16; ++q) {
        const size_t a = static_cast<size_t>(ats[q]);
        if (ats[q] >= 0 && (lows[q] < low || (lows[q] == low && a < at))) {
            low = lows[q];
            at = a;
        }
    }
    for (; j < n; ++j) {
        const float r1 = row[j] > core[j] ? row[j] : core[j];
        const float r = r1 > cc ? r1 : cc;
        if (r < best[j]) {
            best[j] = r;
            from[j] = cur;
        }
        if (best[j] < low) {  // strict: a lane's position or an earlier tail one is lower
            low = best[j];
            at = j;
        }
    }
    return at;
}

}  // namespace

extern const IsaKernels kAvx512Kernels;
const IsaKernels kAvx512Kernels = {
    "avx512", dot_f32, dot_f16,    dot_i8,    sqnorm_f32, sqnorm_f16, hamming,
    add_f64,  blend,   stream_sum, dot_panels, max_panels, prim_row,
};

}  // namespace engramdb
