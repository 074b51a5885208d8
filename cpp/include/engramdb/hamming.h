// hamming.h: N4, Hamming distance over packed bit codes with top-k (smallest distance first,
// ties by lower row index). Codes are nbytes bytes each (any length; 1024-bit codes = 128 bytes).
// Distances are exact integers.
#pragma once
#include <cstddef>
#include <cstdint>

namespace engramdb {

// Q: (nq, nbytes); codes: (n, nbytes); mask: n bytes or nullptr; idx/dist: (nq, k), padding -1.
void hamming_topk(const uint8_t* Q, size_t nq, const uint8_t* codes, size_t n, size_t nbytes, const uint8_t* mask,
                  size_t k, size_t threads, int64_t* idx, int64_t* dist);

// All distances: out (nq, n).
void hamming_all(const uint8_t* Q, size_t nq, const uint8_t* codes, size_t n, size_t nbytes, size_t threads,
                 uint32_t* out);

}  // namespace engramdb
