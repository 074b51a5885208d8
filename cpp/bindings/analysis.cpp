// Bindings for the batch analysis passes (engramdb/analysis.h): the tokens of a batch of texts and
// the hashing space's feature sums. engramdb.kernels.analysis checks every argument first; the
// checks here (ranks, lengths) and the core's (values) are the last line of defence.
#include "engramdb/analysis.h"

#include <limits>
#include <string>

#include <pybind11/typing.h>

#include "util.h"

namespace engramdb::bind {

namespace {

template <typename T>
carray<T> to_array(const std::vector<T>& v) {
    carray<T> a(static_cast<py::ssize_t>(v.size()));
    if (!v.empty()) std::copy(v.begin(), v.end(), a.mutable_data());
    return a;
}

const char* const kTokenErrors[] = {"", "text_ptr must start at 0, never decrease and end within codepoints",
                                    "a code point is not classified by word_char (past its end, or neither 0 nor 1)"};

std::tuple<carray<int64_t>, carray<int64_t>, carray<int64_t>, carray<int64_t>, py::typing::List<py::str>,
           carray<int64_t>>
tokenize_py(
    const carray<uint32_t>& cp, const carray<int64_t>& text_ptr, const carray<uint8_t>& word_char) {
    require_rank(cp, 1, "codepoints");
    require_rank(text_ptr, 1, "text_ptr");
    require_rank(word_char, 1, "word_char");
    if (text_ptr.shape(0) < 1) throw py::value_error("text_ptr needs at least one entry");
    TokenPass pass;
    int code;
    {
        py::gil_scoped_release release;
        code = tokenize_codepoints(cp.data(), uz(cp.shape(0)), text_ptr.data(), uz(text_ptr.shape(0) - 1),
                                   word_char.data(), uz(word_char.shape(0)), pass);
    }
    if (code) throw py::value_error(kTokenErrors[code]);
    // each distinct token as a str, made here from its code points (a slice per token in Python
    // cost more than the scan)
    py::typing::List<py::str> words(pass.first.size());  // typed: the stub says list[str]
    for (size_t w = 0; w < pass.first.size(); ++w) {
        PyObject* s = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, cp.data() + pass.first[w],
                                                static_cast<py::ssize_t>(pass.length[w]));
        if (s == nullptr) throw py::error_already_set();
        PyList_SET_ITEM(words.ptr(), static_cast<py::ssize_t>(w), s);
    }
    return {to_array(pass.counts), to_array(pass.codes), to_array(pass.first), to_array(pass.length), words,
            to_array(pass.starts)};
}

const char* const kSumErrors[] = {"", "counts must be >= 0 and sum to len(slots)", "a slot is out of the table's range",
                                  "a table entry's features are out of range of fidx",
                                  "a feature bucket is negative or >= dim", "a count is past log_tf's end"};

// What both entry points check, then the core's pass into `out` (float64 sums) or `unit` (float32
// unit rows).
void hash_pass(const carray<int64_t>& counts, const carray<int64_t>& slots, const carray<int64_t>& tab_start,
               const carray<int64_t>& tab_len, const carray<uint64_t>& hashes, const carray<int32_t>& fidx,
               const carray<float>& fval, const carray<double>& log_tf, double bigram_weight, py::ssize_t dim,
               double* out, float* unit) {
    int code;
    {
        py::gil_scoped_release release;
        code = hash_feature_sums(counts.data(), uz(counts.shape(0)), slots.data(), uz(slots.shape(0)), tab_start.data(),
                                 tab_len.data(), hashes.data(), uz(tab_start.shape(0)), fidx.data(), fval.data(),
                                 uz(fidx.shape(0)), log_tf.data(), uz(log_tf.shape(0)), bigram_weight, uz(dim), out,
                                 unit);
    }
    if (code) throw py::value_error(kSumErrors[code]);
}

void check_hash_args(const carray<int64_t>& counts, const carray<int64_t>& slots, const carray<int64_t>& tab_start,
                     const carray<int64_t>& tab_len, const carray<uint64_t>& hashes, const carray<int32_t>& fidx,
                     const carray<float>& fval, const carray<double>& log_tf, py::ssize_t dim) {
    require_rank(counts, 1, "counts");
    require_rank(slots, 1, "slots");
    require_rank(tab_start, 1, "tab_start");
    require_rank(tab_len, 1, "tab_len");
    require_rank(hashes, 1, "hashes");
    require_rank(fidx, 1, "fidx");
    require_rank(fval, 1, "fval");
    require_rank(log_tf, 1, "log_tf");
    require_len(tab_len.shape(0), tab_start.shape(0), "tab_len");
    require_len(hashes.shape(0), tab_start.shape(0), "hashes");
    require_len(fval.shape(0), fidx.shape(0), "fval");
    const py::ssize_t n = counts.shape(0);
    if (dim < 1) throw py::value_error("dim must be >= 1");
    if (n > 0 && dim > std::numeric_limits<py::ssize_t>::max() / 8 / n) throw py::value_error("n * dim is too large");
}

carray<double> hash_sums_py(const carray<int64_t>& counts, const carray<int64_t>& slots,
                            const carray<int64_t>& tab_start, const carray<int64_t>& tab_len,
                            const carray<uint64_t>& hashes, const carray<int32_t>& fidx, const carray<float>& fval,
                            const carray<double>& log_tf, double bigram_weight, py::ssize_t dim) {
    check_hash_args(counts, slots, tab_start, tab_len, hashes, fidx, fval, log_tf, dim);
    carray<double> out({counts.shape(0), dim});
    hash_pass(counts, slots, tab_start, tab_len, hashes, fidx, fval, log_tf, bigram_weight, dim, out.mutable_data(),
              nullptr);
    return out;
}

carray<float> hash_embed_py(const carray<int64_t>& counts, const carray<int64_t>& slots,
                            const carray<int64_t>& tab_start, const carray<int64_t>& tab_len,
                            const carray<uint64_t>& hashes, const carray<int32_t>& fidx, const carray<float>& fval,
                            const carray<double>& log_tf, double bigram_weight, py::ssize_t dim) {
    check_hash_args(counts, slots, tab_start, tab_len, hashes, fidx, fval, log_tf, dim);
    carray<float> out({counts.shape(0), dim});
    hash_pass(counts, slots, tab_start, tab_len, hashes, fidx, fval, log_tf, bigram_weight, dim, nullptr,
              out.mutable_data());
    return out;
}

const char* const kFeatureErrors[] = {"", "word_ptr must start at 0, never decrease and end within codepoints",
                                      "dim and max_chars must be >= 1"};

// the arguments every per-word pass takes, checked alike (one word per word_ptr step, its hash beside it)
void check_word_args(const carray<uint32_t>& cp, const carray<int64_t>& word_ptr, const carray<uint64_t>& word_hashes,
                     py::ssize_t dim) {
    require_rank(cp, 1, "codepoints");
    require_rank(word_ptr, 1, "word_ptr");
    require_rank(word_hashes, 1, "word_hashes");
    if (word_ptr.shape(0) < 1) throw py::value_error("word_ptr needs at least one entry");
    require_len(word_hashes.shape(0), word_ptr.shape(0) - 1, "word_hashes");
    if (dim < 1) throw py::value_error("dim must be >= 1");
}

std::tuple<carray<int64_t>, carray<int64_t>, carray<double>> word_features_py(
    const carray<uint32_t>& cp, const carray<int64_t>& word_ptr, const carray<uint64_t>& word_hashes, py::ssize_t dim,
    double w_word, double w_char, int64_t max_chars) {
    check_word_args(cp, word_ptr, word_hashes, dim);
    std::vector<int64_t> owner, bucket;
    std::vector<double> value;
    int code;
    {
        py::gil_scoped_release release;
        code = word_features(cp.data(), uz(cp.shape(0)), word_ptr.data(), uz(word_ptr.shape(0) - 1), word_hashes.data(),
                             uz(dim), w_word, w_char, max_chars, owner, bucket, value);
    }
    if (code) throw py::value_error(kFeatureErrors[code]);
    return {to_array(owner), to_array(bucket), to_array(value)};
}

std::tuple<carray<int64_t>, carray<int32_t>, carray<float>> word_rows_py(
    const carray<uint32_t>& cp, const carray<int64_t>& word_ptr, const carray<uint64_t>& word_hashes, py::ssize_t dim,
    double w_word, double w_char, int64_t max_chars) {
    check_word_args(cp, word_ptr, word_hashes, dim);
    if (dim > std::numeric_limits<int32_t>::max()) throw py::value_error("dim must be at most 2**31 - 1");
    std::vector<int64_t> lens;
    std::vector<int32_t> bucket;
    std::vector<float> value;
    int code;
    {
        py::gil_scoped_release release;
        code = word_rows(cp.data(), uz(cp.shape(0)), word_ptr.data(), uz(word_ptr.shape(0) - 1), word_hashes.data(),
                         uz(dim), w_word, w_char, max_chars, lens, bucket, value);
    }
    if (code) throw py::value_error(kFeatureErrors[code]);
    return {to_array(lens), to_array(bucket), to_array(value)};
}

carray<float> word_vectors_py(const carray<uint32_t>& cp, const carray<int64_t>& word_ptr,
                              const carray<uint64_t>& word_hashes, py::ssize_t dim, double w_word, double w_char,
                              int64_t max_chars) {
    check_word_args(cp, word_ptr, word_hashes, dim);
    const py::ssize_t n = word_ptr.shape(0) - 1;
    if (n > 0 && dim > std::numeric_limits<py::ssize_t>::max() / 8 / n) throw py::value_error("n * dim is too large");
    carray<float> out({n, dim});
    int code;
    {
        py::gil_scoped_release release;
        code = word_vectors(cp.data(), uz(cp.shape(0)), word_ptr.data(), uz(n), word_hashes.data(), uz(dim), w_word,
                            w_char, max_chars, out.mutable_data());
    }
    if (code) throw py::value_error(kFeatureErrors[code]);
    return out;
}

const char* const kCutErrors[] = {"", "text_ptr must start at 0, never decrease and end within codepoints",
                                  "words must be >= 1 and overlap >= 0", "space needs at least one entry"};

std::tuple<carray<int64_t>, carray<int64_t>> cut_passages_py(const carray<uint32_t>& cp, const carray<int64_t>& text_ptr,
                                                             const carray<uint8_t>& space, int64_t words,
                                                             int64_t overlap) {
    require_rank(cp, 1, "codepoints");
    require_rank(text_ptr, 1, "text_ptr");
    require_rank(space, 1, "space");
    if (text_ptr.shape(0) < 1) throw py::value_error("text_ptr needs at least one entry");
    std::vector<int64_t> ptr, spans;
    int code;
    {
        py::gil_scoped_release release;
        code = cut_passages(cp.data(), uz(cp.shape(0)), text_ptr.data(), uz(text_ptr.shape(0) - 1), space.data(),
                            uz(space.shape(0)), words, overlap, ptr, spans);
    }
    if (code) throw py::value_error(kCutErrors[code]);
    carray<int64_t> out({static_cast<py::ssize_t>(spans.size() / 2), py::ssize_t{2}});
    if (!spans.empty()) std::copy(spans.begin(), spans.end(), out.mutable_data());
    return {to_array(ptr), out};
}

const char* const kBlakeErrors[] = {"", "word_ptr must start at 0, never decrease and end within codepoints",
                                    "a code point UTF-8 cannot encode (a surrogate, or past U+10FFFF)"};

carray<uint64_t> blake2b_words_py(const carray<uint32_t>& cp, const carray<int64_t>& word_ptr, const py::bytes& person) {
    require_rank(cp, 1, "codepoints");
    require_rank(word_ptr, 1, "word_ptr");
    if (word_ptr.shape(0) < 1) throw py::value_error("word_ptr needs at least one entry");
    const std::string p = person;
    if (p.size() > 16) throw py::value_error("person must be at most 16 bytes");
    uint8_t padded[16] = {};
    std::copy(p.begin(), p.end(), padded);
    carray<uint64_t> out(word_ptr.shape(0) - 1);
    int code;
    {
        py::gil_scoped_release release;
        code = blake2b_words(cp.data(), uz(cp.shape(0)), word_ptr.data(), uz(word_ptr.shape(0) - 1), padded,
                             out.mutable_data());
    }
    if (code) throw py::value_error(kBlakeErrors[code]);
    return out;
}

}  // namespace

