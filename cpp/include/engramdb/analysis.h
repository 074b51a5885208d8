// analysis.h: the per-token passes of a batch's text analysis (the analyzer's tokens, the hashing
// space's feature sums), one pass over the whole batch instead of a Python call or a numpy pass per
// step. The word-level decisions (stop words, negations, stems, hashes) stay in Python, made once per
// distinct word of the batch; these kernels do what is done once per token.
//
// Every input is checked before it is trusted: an error code comes back, never a read out of range.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace engramdb {

// Tokens of texts given as code points: maximal runs of word characters (word_char[c] == 1), an
// apostrophe (U+0027) between two runs kept inside the token (the analyzer's
// [^\W_]+(?:'[^\W_]+)*). Text r is cp[text_ptr[r] .. text_ptr[r + 1]); a token never crosses texts.
// Each distinct token of the batch gets a number in order of first appearance.
struct TokenPass {
    std::vector<int64_t> counts;  // (n,) tokens per text
    std::vector<int64_t> codes;   // (tokens,) the distinct token each one is
    std::vector<int64_t> first;   // (distinct,) where in cp the token first appears
    std::vector<int64_t> length;  // (distinct,) its length in code points
    std::vector<int64_t> starts;  // (tokens,) where each token starts, in code points from its text's start
};

// 0 on success; 1: text_ptr does not start at 0, decreases or ends past n_cp; 2: a code point at or
// past table_size, or one whose word_char entry is neither 0 nor 1 (not classified yet).
int tokenize_codepoints(const uint32_t* cp, size_t n_cp, const int64_t* text_ptr, size_t n_texts,
                        const uint8_t* word_char, size_t table_size, TokenPass& out);

// The hashing space's unnormalised sums (spaces/hashing.py): per text r, its tokens' slots
// slots[sum(counts[:r]) ...] into a word table (CSR: slot s owns features tab_start[s] ..
// tab_start[s] + tab_len[s] of fidx / fval, and the word hash hashes[s]).
//  - each distinct slot of a text adds rint(double(fval[f]) * log_tf[tf] * 2^24) to bucket fidx[f] of
//    each of its features, tf its count in the text;
//  - each pair of adjacent slots of a text makes the bigram hash h = splitmix64(hashes[a] * golden +
//    hashes[b]); per distinct 33-bit code (bit 63 of h, h mod 2^32) with count tf in the text, bucket
//    (h mod 2^32) mod dim gets rint(sign * bigram_weight * log_tf[tf] * 2^24), sign -1 when bit 63 is set.
// Every value is a whole number below 2^53, so the sums are exact in any order: the same text gives
// the same sums alone or in any batch. With `unit_out` null, the sums go to out ((n_texts * dim)
// doubles; out may be null otherwise); else each text's sums, L2-normalised as numpy does it (squares
// summed by numpy's pairwise order, square root, a division per value; a zero row stays zero), go to
// unit_out ((n_texts * dim) floats) and no (n_texts * dim) doubles are made.
// 0 on success; 1: negative count or counts not summing to n_slots; 2: a slot out of range;
// 3: a table entry out of range of fidx; 4: a bucket >= dim; 5: a count past log_tf's length.
int hash_feature_sums(const int64_t* counts, size_t n_texts, const int64_t* slots, size_t n_slots,
                      const int64_t* tab_start, const int64_t* tab_len, const uint64_t* hashes, size_t n_table,
                      const int32_t* fidx, const float* fval, size_t n_features, const double* log_tf,
                      size_t n_log, double bigram_weight, size_t dim, double* out, float* unit_out = nullptr);

