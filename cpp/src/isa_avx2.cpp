// isa_avx2.cpp: AVX2 + FMA + F16C block primitives (compiled with -mavx2 -mfma -mf16c -mpopcnt on
// this file only; chosen at run time when the CPU and OS support them).
//
// Dense kernels use a register tile of R rows x J queries: R + J loads feed R * J fused
// multiply-adds per 8 lanes, so one pass over a block of rows serves many queries (the matrix is
// read from memory once per block, not once per query). Dimension tails use masked loads, so any
// d works without padding.
#include <immintrin.h>

#include <cstdlib>
#include <cstring>

#include "engramdb/isa_kernels.h"

namespace engramdb {
namespace {

alignas(32) const int32_t kTailMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

inline __m256i tail_mask(size_t rem) {  // rem in [1, 7]: first rem lanes on
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTailMask + 8 - rem));
}

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

inline int32_t hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

// Row loaders: f32 rows directly, f16 rows widened by F16C.
struct LoadF32 {
    using T = float;
    static __m256 full(const float* p) { return _mm256_loadu_ps(p); }
    static __m256 part(const float* p, size_t rem) { return _mm256_maskload_ps(p, tail_mask(rem)); }
};
struct LoadF16 {
    using T = uint16_t;
    static __m256 full(const uint16_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static __m256 part(const uint16_t* p, size_t rem) {
        alignas(16) uint16_t buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        std::memcpy(buf, p, rem * sizeof(uint16_t));
        return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(buf)));
    }
};

// Register tile: R rows x J queries, U-way unrolled along d so that U * R * J independent
// accumulator chains hide the FMA latency. Registers used: U*R*J + R + 1 <= 16.
template <typename L, int R, int J, int U>
inline void tile(const float* Q, const typename L::T* X, size_t d, float* out, size_t nq) {
    __m256 acc[U][R][J];
    for (int u = 0; u < U; ++u)
        for (int r = 0; r < R; ++r)
            for (int j = 0; j < J; ++j) acc[u][r][j] = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 * U <= d; i += 8 * U) {
        for (int u = 0; u < U; ++u) {
            __m256 x[R];
            for (int r = 0; r < R; ++r) {
                x[r] = L::full(X + r * d + i + 8 * u);
                // Keep the row in a register: folding it into each FMA as a memory operand
                // would reload it once per query and make the tile load-bound.
                __asm__("" : "+x"(x[r]));
            }
            for (int j = 0; j < J; ++j) {
                const __m256 q = _mm256_loadu_ps(Q + j * d + i + 8 * u);
                for (int r = 0; r < R; ++r) acc[u][r][j] = _mm256_fmadd_ps(x[r], q, acc[u][r][j]);
            }
        }
    }
    for (; i + 8 <= d; i += 8) {
        for (int r = 0; r < R; ++r) {
            const __m256 x = L::full(X + r * d + i);
            for (int j = 0; j < J; ++j) acc[0][r][j] = _mm256_fmadd_ps(x, _mm256_loadu_ps(Q + j * d + i), acc[0][r][j]);
        }
    }
    if (i < d) {
        const size_t rem = d - i;
        for (int r = 0; r < R; ++r) {
            const __m256 x = L::part(X + r * d + i, rem);
            for (int j = 0; j < J; ++j)
                acc[0][r][j] = _mm256_fmadd_ps(x, _mm256_maskload_ps(Q + j * d + i, tail_mask(rem)), acc[0][r][j]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < J; ++j) {
            __m256 a = acc[0][r][j];
            for (int u = 1; u < U; ++u) a = _mm256_add_ps(a, acc[u][r][j]);
            out[r * nq + j] = hsum(a);
        }
}

// All queries against R rows: groups of 4 queries, then 2, then 1.
template <typename L, int R, int U4, int U2, int U1>
inline void rows(const float* Q, size_t nq, const typename L::T* X, size_t d, float* out) {
    size_t j = 0;
    for (; j + 4 <= nq; j += 4) tile<L, R, 4, U4>(Q + j * d, X, d, out + j, nq);
    if (j + 2 <= nq) {
        tile<L, R, 2, U2>(Q + j * d, X, d, out + j, nq);
        j += 2;
    }
    if (j < nq) tile<L, R, 1, U1>(Q + j * d, X, d, out + j, nq);
}

// Many queries: the queries are packed into panels of 8 (dimension-major, zero-padded) so each
// FMA multiplies one broadcast row element by 8 queries at once. Accumulators then hold finished
// dot products (no horizontal sums), which matters when d is small (MaxSim tokens, centroids).
constexpr size_t kPanel = 8;

void pack_panels(const float* Q, size_t nq, size_t d, float* P) {
    const size_t panels = (nq + kPanel - 1) / kPanel;
    for (size_t p = 0; p < panels; ++p)
        for (size_t i = 0; i < d; ++i)
            for (size_t l = 0; l < kPanel; ++l) {
                const size_t j = p * kPanel + l;
                P[(p * d + i) * kPanel + l] = j < nq ? Q[j * d + i] : 0.f;
            }
}

// acc[r][p] = dots of rows X[0..R) with the 8 queries of panel p, over dimensions [i0, i1).
template <int R, int NP>
inline void panel_dots(const float* P, size_t d, const float* X, size_t i0, size_t i1, __m256 (&acc)[R][NP]) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) acc[r][p] = _mm256_setzero_ps();
    for (size_t i = i0; i < i1; ++i) {
        __m256 q[NP];
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) q[p] = _mm256_load_ps(P + (p * d + i) * kPanel);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const __m256 xb = _mm256_broadcast_ss(X + r * d + i);
#pragma GCC unroll 4
            for (int p = 0; p < NP; ++p) acc[r][p] = _mm256_fmadd_ps(xb, q[p], acc[r][p]);
        }
    }
}

