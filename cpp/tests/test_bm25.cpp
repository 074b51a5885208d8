// N3 BM25 (bm25.h) against the formula in double, on the heap path (k <= 256) and the selection
// path, and the postings a file could hand it: garbage offsets, doc numbers, rows and weights must
// come back as an error code (the first bad query), never as a read outside the arrays; and an
// error must leave the thread's accumulator clean for the next call.
#include <algorithm>
#include <limits>

#include "engramdb/bm25.h"
#include "harness.h"

using harness::Scope;

namespace {

struct Index {
    std::vector<int64_t> indptr{0};
    std::vector<int32_t> docs;
    std::vector<float> tf, norm;
    size_t n_docs = 0;
};

Index random_index(size_t n_rows, size_t n_docs, size_t max_df) {
    Index ix;
    ix.n_docs = n_docs;
    for (size_t r = 0; r < n_rows; ++r) {
        std::vector<int32_t> ds;
        const int64_t df = harness::randint(0, static_cast<int64_t>(max_df));
        for (int64_t i = 0; i < df; ++i) ds.push_back(static_cast<int32_t>(harness::randint(0, static_cast<int64_t>(n_docs) - 1)));
        std::sort(ds.begin(), ds.end());
        ds.erase(std::unique(ds.begin(), ds.end()), ds.end());
        for (int32_t d : ds) {
            ix.docs.push_back(d);
            ix.tf.push_back(static_cast<float>(harness::randint(1, 5)));
        }
        ix.indptr.push_back(static_cast<int64_t>(ix.docs.size()));
    }
    ix.norm = harness::randvec(n_docs, 0.3f, 2.f);
    return ix;
}

struct Queries {
    std::vector<int64_t> indptr{0}, rows;
    std::vector<float> w;
};

Queries random_queries(size_t nq, size_t n_rows, size_t max_terms) {
    Queries q;
    for (size_t i = 0; i < nq; ++i) {
        const int64_t m = harness::randint(0, static_cast<int64_t>(max_terms));
        for (int64_t j = 0; j < m; ++j) {
            const int64_t roll = harness::randint(0, 9);
            q.rows.push_back(roll == 0 ? -1 : harness::randint(0, static_cast<int64_t>(n_rows) - 1));
            q.w.push_back(roll == 1 ? 0.f : harness::uniform(0.1f, 3.f));
        }
        q.indptr.push_back(static_cast<int64_t>(q.rows.size()));
    }
    return q;
}

// The first (query, code) the kernel must report, found the way its contract states: per query in
// order, per term: a bad weight (4); a row out of range (1); bad offsets (2); a doc out of range (3).
std::pair<int64_t, int> ref_error(const Queries& q, const Index& ix, size_t n_rows) {
    for (size_t i = 0; i + 1 < q.indptr.size(); ++i)
        for (int64_t j = q.indptr[i]; j < q.indptr[i + 1]; ++j) {
            const int64_t r = q.rows[static_cast<size_t>(j)];
            const float w = q.w[static_cast<size_t>(j)];
            if (!(w >= 0.f) || !std::isfinite(w)) return {static_cast<int64_t>(i), 4};
            if (r < 0 || w == 0.f) continue;
            if (static_cast<uint64_t>(r) >= n_rows) return {static_cast<int64_t>(i), 1};
            const int64_t a = ix.indptr[static_cast<size_t>(r)], b = ix.indptr[static_cast<size_t>(r) + 1];
            if (a < 0 || b < a || static_cast<uint64_t>(b) > ix.docs.size()) return {static_cast<int64_t>(i), 2};
            for (int64_t p = a; p < b; ++p)
                if (ix.docs[static_cast<size_t>(p)] < 0 || static_cast<size_t>(ix.docs[static_cast<size_t>(p)]) >= ix.n_docs)
                    return {static_cast<int64_t>(i), 3};
        }
    return {-1, 0};
}

// Every doc's score for query i in double (0: the query touches it nowhere).
std::vector<double> ref_scores(const Queries& q, size_t i, const Index& ix, float k1, std::vector<char>* touched) {
    std::vector<double> s(ix.n_docs, 0.0);
    touched->assign(ix.n_docs, 0);
    for (int64_t j = q.indptr[i]; j < q.indptr[i + 1]; ++j) {
        const int64_t r = q.rows[static_cast<size_t>(j)];
        const double w = q.w[static_cast<size_t>(j)];
        if (r < 0 || w == 0) continue;
        for (int64_t p = ix.indptr[static_cast<size_t>(r)]; p < ix.indptr[static_cast<size_t>(r) + 1]; ++p) {
            const auto d = static_cast<size_t>(ix.docs[static_cast<size_t>(p)]);
            const double f = ix.tf[static_cast<size_t>(p)];
            s[d] += w * f * (k1 + 1.0) / (f + ix.norm[d]);
            (*touched)[d] = 1;
        }
    }
    return s;
}

// Runs the kernel on valid input and checks every query against the double reference.
void check_scores(const Index& ix, const Queries& q, size_t k, size_t threads, const std::vector<uint8_t>& mask,
                  size_t sorted_k) {
    const size_t n_rows = ix.indptr.size() - 1, nq = q.indptr.size() - 1;
    const float k1 = 1.2f;
    std::vector<int64_t> idx(nq * k, 9);
    std::vector<float> sc(nq * k);
    const engramdb::Bm25Error err = engramdb::bm25_topk(
        q.indptr.data(), nq, q.rows.data(), q.w.data(), ix.indptr.data(), n_rows, ix.docs.data(), ix.tf.data(),
        ix.docs.size(), ix.norm.data(), ix.n_docs, k1, mask.empty() ? nullptr : mask.data(), k, threads, idx.data(),
        sc.data(), sorted_k);
    REQUIRE(err.query == -1 && err.code == 0);
    std::vector<char> touched;
    for (size_t i = 0; i < nq; ++i) {
        Scope s("query", i);
        const std::vector<double> want = ref_scores(q, i, ix, k1, &touched);
        std::vector<std::pair<int64_t, double>> cand;
        for (size_t d = 0; d < ix.n_docs; ++d)
            if (touched[d] && want[d] > 0 && (mask.empty() || mask[d])) cand.push_back({static_cast<int64_t>(d), want[d]});
        const int64_t* gi = idx.data() + i * k;
        const float* gs = sc.data() + i * k;
        const double tol = 1e-5 * (1 + (want.empty() ? 0 : *std::max_element(want.begin(), want.end())));
        const size_t ordered = std::min({sorted_k, k, cand.size()});
        if (ordered == std::min(k, cand.size())) {
            CHECK_TOPK(gi, gs, k, cand, tol);
            continue;
        }
        // past sorted_k: the kept set is still the best one, each worse than every sorted one
        const size_t kept = std::min(k, cand.size());
        for (size_t a = 0; a < ordered; ++a)
            for (size_t b = ordered; b < kept; ++b)
                CHECK(gs[a] > gs[b] || (gs[a] == gs[b] && gi[a] < gi[b]));
        std::vector<std::pair<float, int64_t>> got;
        for (size_t a = 0; a < kept; ++a) got.push_back({gs[a], gi[a]});
        std::sort(got.begin(), got.end(), [](const auto& x, const auto& y) {
            return x.first > y.first || (x.first == y.first && x.second < y.second);
        });
        std::vector<int64_t> sidx;
        std::vector<float> ssc;
        for (const auto& g : got) ssc.push_back(g.first), sidx.push_back(g.second);
        for (size_t a = kept; a < k; ++a) sidx.push_back(gi[a]), ssc.push_back(gs[a]);
        CHECK_TOPK(sidx.data(), ssc.data(), k, cand, tol);
    }
}

}  // namespace

