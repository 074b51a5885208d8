// N3 Jaccard (sparse.h): plain and weighted, through the byte table, the weight table and the
// sorted merge (ids too large for a table), against set arithmetic in double; bad rows named.
#include <algorithm>
#include <limits>
#include <map>

#include "engramdb/sparse.h"
#include "harness.h"

using harness::Scope;

namespace {

struct Csr {
    std::vector<int64_t> indptr{0};
    std::vector<int32_t> ids;
    std::vector<float> w;
};

// n random sorted id-sets drawn from [base, base + span), some empty.
Csr random_rows(size_t n, int32_t base, int32_t span) {
    Csr c;
    for (size_t r = 0; r < n; ++r) {
        std::vector<int32_t> row;
        const int64_t len = harness::randint(0, 2) == 0 ? 0 : harness::randint(1, 12);
        for (int64_t i = 0; i < len; ++i) row.push_back(base + static_cast<int32_t>(harness::randint(0, span - 1)));
        std::sort(row.begin(), row.end());
        row.erase(std::unique(row.begin(), row.end()), row.end());
        for (int32_t id : row) {
            c.ids.push_back(id);
            c.w.push_back(harness::uniform(0.f, 2.f));
        }
        c.indptr.push_back(static_cast<int64_t>(c.ids.size()));
    }
    return c;
}

double ref_jaccard(const std::vector<int32_t>& q, const std::vector<float>* qw, const Csr& c, size_t r, bool weighted) {
    std::map<int32_t, std::pair<double, double>> u;  // id -> (query weight, row weight)
    for (size_t i = 0; i < q.size(); ++i) u[q[i]].first = weighted ? (*qw)[i] : 1.0;
    for (int64_t p = c.indptr[r]; p < c.indptr[r + 1]; ++p)
        u[c.ids[static_cast<size_t>(p)]].second = weighted ? c.w[static_cast<size_t>(p)] : 1.0;
    double mn = 0, mx = 0;
    for (const auto& kv : u) {
        mn += std::min(kv.second.first, kv.second.second);
        mx += std::max(kv.second.first, kv.second.second);
    }
    return mx > 0 ? mn / mx : 0.0;
}

}  // namespace

TEST(jaccard_matches_set_arithmetic_on_every_path) {
    // base 0: the byte or weight table; base 2^22 + 5: ids too large for a table (sorted merge)
    for (int32_t base : {0, (1 << 22) + 5})
        for (bool weighted : {false, true})
            for (size_t qlen : {0, 1, 6, 30})
                for (size_t threads : {1, 3})
                    for (bool masked : {false, true}) {
                        if (threads > 1 && qlen != 6) continue;  // the big corpus once per path
                        Scope s("base", base, "weighted", weighted, "qlen", qlen, "threads", threads, "masked", masked);
                        const size_t n = threads == 1 ? 300 : 40000, k = 9;
                        const Csr c = random_rows(n, base, 40);
                        std::vector<int32_t> q;
                        for (size_t i = 0; i < qlen; ++i) q.push_back(base + static_cast<int32_t>(harness::randint(0, 39)));
                        std::sort(q.begin(), q.end());
                        q.erase(std::unique(q.begin(), q.end()), q.end());
                        const std::vector<float> qw = harness::randvec(q.size(), 0.f, 2.f);
                        std::vector<uint8_t> mask(masked ? n : 0);
                        for (uint8_t& b : mask) b = harness::randint(0, 3) != 0;
                        std::vector<int64_t> idx(k, 3);
                        std::vector<float> sc(k), full(n, std::nanf(""));
                        const engramdb::SparseError err = engramdb::jaccard_topk(
                            q.data(), weighted ? qw.data() : nullptr, q.size(), c.indptr.data(), n, c.ids.data(),
                            weighted ? c.w.data() : nullptr, masked ? mask.data() : nullptr, k, threads, idx.data(),
                            sc.data(), full.data());
                        REQUIRE(err.row == -1);
                        std::vector<std::pair<int64_t, double>> cand;
                        std::vector<std::pair<float, int64_t>> own;
                        for (size_t r = 0; r < n; ++r) {
                            if (masked && !mask[r]) {
                                CHECK_EQ(full[r], -1.f);
                                continue;
                            }
                            const double want = ref_jaccard(q, &qw, c, r, weighted);
                            CHECK_NEAR(full[r], want, 1e-6);
                            cand.push_back({static_cast<int64_t>(r), want});
                            own.push_back({full[r], static_cast<int64_t>(r)});
                        }
                        CHECK_TOPK(idx.data(), sc.data(), k, cand, 1e-6);
                        std::sort(own.begin(), own.end(), [](const auto& a, const auto& b) {
                            return a.first > b.first || (a.first == b.first && a.second < b.second);
                        });
                        for (size_t i = 0; i < std::min(k, own.size()); ++i) CHECK_EQ(idx[i], own[i].second);
                    }
}

TEST(jaccard_names_the_first_bad_row) {
    for (int32_t base : {0, (1 << 22) + 5})
        for (bool weighted : {false, true})
            for (size_t threads : {1, 3}) {
                Scope s("base", base, "weighted", weighted, "threads", threads);
                const size_t n = 40000;
                const std::vector<int32_t> q{base + 1, base + 2};
                const std::vector<float> qw{1.f, 1.f};
                struct Bad {
                    size_t row;
                    std::vector<int32_t> ids;
                    float w;
                    int code;
                };
                const Bad bads[] = {{30000, {base + 3, base + 3}, 1.f, 1},
                                    {25000, {base + 4, base + 2}, 1.f, 1},
                                    {20000, {-7, base + 2}, 1.f, 2},
                                    {35000, {base + 2}, -1.f, 3},
                                    {35000, {base + 2}, std::nanf(""), 3},
                                    {35000, {base + 2}, std::numeric_limits<float>::infinity(), 3}};
                for (const Bad& b : bads) {
                    if (b.code == 3 && !weighted) continue;
                    Scope s2("bad row", b.row, "code", b.code);
                    Csr c;
                    for (size_t r = 0; r < n; ++r) {
                        const std::vector<int32_t> row = r == b.row ? b.ids : std::vector<int32_t>{base + 1};
                        for (int32_t id : row) {
                            c.ids.push_back(id);
                            c.w.push_back(r == b.row ? b.w : 1.f);
                        }
                        c.indptr.push_back(static_cast<int64_t>(c.ids.size()));
                    }
                    std::vector<int64_t> idx(3);
                    std::vector<float> sc(3);
                    const engramdb::SparseError err = engramdb::jaccard_topk(
                        q.data(), weighted ? qw.data() : nullptr, q.size(), c.indptr.data(), n, c.ids.data(),
                        weighted ? c.w.data() : nullptr, nullptr, 3, threads, idx.data(), sc.data(), nullptr);
                    CHECK_EQ(err.row, static_cast<int64_t>(b.row));
                    CHECK_EQ(err.code, b.code);
                }
            }
}

HARNESS_MAIN
