// isa_neon.cpp: AArch64 NEON block primitives (NEON is part of the AArch64 baseline, so this file
// needs no extra flags; it is compiled only on aarch64). Tile 4 rows x 2 queries on float32x4_t;
// f16 rows widened with vcvt_f32_f16; int8 widened by vmull_s8 and accumulated pairwise into int32.
#include <arm_neon.h>

#include <cstring>

#include "engramdb/isa_kernels.h"

namespace engramdb {
namespace {

struct LoadF32 {
    using T = float;
    static float32x4_t full(const float* p) { return vld1q_f32(p); }
    static float scalar(const float* p) { return *p; }
};
struct LoadF16 {
    using T = uint16_t;
    static float32x4_t full(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
    static float scalar(const uint16_t* p) {
        float16x4_t h = vreinterpret_f16_u16(vdup_n_u16(*p));
        return vgetq_lane_f32(vcvt_f32_f16(h), 0);
    }
};

template <typename L, int R, int J>
inline void tile(const float* Q, const typename L::T* X, size_t d, float* out, size_t nq) {
    float32x4_t acc[R][J];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < J; ++j) acc[r][j] = vdupq_n_f32(0.f);
    size_t i = 0;
    for (; i + 4 <= d; i += 4) {
        float32x4_t x[R];
        for (int r = 0; r < R; ++r) x[r] = L::full(X + r * d + i);
        for (int j = 0; j < J; ++j) {
            const float32x4_t q = vld1q_f32(Q + j * d + i);
            for (int r = 0; r < R; ++r) acc[r][j] = vfmaq_f32(acc[r][j], x[r], q);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < J; ++j) {
            float s = vaddvq_f32(acc[r][j]);
            for (size_t t = i; t < d; ++t) s += L::scalar(X + r * d + t) * Q[j * d + t];
            out[r * nq + j] = s;
        }
}

template <typename L, int R>
inline void rows(const float* Q, size_t nq, const typename L::T* X, size_t d, float* out) {
    size_t j = 0;
    for (; j + 2 <= nq; j += 2) tile<L, R, 2>(Q + j * d, X, d, out + j, nq);
    if (j < nq) tile<L, R, 1>(Q + j * d, X, d, out + j, nq);
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

void dot_i8(const int8_t* Q, size_t nq, const int8_t* X, size_t nx, size_t d, int32_t* out) {
    for (size_t r = 0; r < nx; ++r) {
        const int8_t* x = X + r * d;
        for (size_t j = 0; j < nq; ++j) {
            const int8_t* q = Q + j * d;
            int32x4_t acc = vdupq_n_s32(0);
            size_t i = 0;
            for (; i + 16 <= d; i += 16) {
                const int8x16_t a = vld1q_s8(x + i), b = vld1q_s8(q + i);
                acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
                acc = vpadalq_s16(acc, vmull_s8(vget_high_s8(a), vget_high_s8(b)));
            }
            int32_t s = vaddvq_s32(acc);
            for (; i < d; ++i) s += static_cast<int32_t>(x[i]) * q[i];
            out[r * nq + j] = s;
        }
    }
}

template <typename L>
void sqnorm_any(const typename L::T* X, size_t nx, size_t d, float* out) {
    for (size_t r = 0; r < nx; ++r) {
        const typename L::T* x = X + r * d;
        float32x4_t a = vdupq_n_f32(0.f);
        size_t i = 0;
        for (; i + 4 <= d; i += 4) {
            const float32x4_t v = L::full(x + i);
            a = vfmaq_f32(a, v, v);
        }
        float s = vaddvq_f32(a);
        for (; i < d; ++i) {
            const float v = L::scalar(x + i);
            s += v * v;
        }
        out[r] = s;
    }
}
void sqnorm_f32(const float* X, size_t nx, size_t d, float* out) { sqnorm_any<LoadF32>(X, nx, d, out); }
void sqnorm_f16(const uint16_t* X, size_t nx, size_t d, float* out) { sqnorm_any<LoadF16>(X, nx, d, out); }

void hamming(const uint8_t* q, const uint8_t* codes, size_t n, size_t nbytes, uint32_t* out) {
    for (size_t r = 0; r < n; ++r) {
        const uint8_t* c = codes + r * nbytes;
        uint32x4_t acc = vdupq_n_u32(0);
        size_t i = 0;
        for (; i + 16 <= nbytes; i += 16) {
            const uint8x16_t cnt = vcntq_u8(veorq_u8(vld1q_u8(q + i), vld1q_u8(c + i)));
            acc = vpadalq_u16(acc, vpaddlq_u8(cnt));
        }
        uint32_t s = vaddvq_u32(acc);
        for (; i < nbytes; ++i) s += static_cast<uint32_t>(__builtin_popcount(static_cast<unsigned>(q[i] ^ c[i])));
        out[r] = s;
    }
}

void add_f64(double* acc, const float* v, size_t d) {
    size_t i = 0;
    for (; i + 4 <= d; i += 4) {
        const float32x4_t f = vld1q_f32(v + i);
        vst1q_f64(acc + i, vaddq_f64(vld1q_f64(acc + i), vcvt_f64_f32(vget_low_f32(f))));
        vst1q_f64(acc + i + 2, vaddq_f64(vld1q_f64(acc + i + 2), vcvt_high_f64_f32(f)));
    }
    for (; i < d; ++i) acc[i] += static_cast<double>(v[i]);
}

bool blend(float* c, const float* v, size_t d, float w) {
    uint32x4_t ok = vdupq_n_u32(0xffffffffu);
    size_t i = 0;
    for (; i + 4 <= d; i += 4) {
        const float32x4_t cv = vld1q_f32(c + i);
        const float32x4_t r = vfmaq_n_f32(cv, vsubq_f32(vld1q_f32(v + i), cv), w);
        vst1q_f32(c + i, r);
        const float32x4_t z = vsubq_f32(r, r);  // 0 for finite, NaN otherwise
        ok = vandq_u32(ok, vceqq_f32(z, z));
    }
    bool finite = vminvq_u32(ok) != 0;
    for (; i < d; ++i) {
        c[i] += (v[i] - c[i]) * w;
        finite &= (c[i] - c[i]) == 0.f;
    }
    return finite;
}

double stream_sum(const float* x, size_t n) {
    float32x4_t a0 = vdupq_n_f32(0.f), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vaddq_f32(a0, vld1q_f32(x + i));
        a1 = vaddq_f32(a1, vld1q_f32(x + i + 4));
        a2 = vaddq_f32(a2, vld1q_f32(x + i + 8));
        a3 = vaddq_f32(a3, vld1q_f32(x + i + 12));
    }
    double s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; ++i) s += x[i];
    return s;
}

#include "panel_generic.inc"

}  // namespace

extern const IsaKernels kNeonKernels;
const IsaKernels kNeonKernels = {
    "neon", dot_f32, dot_f16,    dot_i8,    sqnorm_f32, sqnorm_f16, hamming,
    add_f64,  blend,   stream_sum, dot_panels, max_panels, nullptr,  // prim_row: density.cpp's own loop
};

}  // namespace engramdb
