// codes.h: the per-value passes that turn float vectors into stored codes: the token space's int8
// codes with a scale per token (storage/vectors.py) and the binary HDC space's sign bits
// (spaces/hdc.py). Each replaces several numpy passes (and their temporaries as large as the input)
// by one pass over the values, with the same result bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace engramdb {

// Row r of x (n rows of dim floats) as int8 codes q and a scale s = max |x_r| / 127 (float32
// division): q = clamp(rint(x / s), -127, 127) (float32 division, rint ties to even), all 0 when
// s is 0 (a zero row, or one whose largest value divided by 127 underflows to 0). What numpy's
// max/min, divide, rint, clip and astype(int8) make of the row, bit for bit.
// Returns -1, or the first row holding NaN or inf (nothing is written past the rows before it).
int64_t quantize_int8(const float* x, size_t n, size_t dim, int8_t* q, float* scale);

// The sign bits of y (n rows of bits floats) packed as np.packbits(y > 0, axis=1) does (bit 0 is the
// most significant bit of byte 0; bits need not be a multiple of 8: the last byte is zero-padded),
// except that an entry with -tol[r] <= y <= tol[r] gets bit 0 and its flat index r * bits + j goes to
// `near` (in row-major order), for the caller to settle (a negative tol: no entry is near).
// out: n rows of (bits + 7) / 8 bytes.
void sign_bits(const float* y, size_t n, size_t bits, const float* tol, uint8_t* out, std::vector<int64_t>& near);

// The entries sign_bits left open, settled: out[k] = 1 when the float64 dot product of row r of x
// (n x d float32, each value widened exactly) and row c of cols (bits x d float64) is > 0, where
// near[k] = r * bits + c; summed in index order (not numpy's order, which differs by CPU: only a
// product within ~d * 2^-53 of 0 could take another sign). 0 on success; 1: an index out of range.
int near_signs(const float* x, size_t n, size_t d, const double* cols, size_t bits, const int64_t* near,
               size_t n_near, uint8_t* out);

}  // namespace engramdb
