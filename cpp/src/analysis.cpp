// analysis.cpp: the per-token passes of a batch's analysis (see engramdb/analysis.h).
#include "engramdb/analysis.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace engramdb {

namespace {

constexpr uint32_t kApostrophe = 0x27;

// The distinct tokens of a batch: open addressing over (start, length) spans of the code points,
// numbered in order of first appearance.
class TokenTable {
  public:
    TokenTable(const uint32_t* cp, TokenPass& out) : cp_(cp), out_(out) { grow(1024); }

    int64_t code_of(int64_t start, int64_t len) {
        const uint64_t h = hash(cp_ + start, len);
        size_t at = static_cast<size_t>(h) & mask_;
        for (;;) {
            const int64_t slot = slots_[at];
            if (slot < 0) break;
            if (hashes_[static_cast<size_t>(slot)] == h && out_.length[static_cast<size_t>(slot)] == len &&
                std::memcmp(cp_ + out_.first[static_cast<size_t>(slot)], cp_ + start,
                            static_cast<size_t>(len) * sizeof(uint32_t)) == 0)
                return slot;
            at = (at + 1) & mask_;
        }
        const auto code = static_cast<int64_t>(out_.first.size());
        out_.first.push_back(start);
        out_.length.push_back(len);
        hashes_.push_back(h);
        slots_[at] = code;
        if (2 * out_.first.size() > slots_.size()) grow(2 * slots_.size());
        return code;
    }

