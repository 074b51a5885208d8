// N4 (hamming.h): top-k and all distances against a bit-by-bit count, under every ISA.
#include <algorithm>

#include "engramdb/hamming.h"
#include "harness.h"

using harness::Scope;

namespace {

uint32_t ref_distance(const uint8_t* a, const uint8_t* b, size_t nbytes) {
    uint32_t n = 0;
    for (size_t i = 0; i < nbytes; ++i)
        for (int bit = 0; bit < 8; ++bit) n += ((a[i] ^ b[i]) >> bit) & 1u;
    return n;
}

}  // namespace

TEST(hamming_topk_and_all_match_a_bit_count) {
    for (size_t nbytes : {0, 1, 8, 33, 128, 129})
        for (size_t n : {1, 40, 20000}) {
            const size_t nq = 3;
            std::vector<uint8_t> Q(nq * nbytes), codes(n * nbytes);
            for (uint8_t& b : Q) b = static_cast<uint8_t>(harness::randint(0, 255));
            // few distinct bytes: many equal distances, so ties are exercised
            for (uint8_t& b : codes) b = static_cast<uint8_t>(harness::randint(0, 3) * 85);
            std::vector<uint32_t> want_all(nq * n);
            for (size_t j = 0; j < nq; ++j)
                for (size_t r = 0; r < n; ++r)
                    want_all[j * n + r] = ref_distance(Q.data() + j * nbytes, codes.data() + r * nbytes, nbytes);
            for (bool masked : {false, true}) {
                Scope s("nbytes", nbytes, "n", n, "masked", masked);
                const size_t k = n < 50 ? n + 2 : 25;  // k > n pads with -1
                std::vector<uint8_t> mask(masked ? n : 0);
                for (uint8_t& b : mask) b = harness::randint(0, 2) != 0;
                std::vector<std::vector<std::pair<uint32_t, int64_t>>> want(nq);
                for (size_t j = 0; j < nq; ++j) {
                    for (size_t r = 0; r < n; ++r)
                        if (!masked || mask[r]) want[j].push_back({want_all[j * n + r], static_cast<int64_t>(r)});
                    std::sort(want[j].begin(), want[j].end());  // smallest distance, then lowest row
                }
                harness::each_isa([&](const std::string&) {
                    std::vector<int64_t> idx(nq * k, 5), dist(nq * k, 5);
                    engramdb::hamming_topk(Q.data(), nq, codes.data(), n, nbytes, masked ? mask.data() : nullptr, k,
                                           3, idx.data(), dist.data());
                    std::vector<uint32_t> all(nq * n, 0xffffffffu);
                    engramdb::hamming_all(Q.data(), nq, codes.data(), n, nbytes, 2, all.data());
                    CHECK(all == want_all);
                    for (size_t j = 0; j < nq; ++j)
                        for (size_t i = 0; i < k; ++i) {
                            if (i < want[j].size()) {
                                CHECK_EQ(idx[j * k + i], want[j][i].second);
                                CHECK_EQ(dist[j * k + i], int64_t{want[j][i].first});
                            } else {
                                CHECK_EQ(idx[j * k + i], int64_t{-1});
                                CHECK_EQ(dist[j * k + i], int64_t{-1});
                            }
                        }
                });
            }
        }
}

HARNESS_MAIN