// R rows x NP panels (8 * NP queries starting at query q0), over dimensions [i0, i1). With
// `add` the partial sums of earlier dimension chunks are read back from `out` and added to.
// Registers: R*NP + NP + 1 <= 16.
template <int R, int NP>
inline void panel_tile(const float* P, size_t d, const float* X, float* out, size_t nq, size_t q0, size_t i0,
                       size_t i1, bool add) {
    const bool whole = q0 + NP * kPanel <= nq;
    const size_t valid = whole ? NP * kPanel : nq - q0;
    __m256 acc[R][NP];
    panel_dots<R, NP>(P, d, X, i0, i1, acc);
    // Stores with compile-time bounds on the common path (a data-dependent branch inside made GCC
    // keep the accumulators in memory during the loop above).
    if (whole) {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int p = 0; p < NP; ++p) {
                float* o = out + r * nq + q0 + p * kPanel;
                _mm256_storeu_ps(o, add ? _mm256_add_ps(_mm256_loadu_ps(o), acc[r][p]) : acc[r][p]);
            }
        return;
    }
    alignas(32) float tmp[R][NP * kPanel];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) _mm256_store_ps(&tmp[r][p * kPanel], acc[r][p]);
    for (int r = 0; r < R; ++r)
        for (size_t l = 0; l < valid; ++l) out[r * nq + q0 + l] = add ? out[r * nq + q0 + l] + tmp[r][l] : tmp[r][l];
}

