// isa_scalar.cpp: portable reference implementations of the block primitives.
// Compiled with the baseline flags only; every other ISA file is tested against this one and
// against float64 numpy. Eight independent accumulators keep the dependency chains short without
// reassociating float math behind the compiler's back (no fast-math flags anywhere).
#include <cstring>

#include "engramdb/isa_kernels.h"

namespace engramdb {
namespace {

inline float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal half: renormalise
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                --exp;
            }
            mant &= 0x3ffu;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

template <typename Load>
inline float dot_row(const float* q, size_t d, Load load) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= d; i += 8)
        for (int l = 0; l < 8; ++l) acc[l] += q[i + l] * load(i + l);
    for (; i < d; ++i) acc[i & 7] += q[i] * load(i);
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void dot_f32(const float* Q, size_t nq, const float* X, size_t nx, size_t d, float* out) {
    for (size_t r = 0; r < nx; ++r) {
        const float* x = X + r * d;
        for (size_t j = 0; j < nq; ++j)
            out[r * nq + j] = dot_row(Q + j * d, d, [x](size_t i) { return x[i]; });
    }
}

void dot_f16(const float* Q, size_t nq, const uint16_t* X, size_t nx, size_t d, float* out) {
    float buf[256];
    for (size_t r = 0; r < nx; ++r) {
        const uint16_t* x = X + r * d;
        if (d <= 256) {
            for (size_t i = 0; i < d; ++i) buf[i] = half_to_float(x[i]);
            for (size_t j = 0; j < nq; ++j)
                out[r * nq + j] = dot_row(Q + j * d, d, [&buf](size_t i) { return buf[i]; });
        } else {
            for (size_t j = 0; j < nq; ++j)
                out[r * nq + j] = dot_row(Q + j * d, d, [x](size_t i) { return half_to_float(x[i]); });
        }
    }
}

void dot_i8(const int8_t* Q, size_t nq, const int8_t* X, size_t nx, size_t d, int32_t* out) {
    for (size_t r = 0; r < nx; ++r) {
        const int8_t* x = X + r * d;
        for (size_t j = 0; j < nq; ++j) {
            const int8_t* q = Q + j * d;
            int32_t acc = 0;
            for (size_t i = 0; i < d; ++i) acc += static_cast<int32_t>(q[i]) * static_cast<int32_t>(x[i]);
            out[r * nq + j] = acc;
        }
    }
}

void sqnorm_f32(const float* X, size_t nx, size_t d, float* out) {
    for (size_t r = 0; r < nx; ++r) {
        const float* x = X + r * d;
        out[r] = dot_row(x, d, [x](size_t i) { return x[i]; });
    }
}

void sqnorm_f16(const uint16_t* X, size_t nx, size_t d, float* out) {
    for (size_t r = 0; r < nx; ++r) {
        const uint16_t* x = X + r * d;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (size_t i = 0; i < d; ++i) {
            const float v = half_to_float(x[i]);
            acc[i & 7] += v * v;
        }
        out[r] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
}

inline uint32_t popcount64(uint64_t v) {
    // Portable SWAR popcount: the baseline x86-64 target has no POPCNT instruction.
    v = v - ((v >> 1) & 0x5555555555555555ULL);
    v = (v & 0x3333333333333333ULL) + ((v >> 2) & 0x3333333333333333ULL);
    v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return static_cast<uint32_t>((v * 0x0101010101010101ULL) >> 56);
}

void hamming(const uint8_t* q, const uint8_t* codes, size_t n, size_t nbytes, uint32_t* out) {
    for (size_t r = 0; r < n; ++r) {
        const uint8_t* c = codes + r * nbytes;
        uint32_t acc = 0;
        size_t i = 0;
        for (; i + 8 <= nbytes; i += 8) {
            uint64_t a, b;
            std::memcpy(&a, q + i, 8);
            std::memcpy(&b, c + i, 8);
            acc += popcount64(a ^ b);
        }
        for (; i < nbytes; ++i) acc += popcount64(static_cast<uint64_t>(q[i] ^ c[i]));
        out[r] = acc;
    }
}

void add_f64(double* acc, const float* v, size_t d) {
    for (size_t i = 0; i < d; ++i) acc[i] += static_cast<double>(v[i]);
}

bool blend(float* c, const float* v, size_t d, float w) {
    bool finite = true;
    for (size_t i = 0; i < d; ++i) {
        c[i] += (v[i] - c[i]) * w;
        finite &= (c[i] - c[i]) == 0.f;  // false for NaN and +-inf
    }
    return finite;
}

double stream_sum(const float* x, size_t n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l) acc[l] += x[i + l];
    for (; i < n; ++i) acc[0] += x[i];
    double s = 0;
    for (float a : acc) s += a;
    return s;
}

#include "panel_generic.inc"

}  // namespace

extern const IsaKernels kScalarKernels;
const IsaKernels kScalarKernels = {
    "scalar", dot_f32, dot_f16,    dot_i8,    sqnorm_f32, sqnorm_f16, hamming,
    add_f64,  blend,   stream_sum, dot_panels, max_panels, nullptr,  // prim_row: density.cpp's own loop
};

}  // namespace engramdb