TEST(bm25_matches_float64_on_the_heap_and_selection_paths) {
    for (size_t threads : {1, 3})
        for (bool masked : {false, true})
            for (size_t k : {0, 1, 10, 256, 257, 900, 5000}) {
                Scope s("threads", threads, "masked", masked, "k", k);
                const Index ix = random_index(60, 2000, 300);
                const Queries q = random_queries(7, 60, 6);
                std::vector<uint8_t> mask(masked ? ix.n_docs : 0);
                for (uint8_t& b : mask) b = harness::randint(0, 3) != 0;
                check_scores(ix, q, k, threads, mask, SIZE_MAX);
            }
}

TEST(bm25_sorted_k_orders_only_the_head) {
    for (size_t sorted_k : {0, 1, 50, 299, 300, 10000}) {
        Scope s("sorted_k", sorted_k);
        const Index ix = random_index(40, 3000, 800);
        const Queries q = random_queries(3, 40, 8);
        check_scores(ix, q, 300, 1, {}, sorted_k);
    }
}

TEST(bm25_zero_tf_and_repeated_terms_keep_the_accumulator_clean) {
    // a zero tf leaves a doc's cell at 0 (listed twice); a row named twice adds twice
    Index ix;
    ix.n_docs = 5;
    ix.indptr = {0, 3, 5};
    ix.docs = {0, 2, 4, 2, 3};
    ix.tf = {0.f, 2.f, 1.f, 0.f, 3.f};
    ix.norm = {1.f, 1.f, 1.f, 1.f, 1.f};
    Queries q;
    q.indptr = {0, 3, 4};
    q.rows = {0, 1, 0, 1};
    q.w = {1.f, 1.f, 1.f, 2.f};
    for (int round = 0; round < 3; ++round) check_scores(ix, q, 5, 1, {}, SIZE_MAX);
}