void dot_panels(const float* P, size_t nq, const float* X, size_t nx, size_t d, float* out) {
    const size_t panels = (nq + kPanel - 1) / kPanel;
    // Loop order: dimension chunks, then panel pairs, then rows. A chunk of a panel pair
    // (16 queries x 128 dims = 8 KiB) and of six rows (3 KiB) stay in L1 together while the
    // block of rows streams past from L2; whole 384-d panels and rows would overflow L1.
    constexpr size_t kChunk = 128;
    if (d == 0) {
        for (size_t t = 0; t < nx * nq; ++t) out[t] = 0.f;
    }
    for (size_t i0 = 0; i0 < d; i0 += kChunk) {
        const size_t i1 = i0 + kChunk < d ? i0 + kChunk : d;
        const bool add = i0 > 0;
        for (size_t p = 0; p < panels; p += 2) {
            const bool pair = p + 2 <= panels;
            const float* pp = P + p * d * kPanel;
            const size_t q0 = p * kPanel;
            size_t r = 0;
            for (; r + 6 <= nx; r += 6) {
                if (pair)
                    panel_tile<6, 2>(pp, d, X + r * d, out + r * nq, nq, q0, i0, i1, add);
                else
                    panel_tile<6, 1>(pp, d, X + r * d, out + r * nq, nq, q0, i0, i1, add);
            }
            if (r + 3 <= nx) {  // leftover rows: a 3-row tile still keeps 6 FMA chains busy
                if (pair)
                    panel_tile<3, 2>(pp, d, X + r * d, out + r * nq, nq, q0, i0, i1, add);
                else
                    panel_tile<3, 1>(pp, d, X + r * d, out + r * nq, nq, q0, i0, i1, add);
                r += 3;
            }
            for (; r < nx; ++r) {
                if (pair)
                    panel_tile<1, 2>(pp, d, X + r * d, out + r * nq, nq, q0, i0, i1, add);
                else
                    panel_tile<1, 1>(pp, d, X + r * d, out + r * nq, nq, q0, i0, i1, add);
            }
        }
    }
}

// MaxSim inner step, fused: dots of R rows with 8 * NP queries, reduced by max over the rows in
// registers and folded into best[]; no score matrix is written. Flags NaN / inf dots.
template <int R, int NP>
inline void max_tile(const float* P, size_t d, const float* X, float* best, size_t nq, size_t q0, __m256& bad) {
    __m256 acc[R][NP];
    panel_dots<R, NP>(P, d, X, 0, d, acc);
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
        __m256 m = acc[0][p];
        bad = _mm256_or_ps(bad, _mm256_sub_ps(m, m));  // NaN lanes stay NaN through the OR
#pragma GCC unroll 16
        for (int r = 1; r < R; ++r) {
            bad = _mm256_or_ps(bad, _mm256_sub_ps(acc[r][p], acc[r][p]));
            m = _mm256_max_ps(m, acc[r][p]);
        }
        const size_t j = q0 + p * kPanel;
        if (j >= nq) break;
        const size_t valid = nq - j < kPanel ? nq - j : kPanel;
        if (valid == kPanel) {
            _mm256_storeu_ps(best + j, _mm256_max_ps(_mm256_loadu_ps(best + j), m));
        } else {
            const __m256i mask = tail_mask(valid);
            _mm256_maskstore_ps(best + j, mask, _mm256_max_ps(_mm256_maskload_ps(best + j, mask), m));
        }
    }
}

bool max_panels(const float* P, size_t nq, const float* X, size_t nx, size_t d, float* best) {
    const size_t panels = (nq + kPanel - 1) / kPanel;
    __m256 bad = _mm256_setzero_ps();
    for (size_t p = 0; p < panels; p += 2) {
        const bool pair = p + 2 <= panels;
        const float* pp = P + p * d * kPanel;
        const size_t q0 = p * kPanel;
        size_t r = 0;
        for (; r + 6 <= nx; r += 6) {
            if (pair)
                max_tile<6, 2>(pp, d, X + r * d, best, nq, q0, bad);
            else
                max_tile<6, 1>(pp, d, X + r * d, best, nq, q0, bad);
        }
        for (; r < nx; ++r) {
            if (pair)
                max_tile<1, 2>(pp, d, X + r * d, best, nq, q0, bad);
            else
                max_tile<1, 1>(pp, d, X + r * d, best, nq, q0, bad);
        }
    }
    // Finite dots left 0 (or -0) in `bad`; any NaN or inf left NaN bits behind.
    return _mm256_movemask_ps(_mm256_cmp_ps(bad, bad, _CMP_UNORD_Q)) == 0;
}