// The signed hashed features of words on their own (spaces/hashing.py's word_features), in its order:
// per word, its word feature (bucket word_hash mod 2^32 mod dim, value +-w_word by bit 63 of
// word_hash), then the n-grams (n = 3, 4, 5, each by position) of "<" + word + ">" (a word of more
// than max_chars code points: "<" + its first max_chars, no end marker), each hashed as
// h = n * golden, h = (h ^ c) * fnv_prime per code point, splitmix64, with value +-w_char / sqrt(m)
// (m: the word's n-gram count, at least 1). Word w is cp[word_ptr[w] .. word_ptr[w + 1]).
// 0 on success; 1: word_ptr does not start at 0, decreases or ends past n_cp; 2: dim < 1 or
// max_chars < 1.
int word_features(const uint32_t* cp, size_t n_cp, const int64_t* word_ptr, size_t n_words,
                  const uint64_t* word_hashes, size_t dim, double w_word, double w_char, int64_t max_chars,
                  std::vector<int64_t>& owner, std::vector<int64_t>& bucket, std::vector<double>& value);

// word_features as the hashing space's word table keeps them: per word its feature count (lens), and
// each feature's bucket (int32) and value rounded to float32, in word_features' order. Same errors,
// and 2 for a dim past int32.
int word_rows(const uint32_t* cp, size_t n_cp, const int64_t* word_ptr, size_t n_words, const uint64_t* word_hashes,
              size_t dim, double w_word, double w_char, int64_t max_chars, std::vector<int64_t>& lens,
              std::vector<int32_t>& bucket, std::vector<float>& value);

// Each word's features (as word_features) summed into a dim-wide row in their order (what numpy's
// bincount of them per (word, bucket) adds), L2-normalised as numpy's row norms (the squares summed
// in numpy's pairwise order), divide and float32 cast make it (a zero row stays zero): the token
// space's term vectors, (n_words * dim) floats into out. Same errors as word_features.
int word_vectors(const uint32_t* cp, size_t n_cp, const int64_t* word_ptr, size_t n_words,
                 const uint64_t* word_hashes, size_t dim, double w_word, double w_char, int64_t max_chars,
                 float* out);

// Passages of long texts (spaces/passages.py's cut). Words are maximal runs of code points that are
// not whitespace (space[c] == 1, c < n_space - 1; every code point from n_space - 1 up is
// space[n_space - 1]). Word i starts a sentence when word i - 1 ends in . ! or ? followed only by
// closing quotes and brackets (" ' ) ]), or a line feed (U+000A) lies between them. A text of at most
// `words` words is one passage (0, its length); otherwise a passage from word s ends at the last
// sentence start j in (s + words / 2, s + words] (before word j), else after `words` words; the next
// starts at the first sentence start in [max(s + 1, cut - overlap), cut), else at that lower bound;
// a tail of at most overlap / 2 words joins the passage before it. Offsets are code points from the
// text's start. span_ptr (n_texts + 1) indexes spans (pairs start, end).
// 0 on success; 1: text_ptr does not start at 0, decreases or ends past n_cp; 2: words < 1 or
// overlap < 0; 3: n_space < 1.
int cut_passages(const uint32_t* cp, size_t n_cp, const int64_t* text_ptr, size_t n_texts, const uint8_t* space,
                 size_t n_space, int64_t words, int64_t overlap, std::vector<int64_t>& span_ptr,
                 std::vector<int64_t>& spans);

// The 64-bit BLAKE2b (RFC 7693; digest 8 bytes, no key, `person` the 16-byte personalisation, zero
// padded) of each word's UTF-8, little-endian: hashlib.blake2b(word.encode("utf-8"), digest_size=8,
// person=...) as an int. Word w is cp[word_ptr[w] .. word_ptr[w + 1]), encoded to UTF-8 here.
// 0 on success; 1: word_ptr does not start at 0, decreases or ends past n_cp; 2: a code point UTF-8
// cannot encode (a surrogate, or past U+10FFFF): out is then incomplete.
int blake2b_words(const uint32_t* cp, size_t n_cp, const int64_t* word_ptr, size_t n_words, const uint8_t person[16],
                  uint64_t* out);

}  // namespace engramdb