TEST(bm25_reports_each_error_and_stays_clean_after_it) {
    const Index good = random_index(20, 500, 100);
    const Queries q = random_queries(4, 20, 5);
    struct Case {
        const char* what;
        int code;
    };
    for (const Case c : {Case{"row out of range", 1}, Case{"offsets", 2}, Case{"doc out of range", 3},
                         Case{"negative doc", 3}, Case{"weight", 4}, Case{"nan weight", 4}}) {
        Scope s(c.what);
        Index ix = good;
        Queries bad = q;
        // the error sits in query 2's last term, after terms that already wrote to the accumulator
        bad.indptr = {0, 3, 6, 9, 12};
        bad.rows = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
        bad.w.assign(12, 1.f);
        if (c.code == 1) bad.rows[8] = 20;
        if (c.code == 2) ix.indptr[9] = ix.indptr[8] - 1, bad.rows[8] = 8;  // row 8 ends before it starts
        if (c.code == 3 || std::string(c.what) == "negative doc") {
            ix.indptr[9] = ix.indptr[8] + 2, ix.indptr[10] = std::max(ix.indptr[10], ix.indptr[9]);
            for (size_t r = 10; r < ix.indptr.size(); ++r) ix.indptr[r] = std::max(ix.indptr[r], ix.indptr[r - 1]);
            ix.docs[static_cast<size_t>(ix.indptr[8]) + 1] = std::string(c.what) == "negative doc" ? -3 : 500;
        }
        if (c.code == 4) bad.w[8] = std::string(c.what) == "weight" ? -1.f : std::nanf("");
        const auto want = ref_error(bad, ix, 20);
        REQUIRE(want.first == 2 && want.second == c.code);
        for (size_t threads : {1, 2}) {
            std::vector<int64_t> idx(4 * 5);
            std::vector<float> sc(4 * 5);
            const engramdb::Bm25Error err = engramdb::bm25_topk(
                bad.indptr.data(), 4, bad.rows.data(), bad.w.data(), ix.indptr.data(), 20, ix.docs.data(),
                ix.tf.data(), ix.docs.size(), ix.norm.data(), ix.n_docs, 1.2f, nullptr, 5, threads, idx.data(),
                sc.data());
            CHECK_EQ(err.query, int64_t{2});
            CHECK_EQ(err.code, c.code);
        }
        // the same thread, next call: no score left over from the refused query
        check_scores(good, q, 5, 1, {}, SIZE_MAX);
        // and a smaller corpus after a larger one
        check_scores(random_index(10, 7, 5), random_queries(3, 10, 4), 3, 1, {}, SIZE_MAX);
    }
}

TEST(bm25_garbage_postings_give_an_error_or_true_scores_never_a_wild_read) {
    // postings as a damaged file could hold them: offsets, doc numbers, rows and weights drawn
    // from ranges well past the valid ones
    for (int trial = 0; trial < 3000; ++trial) {
        Scope s("trial", trial);
        const size_t n_rows = static_cast<size_t>(harness::randint(1, 8)), n_docs = static_cast<size_t>(harness::randint(1, 12));
        Index ix = random_index(n_rows, n_docs, 6);
        const int what = static_cast<int>(harness::randint(0, 5));
        if (what == 0 || what == 5)
            for (int64_t& p : ix.indptr)
                if (harness::randint(0, 3) == 0) p = harness::randint(-3, static_cast<int64_t>(ix.docs.size()) + 3);
        if (what == 1 || what == 5)
            for (int32_t& d : ix.docs)
                if (harness::randint(0, 3) == 0) d = static_cast<int32_t>(harness::randint(-3, static_cast<int64_t>(n_docs) + 3));
        if (what == 2)
            for (int32_t& d : ix.docs)
                if (harness::randint(0, 5) == 0) d = harness::randint(0, 1) ? std::numeric_limits<int32_t>::min()
                                                                            : std::numeric_limits<int32_t>::max();
        if (what == 3 && !ix.indptr.empty())
            ix.indptr[static_cast<size_t>(harness::randint(0, static_cast<int64_t>(n_rows)))] =
                harness::randint(0, 1) ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
        Queries q = random_queries(3, n_rows, 4);
        if (what == 4)
            for (size_t j = 0; j < q.rows.size(); ++j) {
                if (harness::randint(0, 3) == 0) q.rows[j] = harness::randint(-2, static_cast<int64_t>(n_rows) + 2);
                if (harness::randint(0, 5) == 0) q.w[j] = harness::randint(0, 1) ? -0.5f : std::numeric_limits<float>::infinity();
            }
        const auto want = ref_error(q, ix, n_rows);
        for (size_t k : {3, 300}) {
            std::vector<int64_t> idx(3 * k);
            std::vector<float> sc(3 * k);
            const engramdb::Bm25Error err = engramdb::bm25_topk(
                q.indptr.data(), 3, q.rows.data(), q.w.data(), ix.indptr.data(), n_rows, ix.docs.data(),
                ix.tf.data(), ix.docs.size(), ix.norm.data(), n_docs, 1.2f, nullptr, k, 1, idx.data(), sc.data());
            CHECK_EQ(err.query, want.first);
            CHECK_EQ(err.code, want.second);
        }
        if (want.first < 0) check_scores(ix, q, 4, 1, {}, SIZE_MAX);
    }
}

HARNESS_MAIN