void dot_packed(const float* Q, size_t nq, const float* X, size_t nx, size_t d, float* out) {
    const size_t panels = (nq + kPanel - 1) / kPanel;
    const size_t bytes = ((panels * d * kPanel * sizeof(float)) + 31) / 32 * 32;
    float* P = static_cast<float*>(std::aligned_alloc(32, bytes > 0 ? bytes : 32));
    if (P == nullptr) {  // out of memory: fall back to the unpacked tiles
        for (size_t r = 0; r < nx; ++r) rows<LoadF32, 1, 2, 4, 4>(Q, nq, X + r * d, d, out + r * nq);
        return;
    }
    pack_panels(Q, nq, d, P);
    dot_panels(P, nq, X, nx, d, out);
    std::free(P);
}

// Few queries: one row at a time (one sequential stream for the prefetcher), deep unrolling.
template <typename L>
void dot_any(const float* Q, size_t nq, const typename L::T* X, size_t nx, size_t d, float* out) {
    for (size_t r = 0; r < nx; ++r) rows<L, 1, 2, 4, 4>(Q, nq, X + r * d, d, out + r * nq);
}

void dot_f32(const float* Q, size_t nq, const float* X, size_t nx, size_t d, float* out) {
    if (nq >= kPanel)
        dot_packed(Q, nq, X, nx, d, out);
    else
        dot_any<LoadF32>(Q, nq, X, nx, d, out);
}
void dot_f16(const float* Q, size_t nq, const uint16_t* X, size_t nx, size_t d, float* out) {
    dot_any<LoadF16>(Q, nq, X, nx, d, out);
}

// int8: widen 16 lanes to int16 and multiply-add pairs into int32 (exact, no saturation).
// One row at a time (a single stream), U-way unrolled so the adds do not serialise.
template <int J, int U>
inline void tile_i8(const int8_t* Q, const int8_t* x, size_t d, int32_t* out) {
    __m256i acc[U][J];
    for (int u = 0; u < U; ++u)
        for (int j = 0; j < J; ++j) acc[u][j] = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 16 * U <= d; i += 16 * U) {
        for (int u = 0; u < U; ++u) {
            const __m256i xv =
                _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 16 * u)));
            for (int j = 0; j < J; ++j) {
                const __m256i q = _mm256_cvtepi8_epi16(
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(Q + j * d + i + 16 * u)));
                acc[u][j] = _mm256_add_epi32(acc[u][j], _mm256_madd_epi16(xv, q));
            }
        }
    }
    for (; i + 16 <= d; i += 16) {
        const __m256i xv = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
        for (int j = 0; j < J; ++j) {
            const __m256i q =
                _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(Q + j * d + i)));
            acc[0][j] = _mm256_add_epi32(acc[0][j], _mm256_madd_epi16(xv, q));
        }
    }
    for (int j = 0; j < J; ++j) {
        __m256i a = acc[0][j];
        for (int u = 1; u < U; ++u) a = _mm256_add_epi32(a, acc[u][j]);
        int32_t s = hsum_i32(a);
        for (size_t t = i; t < d; ++t) s += static_cast<int32_t>(x[t]) * Q[j * d + t];
        out[j] = s;
    }
}

// Faster int8 path for queries without -128 (what the Python layer's quantiser produces): 32 lanes
// per step with the sign trick, |x| (as unsigned) times sign(x) * q by VPMADDUBSW. Pair sums stay
// within +-2 * 128 * 127 < 2^15, so the int16 stage never saturates; VPMADDWD widens to int32.
template <int J>
inline void tile_i8_sign(const int8_t* Q, const int8_t* x, size_t d, int32_t* out) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[J];
    for (int j = 0; j < J; ++j) acc[j] = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 32 <= d; i += 32) {
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
        const __m256i ax = _mm256_sign_epi8(xv, xv);
        for (int j = 0; j < J; ++j) {
            const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(Q + j * d + i));
            const __m256i p16 = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(qv, xv));
            acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(p16, ones));
        }
    }
    for (int j = 0; j < J; ++j) {
        int32_t s = hsum_i32(acc[j]);
        for (size_t t = i; t < d; ++t) s += static_cast<int32_t>(x[t]) * Q[j * d + t];
        out[j] = s;
    }
}