void bind_analysis(py::module_& m) {
    m.def("blake2b_words", &blake2b_words_py, py::arg("codepoints"), py::arg("word_ptr"), py::arg("person"),
          "64-bit BLAKE2b (personalised) of each word's UTF-8, little-endian, uint64.");
    m.def("tokenize_codepoints", &tokenize_py, py::arg("codepoints"), py::arg("text_ptr"), py::arg("word_char"),
          "Tokens of texts given as code points: (counts, codes, first, length, words, starts): per text its token "
          "count, per token its distinct token and where it starts in its text, per distinct token where it first "
          "appears, its length and its str.");
    m.def("hash_feature_sums", &hash_sums_py, py::arg("counts"), py::arg("slots"), py::arg("tab_start"),
          py::arg("tab_len"), py::arg("hashes"), py::arg("fidx"), py::arg("fval"), py::arg("log_tf"),
          py::arg("bigram_weight"), py::arg("dim"),
          "The hashing space's unnormalised fixed-point sums, (n, dim) float64.");
    m.def("word_features", &word_features_py, py::arg("codepoints"), py::arg("word_ptr"), py::arg("word_hashes"),
          py::arg("dim"), py::arg("w_word"), py::arg("w_char"), py::arg("max_chars"),
          "Signed hashed features of words on their own: (owner, bucket, value).");
    m.def("word_rows", &word_rows_py, py::arg("codepoints"), py::arg("word_ptr"), py::arg("word_hashes"), py::arg("dim"),
          py::arg("w_word"), py::arg("w_char"), py::arg("max_chars"),
          "Word features as the hashing space's table keeps them: (lens int64, bucket int32, value float32).");
    m.def("word_vectors", &word_vectors_py, py::arg("codepoints"), py::arg("word_ptr"), py::arg("word_hashes"),
          py::arg("dim"), py::arg("w_word"), py::arg("w_char"), py::arg("max_chars"),
          "Each word's features summed and L2-normalised as numpy does it: (n_words, dim) float32.");
    m.def("cut_passages", &cut_passages_py, py::arg("codepoints"), py::arg("text_ptr"), py::arg("space"),
          py::arg("words"), py::arg("overlap"),
          "Passages of texts given as code points: (span_ptr, spans (k, 2) start/end per passage).");
    m.def("hash_embed", &hash_embed_py, py::arg("counts"), py::arg("slots"), py::arg("tab_start"), py::arg("tab_len"),
          py::arg("hashes"), py::arg("fidx"), py::arg("fval"), py::arg("log_tf"), py::arg("bigram_weight"),
          py::arg("dim"), "The hashing space's vectors: the sums L2-normalised as numpy does it, (n, dim) float32.");
}

}  // namespace engramdb::bind
