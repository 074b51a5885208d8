// TopK (topk.h) against a full sort, and parallel_for's ranges and error carrying (parallel.h).
#include <algorithm>
#include <atomic>
#include <numeric>
#include <stdexcept>

#include "engramdb/parallel.h"
#include "engramdb/topk.h"
#include "harness.h"

using harness::Scope;

namespace {

// The k best of (score, index) pairs by a full sort: higher score, then lower index.
std::vector<std::pair<float, int64_t>> reference(const std::vector<float>& s, size_t k) {
    std::vector<std::pair<float, int64_t>> all;
    for (size_t i = 0; i < s.size(); ++i) all.push_back({s[i], static_cast<int64_t>(i)});
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    all.resize(std::min(k, all.size()));
    return all;
}

}  // namespace

TEST(topk_equals_a_full_sort_with_ties_to_the_lower_index) {
    for (size_t n : {0, 1, 2, 10, 257})
        for (size_t k : {0, 1, 3, 10, 300}) {
            Scope s("n", n, "k", k);
            std::vector<float> sc(n);
            for (float& v : sc) v = static_cast<float>(harness::randint(-5, 5));  // many ties
            engramdb::TopK h(k);
            for (size_t i = 0; i < n; ++i) h.push(sc[i], static_cast<int64_t>(i));
            std::vector<int64_t> idx(k, 99);
            std::vector<float> out(k, 99.f);
            h.write(idx.data(), out.data());
            const auto want = reference(sc, k);
            CHECK_EQ(h.size(), want.size());
            for (size_t i = 0; i < k; ++i) {
                if (i < want.size()) {
                    CHECK_EQ(idx[i], want[i].second);
                    CHECK_EQ(out[i], want[i].first);
                } else {
                    CHECK_EQ(idx[i], int64_t{-1});
                    CHECK(std::isnan(out[i]));
                }
            }
        }
}

TEST(topk_merge_of_parts_equals_one_heap) {
    std::vector<float> sc(1000);
    for (float& v : sc) v = static_cast<float>(harness::randint(0, 50));
    for (size_t k : {1, 7, 64}) {
        Scope s("k", k);
        engramdb::TopK a(k), b(k), whole(k);
        for (size_t i = 0; i < sc.size(); ++i) {
            (i % 3 == 0 ? a : b).push(sc[i], static_cast<int64_t>(i));
            whole.push(sc[i], static_cast<int64_t>(i));
        }
        a.merge(b);
        std::vector<int64_t> ia(k), iw(k);
        std::vector<float> sa(k), sw(k);
        a.write(ia.data(), sa.data());
        whole.write(iw.data(), sw.data());
        CHECK(ia == iw);
        CHECK(sa == sw);
    }
}

TEST(parallel_for_covers_the_range_once) {
    for (size_t n : {0, 1, 5, 1000})
        for (size_t t : {1, 2, 3, 8}) {
            Scope s("n", n, "threads", t);
            std::vector<std::atomic<int>> hits(n);
            for (auto& h : hits) h = 0;
            std::atomic<size_t> calls{0};
            engramdb::parallel_for(n, t, [&](size_t b, size_t e, size_t) {
                ++calls;
                for (size_t i = b; i < e; ++i) ++hits[i];
            });
            for (size_t i = 0; i < n; ++i) CHECK_EQ(hits[i].load(), 1);
            CHECK(calls.load() >= 1);
        }
}

TEST(parallel_for_rethrows_a_workers_exception) {
    bool caught = false;
    try {
        engramdb::parallel_for(100, 4, [&](size_t b, size_t, size_t) {
            if (b > 0) throw std::runtime_error("worker");
        });
    } catch (const std::runtime_error&) {
        caught = true;
    }
    CHECK(caught);
}

TEST(plan_threads_never_plans_zero) {
    CHECK_EQ(engramdb::plan_threads(0, 4, 100), size_t{1});
    CHECK_EQ(engramdb::plan_threads(1000, 4, 100), size_t{4});
    CHECK_EQ(engramdb::plan_threads(150, 4, 100), size_t{2});
    CHECK(engramdb::plan_threads(10, 0, 0) >= 1);
}

HARNESS_MAIN
