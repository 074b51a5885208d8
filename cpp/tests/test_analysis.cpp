// The batch analysis passes (analysis.h): the tokenizer against a direct scan written here (runs of
// word characters joined by single apostrophes), tokens numbered by first appearance; the hashing
// sums against the formula summed feature by feature in double here; and every input a caller
// controls (offsets, code points, table classes, counts, slots, table entries, buckets, the log
// table's length) coming back as an error code, never a read outside the arrays (ASan's redzones
// sit right after each std::vector).
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "engramdb/analysis.h"
#include "harness.h"

using harness::Scope;

namespace {

std::vector<uint8_t> ascii_word_chars(size_t size) {
    std::vector<uint8_t> t(size, 0);
    for (size_t c = 0; c < size && c < 128; ++c)
        t[c] = static_cast<uint8_t>((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
    return t;
}

std::vector<uint32_t> cps(const std::string& s) { return {s.begin(), s.end()}; }

// The tokens of one text by the regex's own reading: at a word character, take the run, then while
// an apostrophe is followed by a word character, take it and the next run.
std::vector<std::u32string> scan(const std::vector<uint32_t>& cp, size_t a, size_t b, const std::vector<uint8_t>& wc) {
    std::vector<std::u32string> out;
    size_t i = a;
    while (i < b) {
        if (!wc[cp[i]]) { ++i; continue; }
        std::u32string tok;
        for (;;) {
            while (i < b && wc[cp[i]]) tok.push_back(cp[i++]);
            if (i + 1 < b && cp[i] == '\'' && wc[cp[i + 1]]) { tok.push_back(cp[i++]); continue; }
            break;
        }
        out.push_back(tok);
    }
    return out;
}

}  // namespace

TEST(tokens_match_a_direct_scan_and_number_by_first_appearance) {
    const auto wc = ascii_word_chars(128);
    const std::string alphabet = "ab'_ 9.\n'Z";
    for (int trial = 0; trial < 300; ++trial) {
        Scope s("trial", trial);
        const auto n = static_cast<size_t>(harness::randint(0, 6));
        std::vector<uint32_t> cp;
        std::vector<int64_t> ptr{0};
        for (size_t r = 0; r < n; ++r) {
            const auto len = harness::randint(0, 30);
            for (int64_t j = 0; j < len; ++j) cp.push_back(static_cast<uint32_t>(alphabet[static_cast<size_t>(
                harness::randint(0, static_cast<int64_t>(alphabet.size()) - 1))]));
            ptr.push_back(static_cast<int64_t>(cp.size()));
        }
        engramdb::TokenPass pass;
        REQUIRE(engramdb::tokenize_codepoints(cp.data(), cp.size(), ptr.data(), n, wc.data(), wc.size(), pass) == 0);
        REQUIRE(pass.counts.size() == n);
        REQUIRE(pass.first.size() == pass.length.size());
        std::map<std::u32string, int64_t> seen;
        size_t at = 0;
        for (size_t r = 0; r < n; ++r) {
            const auto want = scan(cp, static_cast<size_t>(ptr[r]), static_cast<size_t>(ptr[r + 1]), wc);
            REQUIRE(pass.counts[r] == static_cast<int64_t>(want.size()));
            for (const auto& tok : want) {
                REQUIRE(at < pass.codes.size());
                const int64_t code = pass.codes[at++];
                auto it = seen.find(tok);
                if (it == seen.end()) {  // a new token gets the next number
                    CHECK_EQ(code, static_cast<int64_t>(seen.size()));
                    seen.emplace(tok, code);
                } else {
                    CHECK_EQ(code, it->second);
                }
                REQUIRE(code >= 0 && static_cast<size_t>(code) < pass.first.size());
                const auto f = static_cast<size_t>(pass.first[static_cast<size_t>(code)]);
                CHECK(std::u32string(cp.begin() + static_cast<std::ptrdiff_t>(f),
                                     cp.begin() + static_cast<std::ptrdiff_t>(f) + pass.length[static_cast<size_t>(code)]) == tok);
            }
        }
        CHECK_EQ(at, pass.codes.size());
        CHECK_EQ(seen.size(), pass.first.size());
    }
}

TEST(many_distinct_tokens_survive_the_table_growing) {
    const auto wc = ascii_word_chars(128);
    std::vector<uint32_t> cp;
    for (int i = 0; i < 5000; ++i) {  // "w<i> " twice over: 5,000 distinct, each seen twice
        const auto w = cps("w" + std::to_string(i) + " ");
        cp.insert(cp.end(), w.begin(), w.end());
    }
    const auto once = cp.size();
    cp.insert(cp.end(), cp.begin(), cp.begin() + static_cast<std::ptrdiff_t>(once));
    const std::vector<int64_t> ptr{0, static_cast<int64_t>(once), static_cast<int64_t>(cp.size())};
    engramdb::TokenPass pass;
    REQUIRE(engramdb::tokenize_codepoints(cp.data(), cp.size(), ptr.data(), 2, wc.data(), wc.size(), pass) == 0);
    REQUIRE(pass.codes.size() == 10000);
    CHECK_EQ(pass.first.size(), size_t{5000});
    for (size_t i = 0; i < 5000; ++i) {
        CHECK_EQ(pass.codes[i], static_cast<int64_t>(i));
        CHECK_EQ(pass.codes[5000 + i], static_cast<int64_t>(i));
    }
}

TEST(tokenizer_inputs_out_of_range_are_errors) {
    auto wc = ascii_word_chars(128);
    const auto cp = cps("don't stop");
    engramdb::TokenPass pass;
    const std::vector<int64_t> good{0, 5, static_cast<int64_t>(cp.size())};
    CHECK_EQ(engramdb::tokenize_codepoints(cp.data(), cp.size(), good.data(), 2, wc.data(), wc.size(), pass), 0);
    for (const std::vector<int64_t>& bad : {std::vector<int64_t>{1, 10}, {0, 11}, {0, 6, 5}, {0, -1}}) {
        Scope s("offsets", bad[1]);
        CHECK_EQ(engramdb::tokenize_codepoints(cp.data(), cp.size(), bad.data(), bad.size() - 1, wc.data(), wc.size(),
                                               pass), 1);
    }
    CHECK_EQ(engramdb::tokenize_codepoints(cp.data(), cp.size(), good.data(), 2, wc.data(), 100, pass), 2);  // 't' past it
    wc['o'] = 2;  // not classified
    CHECK_EQ(engramdb::tokenize_codepoints(cp.data(), cp.size(), good.data(), 2, wc.data(), wc.size(), pass), 2);
}

namespace {

uint64_t splitmix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

struct Table {
    std::vector<int64_t> start, len;
    std::vector<uint64_t> hash;
    std::vector<int32_t> fidx;
    std::vector<float> fval;
};

Table random_table(size_t words, size_t dim) {
    Table t;
    for (size_t w = 0; w < words; ++w) {
        t.start.push_back(static_cast<int64_t>(t.fidx.size()));
        const auto n = harness::randint(0, 12);
        for (int64_t f = 0; f < n; ++f) {
            t.fidx.push_back(static_cast<int32_t>(harness::randint(0, static_cast<int64_t>(dim) - 1)));
            t.fval.push_back(harness::uniform(-1.f, 1.f));
        }
        t.len.push_back(n);
        t.hash.push_back(harness::rng()());
    }
    return t;
}

}  // namespace

TEST(hash_sums_match_the_formula_feature_by_feature) {
    const size_t dim = 37;
    std::vector<double> log_tf(64);
    for (size_t k = 1; k < log_tf.size(); ++k) log_tf[k] = 1.0 + std::log(static_cast<double>(k));
    for (int trial = 0; trial < 100; ++trial) {
        Scope s("trial", trial);
        // every fourth: a table far larger than the batch (slots counted by a sort, not a counter per slot)
        const size_t words = trial % 4 == 0 ? 20000 : 20;
        const Table t = random_table(words, dim);
        const auto n = static_cast<size_t>(harness::randint(0, 5));
        std::vector<int64_t> counts(n), slots;
        for (size_t r = 0; r < n; ++r) {
            counts[r] = harness::randint(0, 40);
            for (int64_t j = 0; j < counts[r]; ++j) slots.push_back(harness::randint(0, 3 + trial % 17));  // repeats
        }
        std::vector<double> got(n * dim, -1.0);
        REQUIRE(engramdb::hash_feature_sums(counts.data(), n, slots.data(), slots.size(), t.start.data(), t.len.data(),
                                            t.hash.data(), words, t.fidx.data(), t.fval.data(), t.fidx.size(),
                                            log_tf.data(), log_tf.size(), 0.5, dim, got.data()) == 0);
        std::vector<float> unit(n * dim, -1.f);
        REQUIRE(engramdb::hash_feature_sums(counts.data(), n, slots.data(), slots.size(), t.start.data(), t.len.data(),
                                            t.hash.data(), words, t.fidx.data(), t.fval.data(), t.fidx.size(),
                                            log_tf.data(), log_tf.size(), 0.5, dim, nullptr, unit.data()) == 0);
        for (size_t r = 0; r < n; ++r) {  // the sums over their norm (summed here one by one: within an ulp)
            double sq = 0;
            for (size_t b = 0; b < dim; ++b) sq += got[r * dim + b] * got[r * dim + b];
            const double norm = std::sqrt(sq);
            for (size_t b = 0; b < dim; ++b)
                CHECK_NEAR(unit[r * dim + b], norm > 0 ? got[r * dim + b] / norm : 0.0, 1e-7);
        }
        size_t at = 0;
        for (size_t r = 0; r < n; ++r) {
            std::vector<double> want(dim, 0.0);
            std::map<int64_t, size_t> tf;
            std::map<uint64_t, size_t> btf;
            const auto cnt = static_cast<size_t>(counts[r]);
            for (size_t j = 0; j < cnt; ++j) ++tf[slots[at + j]];
            for (size_t j = 0; j + 1 < cnt; ++j) {
                const uint64_t h = splitmix(t.hash[static_cast<size_t>(slots[at + j])] * 0x9E3779B97F4A7C15ULL +
                                            t.hash[static_cast<size_t>(slots[at + j + 1])]);
                ++btf[((h >> 63) << 32) | (h & 0xFFFFFFFFULL)];
            }
            for (const auto& [s_, k] : tf)
                for (int64_t f = t.start[static_cast<size_t>(s_)]; f < t.start[static_cast<size_t>(s_)] + t.len[static_cast<size_t>(s_)]; ++f)
                    want[static_cast<size_t>(t.fidx[static_cast<size_t>(f)])] +=
                        std::nearbyint(static_cast<double>(t.fval[static_cast<size_t>(f)]) * log_tf[k] * 16777216.0);
            for (const auto& [code, k] : btf)
                want[(code & 0xFFFFFFFFULL) % dim] +=
                    std::nearbyint(((code >> 32) ? -0.5 : 0.5) * log_tf[k] * 16777216.0);
            for (size_t b = 0; b < dim; ++b) CHECK_EQ(got[r * dim + b], want[b]);  // whole numbers: exact
            at += cnt;
        }
    }
}

TEST(hash_sum_inputs_out_of_range_are_errors) {
    const size_t dim = 8;
    Table t = random_table(4, dim);
    t.len[0] = 2;  // slot 0 owns two features whatever the draw
    t.fidx.insert(t.fidx.begin(), {1, 2});
    t.fval.insert(t.fval.begin(), {0.5f, -0.5f});
    for (size_t w = 1; w < 4; ++w) t.start[w] += 2;
    t.start[0] = 0;
    std::vector<double> log_tf{1.0, 1.0, 1.0 + std::log(2.0), 1.0 + std::log(3.0)};
    std::vector<double> out(2 * dim);
    auto run = [&](std::vector<int64_t> counts, std::vector<int64_t> slots, size_t n_log = 4) {
        return engramdb::hash_feature_sums(counts.data(), counts.size(), slots.data(), slots.size(), t.start.data(),
                                           t.len.data(), t.hash.data(), 4, t.fidx.data(), t.fval.data(), t.fidx.size(),
                                           log_tf.data(), n_log, 0.5, dim, out.data());
    };
    CHECK_EQ(run({2, 1}, {0, 1, 2}), 0);
    CHECK_EQ(run({2, 2}, {0, 1, 2}), 1);   // counts past the slots
    CHECK_EQ(run({-1, 4}, {0, 1, 2}), 1);  // a negative count
    CHECK_EQ(run({1, 1}, {0, 1, 2}), 1);   // slots left over
    CHECK_EQ(run({2, 1}, {0, 4, 2}), 2);   // a slot past the table
    CHECK_EQ(run({2, 1}, {0, -1, 2}), 2);
    CHECK_EQ(run({3, 0}, {0, 0, 0}), 0);   // tf 3 reads log_tf[3]
    CHECK_EQ(run({3, 0}, {0, 0, 0}, 3), 5);
    t.start[0] = static_cast<int64_t>(t.fidx.size()) - 1;  // runs one past fidx
    CHECK_EQ(run({1, 0}, {0}), 3);
    t.start[0] = -1;
    CHECK_EQ(run({1, 0}, {0}), 3);
    t.start[0] = 0;
    t.len[0] = std::numeric_limits<int64_t>::max();
    CHECK_EQ(run({1, 0}, {0}), 3);
    t.len[0] = 2;
    t.fidx[1] = static_cast<int32_t>(dim);  // a bucket past dim
    CHECK_EQ(run({1, 0}, {0}), 4);
    t.fidx[1] = -3;
    CHECK_EQ(run({1, 0}, {0}), 4);
}

TEST(word_features_hash_each_words_marked_ngrams) {
    // "ab" and a word cut at max_chars 4 ("<abcd", no end marker); then the formula written out here
    const auto cp = cps("ababcdef");
    const std::vector<int64_t> ptr{0, 2, 8};
    const std::vector<uint64_t> wh{0x8000000000000007ULL, 12};
    std::vector<int64_t> owner, bucket;
    std::vector<double> value;
    const size_t dim = 1000;
    REQUIRE(engramdb::word_features(cp.data(), cp.size(), ptr.data(), 2, wh.data(), dim, 0.5, 2.0, 4, owner, bucket,
                                    value) == 0);
    const std::vector<std::vector<uint32_t>> marked{cps("<ab>"), cps("<abcd")};
    std::vector<int64_t> want_owner, want_bucket;
    std::vector<double> want_value;
    for (size_t w = 0; w < 2; ++w) {
        const size_t len = marked[w].size();
        const size_t m = (len - 2) + (len - 3) + (len >= 5 ? len - 4 : 0);
        want_owner.push_back(static_cast<int64_t>(w));
        want_bucket.push_back(static_cast<int64_t>((wh[w] & 0xFFFFFFFFULL) % dim));
        want_value.push_back((wh[w] >> 63) ? -0.5 : 0.5);
        for (size_t n = 3; n <= 5; ++n)
            for (size_t p = 0; p + n <= len; ++p) {
                uint64_t h = n * 0x9E3779B97F4A7C15ULL;
                for (size_t j = 0; j < n; ++j) h = (h ^ marked[w][p + j]) * 0x100000001B3ULL;
                h = splitmix(h);
                want_owner.push_back(static_cast<int64_t>(w));
                want_bucket.push_back(static_cast<int64_t>((h & 0xFFFFFFFFULL) % dim));
                want_value.push_back(((h >> 63) ? -2.0 : 2.0) / std::sqrt(static_cast<double>(m)));
            }
    }
    CHECK(owner == want_owner);
    CHECK(bucket == want_bucket);
    CHECK(value == want_value);
    CHECK_EQ(engramdb::word_features(cp.data(), cp.size(), std::vector<int64_t>{1, 2}.data(), 1, wh.data(), dim, 1, 1,
                                     4, owner, bucket, value), 1);
    CHECK_EQ(engramdb::word_features(cp.data(), cp.size(), std::vector<int64_t>{0, 9}.data(), 1, wh.data(), dim, 1, 1,
                                     4, owner, bucket, value), 1);
    CHECK_EQ(engramdb::word_features(cp.data(), cp.size(), std::vector<int64_t>{0, 5, 4}.data(), 2, wh.data(), dim, 1,
                                     1, 4, owner, bucket, value), 1);
    CHECK_EQ(engramdb::word_features(cp.data(), cp.size(), ptr.data(), 2, wh.data(), 0, 1, 1, 4, owner, bucket, value), 2);
    CHECK_EQ(engramdb::word_features(cp.data(), cp.size(), ptr.data(), 2, wh.data(), dim, 1, 1, 0, owner, bucket, value), 2);
}

TEST(passages_cut_at_sentence_starts_with_overlap) {
    std::vector<uint8_t> space(34, 0);
    space[' '] = space['\n'] = 1;
    std::vector<uint32_t> cp;
    std::vector<int64_t> ptr{0};
    for (const std::string t : {"a b. c d e f", "x y\nz w v", "p q", ""}) {  // cut with words 3 / 2, overlap 2 / 0
        const auto c = cps(t);
        cp.insert(cp.end(), c.begin(), c.end());
        ptr.push_back(static_cast<int64_t>(cp.size()));
    }
    std::vector<int64_t> span_ptr, spans;
    REQUIRE(engramdb::cut_passages(cp.data(), cp.size(), ptr.data(), 1, space.data(), space.size(), 3, 2, span_ptr,
                                   spans) == 0);
    CHECK(span_ptr == (std::vector<int64_t>{0, 3}));
    CHECK(spans == (std::vector<int64_t>{0, 4, 2, 8, 5, 12}));
    REQUIRE(engramdb::cut_passages(cp.data() + 12, cp.size() - 12, std::vector<int64_t>{0, 9, 12, 12}.data(), 3,
                                   space.data(), space.size(), 2, 0, span_ptr, spans) == 0);
    CHECK(span_ptr == (std::vector<int64_t>{0, 3, 4, 5}));
    CHECK(spans == (std::vector<int64_t>{0, 3, 4, 7, 8, 9, 0, 3, 0, 0}));
}

TEST(passage_inputs_out_of_range_are_errors) {
    std::vector<uint8_t> space(34, 0);
    space[' '] = 1;
    const auto cp = cps("a b c");
    std::vector<int64_t> span_ptr, spans;
    auto run = [&](std::vector<int64_t> ptr, int64_t words, int64_t overlap, size_t n_space) {
        return engramdb::cut_passages(cp.data(), cp.size(), ptr.data(), ptr.size() - 1, space.data(), n_space, words,
                                      overlap, span_ptr, spans);
    };
    CHECK_EQ(run({0, 5}, 1, 0, space.size()), 0);
    CHECK_EQ(run({1, 5}, 1, 0, space.size()), 1);
    CHECK_EQ(run({0, 6}, 1, 0, space.size()), 1);
    CHECK_EQ(run({0, 3, 2}, 1, 0, space.size()), 1);
    CHECK_EQ(run({0, 5}, 0, 0, space.size()), 2);
    CHECK_EQ(run({0, 5}, 1, -1, space.size()), 2);
    CHECK_EQ(run({0, 5}, 1, 0, 0), 3);
    CHECK_EQ(run({0, 5}, 1, 0, 1), 0);  // one entry: every code point is what it says (here: not a space)
    CHECK(spans == (std::vector<int64_t>{0, 5}));
}

TEST(blake2b_words_match_hashlib_and_refuse_bad_input) {
    // hashlib.blake2b(word.encode("utf-8"), digest_size=8, person=...) read little-endian, for the empty
    // word, a short one, a non-ASCII one (U+00EF: two UTF-8 bytes) and one of 200 bytes (two blocks)
    std::vector<uint32_t> cp = cps("abcna");
    cp.push_back(0xEF);
    for (const uint32_t c : cps("ve")) cp.push_back(c);
    for (int i = 0; i < 200; ++i) cp.push_back('x');
    const std::vector<int64_t> ptr{0, 0, 3, 8, 208};
    uint8_t word[16] = {}, term[16] = {}, none[16] = {};
    const std::string w = "engramdb.word", t = "engramdb.term";
    std::copy(w.begin(), w.end(), word);
    std::copy(t.begin(), t.end(), term);
    std::vector<uint64_t> out(4, 0);
    REQUIRE(engramdb::blake2b_words(cp.data(), cp.size(), ptr.data(), 2, word, out.data()) == 0);
    CHECK_EQ(out[0], 0x40c9537a94c59c90ULL);
    CHECK_EQ(out[1], 0x8bc336a4ddc2feffULL);
    REQUIRE(engramdb::blake2b_words(cp.data(), cp.size(), ptr.data() + 2, 1, term, out.data()) == 1);  // not from 0
    const std::vector<int64_t> one{0, 5};
    REQUIRE(engramdb::blake2b_words(cp.data() + 3, cp.size() - 3, one.data(), 1, term, out.data()) == 0);
    CHECK_EQ(out[0], 0x7bfedb15b2346c2dULL);
    const std::vector<int64_t> big{0, 200};
    REQUIRE(engramdb::blake2b_words(cp.data() + 8, cp.size() - 8, big.data(), 1, none, out.data()) == 0);
    CHECK_EQ(out[0], 0x8da1761b0e4c3056ULL);
    CHECK_EQ(engramdb::blake2b_words(cp.data(), cp.size(), std::vector<int64_t>{0, 209}.data(), 1, word, out.data()), 1);
    CHECK_EQ(engramdb::blake2b_words(cp.data(), cp.size(), std::vector<int64_t>{0, 5, 4}.data(), 2, word, out.data()), 1);
    for (const uint32_t bad : {0xD800u, 0xDFFFu, 0x110000u}) {
        const std::vector<uint32_t> b{'a', bad};
        CHECK_EQ(engramdb::blake2b_words(b.data(), b.size(), std::vector<int64_t>{0, 2}.data(), 1, word, out.data()), 2);
    }
}

HARNESS_MAIN
