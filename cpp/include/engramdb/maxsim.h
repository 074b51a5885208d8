// maxsim.h: N5, late-interaction scores sum_i max_j <q_i, d_j> of m query token vectors against
// ragged documents (tokens stacked in one (T, d) float32 matrix, document t owning rows
// offsets[t] .. offsets[t + 1]). Scores only the documents listed in `docs` (a shortlist), or all.
// A document with no tokens scores 0. Dots are float32 as in dense.h; the sum is float64.
#pragma once
#include <cstddef>
#include <cstdint>

namespace engramdb {

// Returns the first document whose score is not finite (so the caller can name it), or -1.
int64_t maxsim(const float* Q, size_t m, const float* tokens, size_t d, const int64_t* offsets, size_t n_docs,
               const int64_t* docs, size_t n_out, size_t threads, float* out);

}  // namespace engramdb