  private:
    static uint64_t hash(const uint32_t* p, int64_t len) {
        uint64_t h = 0xcbf29ce484222325ULL;
        for (int64_t i = 0; i < len; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
        h ^= h >> 33;  // the low bits pick the slot: mix the high ones in
        h *= 0xff51afd7ed558ccdULL;
        return h ^ (h >> 33);
    }

    void grow(size_t cap) {
        slots_.assign(cap, -1);
        mask_ = cap - 1;
        for (size_t code = 0; code < hashes_.size(); ++code) {
            size_t at = static_cast<size_t>(hashes_[code]) & mask_;
            while (slots_[at] >= 0) at = (at + 1) & mask_;
            slots_[at] = static_cast<int64_t>(code);
        }
    }

    const uint32_t* cp_;
    TokenPass& out_;
    std::vector<int64_t> slots_;
    std::vector<uint64_t> hashes_;
    size_t mask_ = 0;
};

inline uint64_t splitmix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

// rint(v * 2^24), as spaces/hashing.py's _fixed did it: v is formed by the caller exactly as numpy
// forms it (one multiplication at a time: this file is built with -ffp-contract=off and without
// -ffast-math), and 2^24 scales exactly. Rounding to the nearest whole number, ties to even,
// by adding and subtracting 1.5 * 2^52 (exact for |x| < 2^51: the sum's last bit is worth 1) instead
// of a libm call per feature (nearbyint is not inlined for the baseline x86-64 target). The one
// difference from rint, +0.0 for a negative value that rounds to zero, cannot show: the sums start
// at +0.0, and +0.0 + -0.0 is +0.0.
inline double fixed(double v) {
    const double x = v * 16777216.0;
    constexpr double kShift = 6755399441055744.0;  // 1.5 * 2^52
    if (!(std::fabs(x) < 2251799813685248.0)) return std::nearbyint(x);  // 2^51 and beyond (never, in practice)
    return (x + kShift) - kShift;
}

// numpy's pairwise sum of a contiguous float64 run (what np.add.reduce does along a C-contiguous
// row: spaces/hashing.py's row_norms), so the norms, and so the vectors, are numpy's bit for bit:
// below 8 values one after another; up to 128, eight running sums combined as a tree, then the
// rest one by one; beyond, the two halves (the first a multiple of 8 long) summed alike and added.
double pairwise_sum(const double* a, size_t n) {
    if (n < 8) {
        double res = -0.0;
        for (size_t i = 0; i < n; ++i) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (size_t j = 0; j < 8; ++j) r[j] = a[j];
        size_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (size_t j = 0; j < 8; ++j) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

}  // namespace

int tokenize_codepoints(const uint32_t* cp, size_t n_cp, const int64_t* text_ptr, size_t n_texts,
                        const uint8_t* word_char, size_t table_size, TokenPass& out) {
    out = TokenPass{};
    if (text_ptr[0] != 0) return 1;
    for (size_t r = 0; r < n_texts; ++r)
        if (text_ptr[r + 1] < text_ptr[r] || static_cast<uint64_t>(text_ptr[r + 1]) > n_cp) return 1;
    // the texts tile cp[0 .. text_ptr[n_texts]): their code points are classified (and checked) as the
    // scan meets them, each once; any after the last text are checked here (a pass of its own over
    // every code point was a tenth of the scan)
    for (auto i = static_cast<size_t>(text_ptr[n_texts]); i < n_cp; ++i)
        if (cp[i] >= table_size || word_char[cp[i]] > 1) return 2;
    const auto cls = [cp, word_char, table_size](int64_t k) -> uint8_t {
        const uint32_t c = cp[k];
        return c < table_size ? word_char[c] : uint8_t{2};
    };
    out.counts.assign(n_texts, 0);
    out.codes.reserve(n_cp / 4);
    out.starts.reserve(n_cp / 4);
    TokenTable table(cp, out);
    for (size_t r = 0; r < n_texts; ++r) {
        int64_t i = text_ptr[r];
        const int64_t end = text_ptr[r + 1];
        int64_t tokens = 0;
        while (i < end) {
            uint8_t w = cls(i);
            if (w != 1) {
                if (w > 1) return 2;
                ++i;
                continue;
            }
            const int64_t start = i++;
            for (;;) {  // a run of word characters, and another after each apostrophe between two
                while (i < end && (w = cls(i)) == 1) ++i;
                if (i == end) break;
                if (w > 1) return 2;
                if (cp[i] != kApostrophe || i + 1 == end) break;
                w = cls(i + 1);
                if (w > 1) return 2;
                if (w == 0) break;
                i += 2;
            }
            out.codes.push_back(table.code_of(start, i - start));
            out.starts.push_back(start - text_ptr[r]);
            ++tokens;
        }
        out.counts[r] = tokens;
    }
    return 0;
}

namespace {

// The distinct 33-bit bigram codes of one text and their counts, by open addressing in a table reused
// from text to text (a sort of every text's codes was a quarter of the sums' time). The order the
// codes come out in does not matter: every value added is a whole number, so the sums are exact in
// any order.
class PairCounter {
  public:
    void clear(size_t n) {
        size_t cap = 16;
        while (cap < 2 * n) cap *= 2;
        if (keys_.size() < cap || keys_.size() > 4 * cap) {  // grown for a long text, shrunk after it
            keys_.assign(cap, kEmpty);
            tf_.assign(cap, 0);
        } else {
            for (const size_t at : used_) keys_[at] = kEmpty;
        }
        mask_ = keys_.size() - 1;
        used_.clear();
    }
    void add(uint64_t code) {  // code < 2^33: kEmpty is never one
        size_t at = static_cast<size_t>(code * 0x9E3779B97F4A7C15ULL >> 20) & mask_;
        while (keys_[at] != code) {
            if (keys_[at] == kEmpty) {
                keys_[at] = code;
                tf_[at] = 0;
                used_.push_back(at);
                break;
            }
            at = (at + 1) & mask_;
        }
        ++tf_[at];
    }
    const std::vector<size_t>& used() const { return used_; }
    uint64_t key(size_t at) const { return keys_[at]; }
    size_t tf(size_t at) const { return tf_[at]; }

  private:
    static constexpr uint64_t kEmpty = ~uint64_t{0};
    std::vector<uint64_t> keys_;
    std::vector<size_t> tf_;
    std::vector<size_t> used_;  // the slots filled, in order of first appearance
    size_t mask_ = 0;
};

// One text's sums into `sums` (dim doubles, zeroed here): its slots' feature blocks scaled by
// 1 + ln(tf), its bigrams' signed weights. `seen` (one counter per table slot, all 0) counts the
// text's slots without a sort and is left all 0 again; it is empty when the batch has few tokens
// for the table's size (a query), whose texts sort a copy instead, so a query does not pay for
// allocating a counter per table slot. The words come in either order: the sums are exact.
int text_sums(const int64_t* row, size_t cnt, const int64_t* tab_start, const int64_t* tab_len,
              const uint64_t* hashes, const int32_t* fidx, const float* fval, size_t n_features,
              const double* log_tf, size_t n_log, double bigram_weight, size_t dim, std::vector<uint32_t>& seen,
              std::vector<int64_t>& words, std::vector<size_t>& tfs, PairCounter& pairs, double* sums) {
    std::fill(sums, sums + dim, 0.0);
    const auto d = static_cast<uint64_t>(dim);
    words.clear();
    tfs.clear();
    if (!seen.empty() && cnt < UINT32_MAX) {
        for (size_t i = 0; i < cnt; ++i)
            if (seen[static_cast<size_t>(row[i])]++ == 0) words.push_back(row[i]);
        for (const int64_t w : words) {
            tfs.push_back(seen[static_cast<size_t>(w)]);
            seen[static_cast<size_t>(w)] = 0;
        }
    } else {
        std::vector<int64_t> sorted(row, row + cnt);
        std::sort(sorted.begin(), sorted.end());
        for (size_t i = 0; i < cnt;) {
            size_t j = i + 1;
            while (j < cnt && sorted[j] == sorted[i]) ++j;
            words.push_back(sorted[i]);
            tfs.push_back(j - i);
            i = j;
        }
    }
    for (size_t k = 0; k < words.size(); ++k) {
        const auto s = static_cast<size_t>(words[k]);
        if (tfs[k] >= n_log) return 5;
        const double wt = log_tf[tfs[k]];
        const int64_t st = tab_start[s], ln = tab_len[s];
        if (st < 0 || ln < 0 || static_cast<uint64_t>(st) > n_features ||
            static_cast<uint64_t>(ln) > n_features - static_cast<uint64_t>(st))
            return 3;
        for (int64_t f = st; f < st + ln; ++f) {
            const int32_t b = fidx[f];
            if (b < 0 || static_cast<uint64_t>(b) >= d) return 4;
            const double v = static_cast<double>(fval[f]) * wt;
            sums[b] += fixed(v);
        }
    }
    // bigrams of adjacent slots, counted per 33-bit code (sign bit, low 32 bits)
    if (cnt < 2) return 0;
    pairs.clear(cnt - 1);
    for (size_t i = 0; i + 1 < cnt; ++i) {
        const uint64_t h = splitmix64(hashes[row[i]] * 0x9E3779B97F4A7C15ULL + hashes[row[i + 1]]);
        pairs.add(((h >> 63) << 32) | (h & 0xFFFFFFFFULL));
    }
    for (const size_t at : pairs.used()) {
        const size_t tf = pairs.tf(at);
        if (tf >= n_log) return 5;
        const uint64_t code = pairs.key(at);
        const double sign = (code >> 32) ? -1.0 : 1.0;
        const double v = sign * bigram_weight * log_tf[tf];
        sums[(code & 0xFFFFFFFFULL) % d] += fixed(v);
    }
    return 0;
}

}  // namespace

int hash_feature_sums(const int64_t* counts, size_t n_texts, const int64_t* slots, size_t n_slots,
                      const int64_t* tab_start, const int64_t* tab_len, const uint64_t* hashes, size_t n_table,
                      const int32_t* fidx, const float* fval, size_t n_features, const double* log_tf,
                      size_t n_log, double bigram_weight, size_t dim, double* out, float* unit_out) {
    uint64_t total = 0;
    for (size_t r = 0; r < n_texts; ++r) {
        if (counts[r] < 0) return 1;
        total += static_cast<uint64_t>(counts[r]);
        if (total > n_slots) return 1;
    }
    if (total != n_slots) return 1;
    for (size_t j = 0; j < n_slots; ++j)
        if (slots[j] < 0 || static_cast<uint64_t>(slots[j]) >= n_table) return 2;
    std::vector<uint32_t> seen(n_slots * 16 >= n_table ? n_table : 0, 0);  // only when some text may use it
    std::vector<int64_t> words;
    std::vector<size_t> tfs;
    PairCounter pairs;
    std::vector<double> scratch(unit_out != nullptr ? dim : 0), squares(unit_out != nullptr ? dim : 0);
    size_t at = 0;
    for (size_t r = 0; r < n_texts; ++r) {
        const auto cnt = static_cast<size_t>(counts[r]);
        double* sums = unit_out != nullptr ? scratch.data() : out + r * dim;
        const int err = text_sums(slots + at, cnt, tab_start, tab_len, hashes, fidx, fval, n_features, log_tf, n_log,
                                  bigram_weight, dim, seen, words, tfs, pairs, sums);
        if (err) return err;
        at += cnt;
        if (unit_out == nullptr) continue;
        // L2-normalised to float32 as row_norms and numpy's divide and cast do it: the squares
        // summed pairwise, the square root, one division per value, rounded to float32
        for (size_t b = 0; b < dim; ++b) squares[b] = sums[b] * sums[b];
        const double norm = std::sqrt(pairwise_sum(squares.data(), dim));
        float* o = unit_out + r * dim;
        for (size_t b = 0; b < dim; ++b) o[b] = static_cast<float>(norm > 0 ? sums[b] / norm : sums[b]);
    }
    return 0;
}

namespace {

// The features of one word on its own (see word_features), each passed to emit(bucket, value) in
// order: the word feature, then the n-grams by size and position. `marked` is scratch.
template <typename Emit>
void each_feature(const uint32_t* c, size_t len, uint64_t wh, uint64_t d, double w_word, double w_char,
                  int64_t max_chars, std::vector<uint64_t>& marked, Emit&& emit) {
    const bool cut = len > static_cast<uint64_t>(max_chars);
    marked.assign(1, '<');
    marked.insert(marked.end(), c, c + (cut ? static_cast<size_t>(max_chars) : len));
    if (!cut) marked.push_back('>');
    const size_t m_len = marked.size();
    size_t m = 0;
    for (size_t n = 3; n <= 5; ++n) m += m_len >= n ? m_len - n + 1 : 0;
    const double per = w_char / std::sqrt(std::max(static_cast<double>(m), 1.0));
    emit(static_cast<int64_t>((wh & 0xFFFFFFFFULL) % d), (wh >> 63) ? -w_word : w_word);
    for (size_t n = 3; n <= 5; ++n) {
        for (size_t p = 0; p + n <= m_len; ++p) {
            uint64_t h = static_cast<uint64_t>(n) * 0x9E3779B97F4A7C15ULL;
            for (size_t j = 0; j < n; ++j) h = (h ^ marked[p + j]) * 0x100000001B3ULL;
            h = splitmix64(h);
            emit(static_cast<int64_t>((h & 0xFFFFFFFFULL) % d), (h >> 63) ? -per : per);
        }
    }
}

int check_words(size_t n_cp, const int64_t* word_ptr, size_t n_words, size_t dim, int64_t max_chars) {
    if (word_ptr[0] != 0) return 1;
    for (size_t w = 0; w < n_words; ++w)
        if (word_ptr[w + 1] < word_ptr[w] || static_cast<uint64_t>(word_ptr[w + 1]) > n_cp) return 1;
    if (dim < 1 || max_chars < 1) return 2;
    return 0;
}

}  // namespace

int word_features(const uint32_t* cp, size_t n_cp, const int64_t* word_ptr, size_t n_words,
                  const uint64_t* word_hashes, size_t dim, double w_word, double w_char, int64_t max_chars,
                  std::vector<int64_t>& owner, std::vector<int64_t>& bucket, std::vector<double>& value) {
    owner.clear();
    bucket.clear();
    value.clear();
    if (const int err = check_words(n_cp, word_ptr, n_words, dim, max_chars)) return err;
    std::vector<uint64_t> marked;
    for (size_t w = 0; w < n_words; ++w) {
        const auto own = static_cast<int64_t>(w);
        each_feature(cp + word_ptr[w], static_cast<size_t>(word_ptr[w + 1] - word_ptr[w]), word_hashes[w], dim, w_word,
                     w_char, max_chars, marked, [&](int64_t b, double v) {
                         owner.push_back(own);
                         bucket.push_back(b);
                         value.push_back(v);
                     });
    }
    return 0;
}

int word_rows(const uint32_t* cp, size_t n_cp, const int64_t* word_ptr, size_t n_words, const uint64_t* word_hashes,
              size_t dim, double w_word, double w_char, int64_t max_chars, std::vector<int64_t>& lens,
              std::vector<int32_t>& bucket, std::vector<float>& value) {
    lens.assign(n_words, 0);
    bucket.clear();
    value.clear();
    if (const int err = check_words(n_cp, word_ptr, n_words, dim, max_chars)) return err;
    if (dim > static_cast<size_t>(INT32_MAX)) return 2;
    std::vector<uint64_t> marked;
    for (size_t w = 0; w < n_words; ++w) {
        const size_t before = bucket.size();
        each_feature(cp + word_ptr[w], static_cast<size_t>(word_ptr[w + 1] - word_ptr[w]), word_hashes[w], dim, w_word,
                     w_char, max_chars, marked, [&](int64_t b, double v) {
                         bucket.push_back(static_cast<int32_t>(b));
                         value.push_back(static_cast<float>(v));
                     });
        lens[w] = static_cast<int64_t>(bucket.size() - before);
    }
    return 0;
}

int word_vectors(const uint32_t* cp, size_t n_cp, const int64_t* word_ptr, size_t n_words,
                 const uint64_t* word_hashes, size_t dim, double w_word, double w_char, int64_t max_chars,
                 float* out) {
    if (const int err = check_words(n_cp, word_ptr, n_words, dim, max_chars)) return err;
    std::vector<uint64_t> marked;
    std::vector<double> sums(dim), squares(dim);
    for (size_t w = 0; w < n_words; ++w) {
        std::fill(sums.begin(), sums.end(), 0.0);
        each_feature(cp + word_ptr[w], static_cast<size_t>(word_ptr[w + 1] - word_ptr[w]), word_hashes[w], dim, w_word,
                     w_char, max_chars, marked,
                     [&sums](int64_t b, double v) { sums[static_cast<size_t>(b)] += v; });
        // normalised as row_norms, numpy's divide and the float32 cast do it (see hash_feature_sums)
        for (size_t b = 0; b < dim; ++b) squares[b] = sums[b] * sums[b];
        const double norm = std::sqrt(pairwise_sum(squares.data(), dim));
        float* o = out + w * dim;
        for (size_t b = 0; b < dim; ++b) o[b] = static_cast<float>(norm > 0 ? sums[b] / norm : sums[b]);
    }
    return 0;
}

int cut_passages(const uint32_t* cp, size_t n_cp, const int64_t* text_ptr, size_t n_texts, const uint8_t* space,
                 size_t n_space, int64_t words, int64_t overlap, std::vector<int64_t>& span_ptr,
                 std::vector<int64_t>& spans) {
    span_ptr.assign(1, 0);
    spans.clear();
    if (text_ptr[0] != 0) return 1;
    for (size_t r = 0; r < n_texts; ++r)
        if (text_ptr[r + 1] < text_ptr[r] || static_cast<uint64_t>(text_ptr[r + 1]) > n_cp) return 1;
    if (words < 1 || overlap < 0) return 2;
    if (n_space < 1) return 3;
    const uint8_t above = space[n_space - 1];
    auto is_space = [&](uint32_t c) { return c < n_space - 1 ? space[c] != 0 : above != 0; };
    auto closer = [](uint32_t c) { return c == '"' || c == '\'' || c == ')' || c == ']'; };
    std::vector<int64_t> first, last;
    std::vector<uint8_t> starts;
    for (size_t r = 0; r < n_texts; ++r) {
        const uint32_t* t = cp + text_ptr[r];
        const auto len = static_cast<size_t>(text_ptr[r + 1] - text_ptr[r]);
        first.clear();
        last.clear();
        for (size_t i = 0; i < len;) {
            if (is_space(t[i])) {
                ++i;
                continue;
            }
            first.push_back(static_cast<int64_t>(i));
            while (i < len && !is_space(t[i])) ++i;
            last.push_back(static_cast<int64_t>(i));
        }
        const auto n = static_cast<int64_t>(first.size());
        if (n <= words) {
            spans.push_back(0);
            spans.push_back(static_cast<int64_t>(len));
            span_ptr.push_back(static_cast<int64_t>(spans.size() / 2));
            continue;
        }
        starts.assign(static_cast<size_t>(n), 0);
        starts[0] = 1;
        for (int64_t i = 1; i < n; ++i) {
            const auto a = static_cast<size_t>(first[static_cast<size_t>(i - 1)]);
            auto q = static_cast<size_t>(last[static_cast<size_t>(i - 1)]);
            while (q > a && closer(t[q - 1])) --q;
            bool start = q > a && (t[q - 1] == '.' || t[q - 1] == '!' || t[q - 1] == '?');
            for (auto g = static_cast<size_t>(last[static_cast<size_t>(i - 1)]);
                 !start && g < static_cast<size_t>(first[static_cast<size_t>(i)]); ++g)
                start = t[g] == '\n';
            starts[static_cast<size_t>(i)] = start;
        }
        auto at = [](const std::vector<int64_t>& v, int64_t i) { return v[static_cast<size_t>(i)]; };
        int64_t s = 0;
        for (;;) {
            const int64_t end = s + words;
            if (end >= n) {
                spans.push_back(at(first, s));
                spans.push_back(at(last, n - 1));
                break;
            }
            int64_t cut = end;
            for (int64_t j = end; j > s + words / 2; --j)
                if (starts[static_cast<size_t>(j)]) {
                    cut = j;
                    break;
                }
            spans.push_back(at(first, s));
            if (n - cut <= overlap / 2) {  // a tail this short joins the passage that ends before it
                spans.push_back(at(last, n - 1));
                break;
            }
            spans.push_back(at(last, cut - 1));
            const int64_t lo = std::max(s + 1, cut - overlap);
            s = lo;
            for (int64_t j = lo; j < cut; ++j)
                if (starts[static_cast<size_t>(j)]) {
                    s = j;
                    break;
                }
        }
        span_ptr.push_back(static_cast<int64_t>(spans.size() / 2));
    }
    return 0;
}

}  // namespace engramdb