void dot_i8(const int8_t* Q, size_t nq, const int8_t* X, size_t nx, size_t d, int32_t* out) {
    bool has_min = false;  // -128 in a query breaks the sign trick (its negation overflows)
    for (size_t t = 0; t < nq * d; ++t) has_min |= Q[t] == -128;
    for (size_t r = 0; r < nx; ++r) {
        const int8_t* x = X + r * d;
        int32_t* o = out + r * nq;
        size_t j = 0;
        if (!has_min) {
            for (; j + 4 <= nq; j += 4) tile_i8_sign<4>(Q + j * d, x, d, o + j);
            for (; j < nq; ++j) tile_i8_sign<1>(Q + j * d, x, d, o + j);
            continue;
        }
        for (; j + 4 <= nq; j += 4) tile_i8<4, 1>(Q + j * d, x, d, o + j);
        for (; j + 2 <= nq; j += 2) tile_i8<2, 2>(Q + j * d, x, d, o + j);
        if (j < nq) tile_i8<1, 4>(Q + j * d, x, d, o + j);
    }
}

template <typename L>
void sqnorm_any(const typename L::T* X, size_t nx, size_t d, float* out) {
    for (size_t r = 0; r < nx; ++r) {
        const typename L::T* x = X + r * d;
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
        size_t i = 0;
        for (; i + 16 <= d; i += 16) {
            const __m256 v0 = L::full(x + i), v1 = L::full(x + i + 8);
            a0 = _mm256_fmadd_ps(v0, v0, a0);
            a1 = _mm256_fmadd_ps(v1, v1, a1);
        }
        for (; i + 8 <= d; i += 8) {
            const __m256 v = L::full(x + i);
            a0 = _mm256_fmadd_ps(v, v, a0);
        }
        if (i < d) {
            const __m256 v = L::part(x + i, d - i);
            a1 = _mm256_fmadd_ps(v, v, a1);
        }
        out[r] = hsum(_mm256_add_ps(a0, a1));
    }
}
void sqnorm_f32(const float* X, size_t nx, size_t d, float* out) { sqnorm_any<LoadF32>(X, nx, d, out); }
void sqnorm_f16(const uint16_t* X, size_t nx, size_t d, float* out) { sqnorm_any<LoadF16>(X, nx, d, out); }

// Hamming: nibble lookup popcount (Mula et al.) on 32-byte chunks, byte counters flushed to
// 64-bit lanes with SAD before they can overflow, POPCNT for the tail.
void hamming(const uint8_t* q, const uint8_t* codes, size_t n, size_t nbytes, uint32_t* out) {
    const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,  //
                                         0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i low = _mm256_set1_epi8(0x0f);
    const size_t chunks = nbytes / 32;
    for (size_t r = 0; r < n; ++r) {
        const uint8_t* c = codes + r * nbytes;
        __m256i total = _mm256_setzero_si256();
        size_t k = 0;
        while (k < chunks) {
            const size_t stop = k + 31 < chunks ? k + 31 : chunks;  // <= 31 * 8 per byte lane
            __m256i bytes = _mm256_setzero_si256();
            for (; k < stop; ++k) {
                const __m256i v =
                    _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * k)),
                                     _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 32 * k)));
                const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, low));
                const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
                bytes = _mm256_add_epi8(bytes, _mm256_add_epi8(lo, hi));
            }
            total = _mm256_add_epi64(total, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
        }
        uint64_t lanes[4];
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), total);
        uint64_t acc = lanes[0] + lanes[1] + lanes[2] + lanes[3];
        size_t i = chunks * 32;
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
    for (; i + 4 <= d; i += 4)
        _mm256_storeu_pd(acc + i, _mm256_add_pd(_mm256_loadu_pd(acc + i), _mm256_cvtps_pd(_mm_loadu_ps(v + i))));
    for (; i < d; ++i) acc[i] += static_cast<double>(v[i]);
}

