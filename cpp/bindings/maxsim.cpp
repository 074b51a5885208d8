// Bindings for N5 (MaxSim late interaction).
#include "engramdb/maxsim.h"

#include "util.h"

namespace engramdb::bind {

namespace {

std::tuple<carray<float>, int64_t> maxsim_py(const carray<float>& Q, const carray<float>& tokens, const carray<int64_t>& offsets,
                    const std::optional<carray<int64_t>>& docs, py::ssize_t threads) {
    require_rank(Q, 2, "query_tokens");
    require_rank(tokens, 2, "doc_tokens");
    require_rank(offsets, 1, "offsets");
    const py::ssize_t m = Q.shape(0), d = Q.shape(1), T = tokens.shape(0);
    require_len(tokens.shape(1), d, "doc_tokens columns");
    if (offsets.shape(0) < 1) throw py::value_error("offsets must have at least one entry");
    const py::ssize_t n_docs = offsets.shape(0) - 1;
    const int64_t* op = offsets.data();
    if (op[0] != 0 || op[n_docs] != T) throw py::value_error("offsets must start at 0 and end at len(doc_tokens)");
    for (py::ssize_t i = 0; i < n_docs; ++i)
        if (op[i + 1] < op[i]) throw py::value_error("offsets must be non-decreasing (doc " + std::to_string(i) + ")");
    const int64_t* dp = nullptr;
    py::ssize_t n_out = n_docs;
    if (docs.has_value()) {
        require_rank(*docs, 1, "docs");
        dp = docs->data();
        n_out = docs->shape(0);
        for (py::ssize_t i = 0; i < n_out; ++i)
            if (dp[i] < 0 || dp[i] >= n_docs) throw py::index_error("docs[" + std::to_string(i) + "] out of range");
    }
    carray<float> out({n_out});
    const float *qp = Q.data(), *tp = tokens.data();
    float* outp = out.mutable_data();
    int64_t bad;
    {
        py::gil_scoped_release release;
        bad = maxsim(qp, uz(m), tp, uz(d), op, uz(n_docs), dp, uz(n_out), uz(threads), outp);
    }
    return {out, bad};
}

}  // namespace

void bind_maxsim(py::module_& m) {
    m.def("maxsim", &maxsim_py, py::arg("query_tokens").noconvert(), py::arg("doc_tokens").noconvert(),
          py::arg("offsets").noconvert(), py::arg("docs").noconvert() = py::none(), py::arg("threads") = 0,
          "MaxSim scores of ragged documents (or the shortlist `docs`). Returns (scores, bad_doc).");
}

}  // namespace engramdb::bind
