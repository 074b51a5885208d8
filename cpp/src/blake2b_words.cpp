// blake2b_words.cpp: BLAKE2b digests of many words in one pass (see engramdb/analysis.h): what
// hashlib.blake2b(word, digest_size=8, person=...) gives, for the term ids of new words.
#include "engramdb/analysis.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace engramdb {

namespace {

// BLAKE2b (RFC 7693) for digests of at most 8 bytes read as one little-endian word: the compression
// function over 128-byte blocks, the parameter block's digest length, fanout 1, depth 1 and
// personalisation (bytes 48..63) folded into the initial state.
constexpr uint64_t kBlakeIV[8] = {0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
                                  0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
                                  0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
constexpr uint8_t kSigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

inline uint64_t rotr64(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

inline uint64_t load64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

void blake2b_compress(uint64_t h[8], const uint8_t block[128], uint64_t counter, bool last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; ++i) m[i] = load64(block + 8 * i);
    for (int i = 0; i < 8; ++i) {
        v[i] = h[i];
        v[i + 8] = kBlakeIV[i];
    }
    v[12] ^= counter;  // the high half of the 128-bit counter stays 0: inputs are far below 2^64 bytes
    if (last) v[14] = ~v[14];
    auto g = [&v](int a, int b, int c, int d, uint64_t x, uint64_t y) {
        v[a] = v[a] + v[b] + x;
        v[d] = rotr64(v[d] ^ v[a], 32);
        v[c] = v[c] + v[d];
        v[b] = rotr64(v[b] ^ v[c], 24);
        v[a] = v[a] + v[b] + y;
        v[d] = rotr64(v[d] ^ v[a], 16);
        v[c] = v[c] + v[d];
        v[b] = rotr64(v[b] ^ v[c], 63);
    };
    for (const auto& s : kSigma) {
        g(0, 4, 8, 12, m[s[0]], m[s[1]]);
        g(1, 5, 9, 13, m[s[2]], m[s[3]]);
        g(2, 6, 10, 14, m[s[4]], m[s[5]]);
        g(3, 7, 11, 15, m[s[6]], m[s[7]]);
        g(0, 5, 10, 15, m[s[8]], m[s[9]]);
        g(1, 6, 11, 12, m[s[10]], m[s[11]]);
        g(2, 7, 8, 13, m[s[12]], m[s[13]]);
        g(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; ++i) h[i] ^= v[i] ^ v[i + 8];
}

// Appends the UTF-8 of code point c; false for one UTF-8 cannot encode (a surrogate, past U+10FFFF).
bool put_utf8(uint32_t c, std::vector<uint8_t>& out) {
    if (c < 0x80) {
        out.push_back(static_cast<uint8_t>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<uint8_t>(0xC0 | (c >> 6)));
        out.push_back(static_cast<uint8_t>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        if (c >= 0xD800 && c <= 0xDFFF) return false;
        out.push_back(static_cast<uint8_t>(0xE0 | (c >> 12)));
        out.push_back(static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<uint8_t>(0x80 | (c & 0x3F)));
    } else if (c <= 0x10FFFF) {
        out.push_back(static_cast<uint8_t>(0xF0 | (c >> 18)));
        out.push_back(static_cast<uint8_t>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<uint8_t>(0x80 | (c & 0x3F)));
    } else {
        return false;
    }
    return true;
}

}  // namespace

int blake2b_words(const uint32_t* cp, size_t n_cp, const int64_t* word_ptr, size_t n_words, const uint8_t person[16],
                  uint64_t* out) {
    if (word_ptr[0] != 0) return 1;
    for (size_t w = 0; w < n_words; ++w)
        if (word_ptr[w + 1] < word_ptr[w] || static_cast<uint64_t>(word_ptr[w + 1]) > n_cp) return 1;
    uint64_t h0[8];
    for (int i = 0; i < 8; ++i) h0[i] = kBlakeIV[i];
    h0[0] ^= 0x01010000ULL ^ 8ULL;  // digest length 8, no key, fanout 1, depth 1
    h0[6] ^= load64(person);
    h0[7] ^= load64(person + 8);
    std::vector<uint8_t> bytes;
    uint8_t block[128];
    for (size_t w = 0; w < n_words; ++w) {
        bytes.clear();
        for (int64_t i = word_ptr[w]; i < word_ptr[w + 1]; ++i)
            if (!put_utf8(cp[i], bytes)) return 2;
        uint64_t h[8];
        std::copy(h0, h0 + 8, h);
        size_t at = 0;
        const size_t n = bytes.size();
        while (n - at > 128) {  // every full block but the last one
            blake2b_compress(h, bytes.data() + at, at + 128, false);
            at += 128;
        }
        std::fill(block, block + 128, uint8_t{0});
        std::copy(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.end(), block);
        blake2b_compress(h, block, n, true);
        out[w] = h[0];  // the first 8 bytes of the digest, little-endian
    }
    return 0;
}

}  // namespace engramdb