bool blend(float* c, const float* v, size_t d, float w) {
    const __m256 wv = _mm256_set1_ps(w);
    __m256 bad = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= d; i += 32) {  // four independent vectors in flight (memory-level parallelism)
        __m256 r[4];
        for (int u = 0; u < 4; ++u) {
            const __m256 cv = _mm256_loadu_ps(c + i + 8 * u);
            r[u] = _mm256_fmadd_ps(_mm256_sub_ps(_mm256_loadu_ps(v + i + 8 * u), cv), wv, cv);
        }
        for (int u = 0; u < 4; ++u) {
            _mm256_storeu_ps(c + i + 8 * u, r[u]);
            bad = _mm256_or_ps(bad, _mm256_sub_ps(r[u], r[u]));  // 0 for finite, NaN otherwise
        }
    }
    for (; i + 8 <= d; i += 8) {
        const __m256 cv = _mm256_loadu_ps(c + i);
        const __m256 r = _mm256_fmadd_ps(_mm256_sub_ps(_mm256_loadu_ps(v + i), cv), wv, cv);
        _mm256_storeu_ps(c + i, r);
        bad = _mm256_or_ps(bad, _mm256_sub_ps(r, r));
    }
    bool finite = _mm256_movemask_ps(_mm256_cmp_ps(bad, bad, _CMP_UNORD_Q)) == 0;
    for (; i < d; ++i) {
        c[i] += (v[i] - c[i]) * w;
        finite &= (c[i] - c[i]) == 0.f;
    }
    return finite;
}

double stream_sum(const float* x, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
    }
    double s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; ++i) s += x[i];
    return s;
}

// Prim's step over every node (isa_kernels.h): 8 lanes of contiguous loads, no gathers; each lane
// keeps its least best and the first position holding it (positions rise within a lane, so a
// strict < keeps the lowest), then the lanes are compared, ties going to the lower position.
size_t prim_row(const float* row, const float* core, float* best, uint32_t* from, size_t n, float cc,
                uint32_t cur) {
    const __m256 vcc = _mm256_set1_ps(cc);
    const __m256i vcur = _mm256_set1_epi32(static_cast<int32_t>(cur));
    const __m256i eight = _mm256_set1_epi32(8);
    __m256 low8 = _mm256_set1_ps(__builtin_inff());
    __m256i at8 = _mm256_set1_epi32(-1), pos = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 r = _mm256_max_ps(_mm256_max_ps(_mm256_loadu_ps(row + j), _mm256_loadu_ps(core + j)), vcc);
        const __m256 b0 = _mm256_loadu_ps(best + j);
        const __m256 better = _mm256_cmp_ps(r, b0, _CMP_LT_OQ);  // false where best is NaN
        const __m256 b = _mm256_blendv_ps(b0, r, better);
        _mm256_storeu_ps(best + j, b);
        __m256i* f = reinterpret_cast<__m256i*>(from + j);
        _mm256_storeu_si256(f, _mm256_blendv_epi8(_mm256_loadu_si256(f), vcur, _mm256_castps_si256(better)));
        const __m256 lower = _mm256_cmp_ps(b, low8, _CMP_LT_OQ);
        low8 = _mm256_blendv_ps(low8, b, lower);
        at8 = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(at8), _mm256_castsi256_ps(pos), lower));
        pos = _mm256_add_epi32(pos, eight);
    }
    alignas(32) float lows[8];
    alignas(32) int32_t ats[8];
    _mm256_store_ps(lows, low8);
    _mm256_store_si256(reinterpret_cast<__m256i*>(ats), at8);
    float low = __builtin_inff();
    size_t at = n;
    for (int q = 0; q < 8; ++q) {
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

extern const IsaKernels kAvx2Kernels;
const IsaKernels kAvx2Kernels = {
    "avx2",     dot_f32, dot_f16,    dot_i8,    sqnorm_f32, sqnorm_f16, hamming,
    add_f64,    blend,   stream_sum, dot_panels, max_panels, prim_row,
};

}  // namespace engramdb
