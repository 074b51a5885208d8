// isa_kernels.h: the per-instruction-set primitive table.
//
// Every hot loop of engramdb is one of these block primitives. Each instruction set has its own
// translation unit (src/isa_scalar.cpp, isa_avx2.cpp, isa_avx512.cpp, isa_neon.cpp) compiled with
// flags for that file only; the files include this header and nothing that defines inline code,
// and keep their helpers in anonymous namespaces, so no differently-flagged copy of a shared
// inline function can leak into a CPU that cannot run it (ODR-safe dispatch).
//
// Numerics (all ISAs):
//   dot_f32 / dot_f16: float32 accumulators, lanes summed pairwise at the end; relative error
//     vs float64 about sqrt(d) * 2^-24 * sum|q_i x_i|. f16 rows are widened exactly to f32.
//   dot_i8: int32 accumulators, exact for d < 2^31 / 127^2 (about 133,000 dims).
//   sqnorm_f32 / sqnorm_f16: float32 sum of squares, same bound as dot.
//   hamming: exact integer popcount of XOR.
//   add_f64: float32 inputs widened exactly to float64 and summed in float64.
//   blend: c += (v - c) * w in float32 (running mean with w = 1/(n+1)); returns whether every
//     updated value is finite (a NaN or inf in v always shows up in c, since w > 0).
#pragma once
#include <cstddef>
#include <cstdint>

namespace engramdb {

// Query panels: queries packed 8 at a time, dimension-major, zero-padded (see panels.h), so one
// broadcast row element multiplies 8 queries per instruction and accumulators hold finished dots.
constexpr size_t kPanelWidth = 8;

struct IsaKernels {
    const char* name;
    // out[r * nq + j] = <X[r], Q[j]> for r < nx, j < nq; Q is (nq, d), X is (nx, d), both row-major.
    void (*dot_f32)(const float* Q, size_t nq, const float* X, size_t nx, size_t d, float* out);
    // Same with X stored as IEEE binary16 bit patterns.
    void (*dot_f16)(const float* Q, size_t nq, const uint16_t* X, size_t nx, size_t d, float* out);
    // Integer dot products of int8 rows; out is int32.
    void (*dot_i8)(const int8_t* Q, size_t nq, const int8_t* X, size_t nx, size_t d, int32_t* out);
    // out[r] = sum_i X[r, i]^2
    void (*sqnorm_f32)(const float* X, size_t nx, size_t d, float* out);
    void (*sqnorm_f16)(const uint16_t* X, size_t nx, size_t d, float* out);
    // out[r] = popcount(q XOR codes[r]) over nbytes packed bytes per code.
    void (*hamming)(const uint8_t* q, const uint8_t* codes, size_t n, size_t nbytes, uint32_t* out);
    // acc[i] += v[i] (float64 accumulator)
    void (*add_f64)(double* acc, const float* v, size_t d);
    // c[i] += (v[i] - c[i]) * w; returns false if any updated c[i] is NaN or inf.
    bool (*blend)(float* c, const float* v, size_t d, float w);
    // Sum of all elements with independent accumulators: the plain-read bandwidth probe.
    double (*stream_sum)(const float* x, size_t n);
    // Same result as dot_f32, with the nq queries pre-packed into panels P (32-byte aligned).
    void (*dot_panels)(const float* P, size_t nq, const float* X, size_t nx, size_t d, float* out);
    // best[j] = max(best[j], max_r <X[r], Q[j]>) for pre-packed panels; returns false (best then
    // unspecified) if any dot product is NaN or inf.
    bool (*max_panels)(const float* P, size_t nq, const float* X, size_t nx, size_t d, float* best);
    // One step of Prim's spanning tree of a mutual-reachability graph (HDBSCAN, C4), over every
    // node at once: r = max(max(row[j], core[j]), cc), each max as `a > b ? a : b`; where
    // r < best[j], best[j] = r and from[j] = cur. Returns the lowest j holding the least finite
    // best[j] after the update, or n when none does. A node out of the running holds NaN in best and
    // core: never lowered, never picked. nullptr where vector lanes gain nothing over the
    // caller's own loop (a list of the nodes still out, which halves the work: density.cpp).
    size_t (*prim_row)(const float* row, const float* core, float* best, uint32_t* from, size_t n, float cc,
                       uint32_t cur);
};

// Tables defined by each ISA translation unit (nullptr-free only where compiled in).
extern const IsaKernels kScalarKernels;
#if defined(ENGRAMDB_HAVE_AVX2)
extern const IsaKernels kAvx2Kernels;
#endif
#if defined(ENGRAMDB_HAVE_AVX512)
extern const IsaKernels kAvx512Kernels;
#endif
#if defined(ENGRAMDB_HAVE_NEON)
extern const IsaKernels kNeonKernels;
#endif

}  // namespace engramdb
