// dense.h: N1, fused scan + top-k of a query batch against a row matrix.
//
// Storage: float32, float16 (IEEE binary16 bit patterns), int8 (with float32 rescoring of a
// shortlist). Metrics: dot, cosine (queries and rows normalised inside the scan; zero vectors
// score 0), Born E-score E = max(0, <q, x>)^2. Selection keeps the k best per query, ties broken
// by the lower row index; no full score array is materialised unless `full` is given.
// A non-finite score (a NaN or inf in an allowed row, or float32 overflow) stops the scan and
// the row is returned so the caller can name it; otherwise -1 is returned.
#pragma once
#include <cstddef>
#include <cstdint>

namespace engramdb {

enum class Metric : int { dot = 0, cosine = 1, born = 2 };

// X points to n rows of d float32 (f16 == false) or binary16 (f16 == true) values.
// mask: n bytes, nonzero = row allowed, or nullptr. idx/scores: (nq, k). full: (nq, n) or nullptr
// (masked rows get -inf there).
int64_t dense_topk(const float* Q, size_t nq, const void* X, bool f16, size_t n, size_t d, Metric metric,
                   const uint8_t* mask, size_t k, size_t threads, int64_t* idx, float* scores, float* full);

// int8 scan: score = float(<q8, x8>) * row_scale[r] (row_scale may be nullptr = 1).
void dense_topk_i8(const int8_t* Q, size_t nq, const int8_t* X, size_t n, size_t d, const float* row_scale,
                   const uint8_t* mask, size_t k, size_t threads, int64_t* idx, float* scores);

// Exact rescoring of candidate rows cand (nq, L; -1 entries ignored) against float rows X.
int64_t dense_rescore(const float* Q, size_t nq, const void* X, bool f16, size_t n, size_t d, Metric metric,
                      const int64_t* cand, size_t L, size_t k, int64_t* idx, float* scores);

// Exact scores of a query (d,) for global keys over several row matrices (segments): matrix s
// holds keys bases[s] .. bases[s+1]-1, all float32 or all binary16. keys may repeat and come in
// any order (each is scored once); they must lie in [0, bases[nseg]). Writes the min(k, unique)
// best (key, score) pairs, best first, ties to the lower key, and their count to out_n (out
// arrays hold k). Returns the first key whose score is not finite, else -1.
int64_t dense_rescore_keys(const float* q, size_t d, const void* const* mats, bool f16, const int64_t* bases,
                           size_t nseg, Metric metric, const int64_t* keys, size_t nkeys, size_t k, size_t threads,
                           int64_t* out_keys, float* out_scores, size_t* out_n);

// Plain read of n floats (the bandwidth ceiling a scan is measured against).
double stream_sum(const float* x, size_t n, size_t threads);

}  // namespace engramdb
