// hamming.cpp: the N4 scan driver (blocks of codes stay in cache while every query visits them).
#include "engramdb/hamming.h"

#include <algorithm>
#include <vector>

#include "engramdb/dispatch.h"
#include "engramdb/parallel.h"
#include "engramdb/topk.h"

namespace engramdb {

void hamming_topk(const uint8_t* Q, size_t nq, const uint8_t* codes, size_t n, size_t nbytes, const uint8_t* mask,
                  size_t k, size_t threads, int64_t* idx, int64_t* dist) {
    const IsaKernels& K = kernels();
    const size_t block = std::clamp<size_t>((128 * 1024) / std::max<size_t>(nbytes, 1), 16, 4096);
    const size_t nt = plan_threads(n, threads, 16384);
    std::vector<std::vector<TopK>> heaps(nt, std::vector<TopK>(nq, TopK(k)));
    parallel_for(n, nt, [&](size_t begin, size_t end, size_t t) {
        std::vector<uint32_t> buf(block);
        for (size_t b = begin; b < end; b += block) {
            const size_t m = std::min(block, end - b);
            for (size_t j = 0; j < nq; ++j) {
                K.hamming(Q + j * nbytes, codes + b * nbytes, m, nbytes, buf.data());
                TopK& h = heaps[t][j];
                for (size_t r = 0; r < m; ++r) {
                    if (mask != nullptr && !mask[b + r]) continue;
                    // Negated distance as the score: exact in float32 below 2^24 bits.
                    const float v = -static_cast<float>(buf[r]);
                    if (v > h.threshold()) h.push(v, static_cast<int64_t>(b + r));
                }
            }
        }
    });
    std::vector<float> s(k);
    for (size_t j = 0; j < nq; ++j) {
        for (size_t t = 1; t < nt; ++t) heaps[0][j].merge(heaps[t][j]);
        heaps[0][j].write(idx + j * k, s.data());
        for (size_t i = 0; i < k; ++i) dist[j * k + i] = idx[j * k + i] < 0 ? -1 : static_cast<int64_t>(-s[i]);
    }
}

void hamming_all(const uint8_t* Q, size_t nq, const uint8_t* codes, size_t n, size_t nbytes, size_t threads,
                 uint32_t* out) {
    const IsaKernels& K = kernels();
    parallel_for(n, plan_threads(n, threads, 16384), [&](size_t begin, size_t end, size_t) {
        for (size_t j = 0; j < nq; ++j) K.hamming(Q + j * nbytes, codes + begin * nbytes, end - begin, nbytes,
                                                  out + j * n + begin);
    });
}

}  // namespace engramdb
