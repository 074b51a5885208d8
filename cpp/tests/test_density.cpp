// HDBSCAN over a precomputed distance matrix (density.h): clear structure found, float and double
// agreeing, degenerate sizes, and a NaN, infinite or negative distance named by its row. (The
// Python tests compare the labels with scikit-learn's; this checks the native code on its own,
// under the sanitizers.)
#include <algorithm>
#include <limits>
#include <set>

#include "engramdb/density.h"
#include "harness.h"

using harness::Scope;

namespace {

// Two blobs of `per` points around (0, 0) and (10, 0), then `far` lone points far from both.
std::vector<double> blob_distances(size_t per, size_t far, size_t* n_out) {
    std::vector<std::pair<double, double>> pts;
    for (size_t i = 0; i < per; ++i) pts.push_back({harness::uniform(-1.f, 1.f), harness::uniform(-1.f, 1.f)});
    for (size_t i = 0; i < per; ++i) pts.push_back({10 + harness::uniform(-1.f, 1.f), harness::uniform(-1.f, 1.f)});
    for (size_t i = 0; i < far; ++i) pts.push_back({100.0 * (i + 1), -100.0 * (i + 1)});
    const size_t n = pts.size();
    std::vector<double> D(n * n);
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j)
            D[i * n + j] = std::hypot(pts[i].first - pts[j].first, pts[i].second - pts[j].second);
    *n_out = n;
    return D;
}

}  // namespace

TEST(hdbscan_finds_two_blobs_and_calls_far_points_noise) {
    for (size_t min_samples : {2, 5, 20})
        for (size_t per : {30, 120}) {
            Scope s("min_samples", min_samples, "per blob", per);
            size_t n;
            const std::vector<double> D = blob_distances(per, 3, &n);
            std::vector<int64_t> labels(n, 99);
            REQUIRE(engramdb::hdbscan_precomputed(D.data(), n, 10, min_samples, labels.data()) == -1);
            CHECK(labels[0] >= 0);
            CHECK(labels[per] >= 0);
            CHECK(labels[0] != labels[per]);
            size_t same_a = 0, same_b = 0;
            for (size_t i = 0; i < per; ++i) {
                same_a += labels[i] == labels[0];
                same_b += labels[per + i] == labels[per];
            }
            CHECK(same_a >= per * 9 / 10);  // a blob's edge may fall out as noise
            CHECK(same_b >= per * 9 / 10);
            for (size_t i = 2 * per; i < n; ++i) CHECK_EQ(labels[i], int64_t{-1});
            // float32 distances give the same labels
            const std::vector<float> F(D.begin(), D.end());
            std::vector<int64_t> lf(n, 99);
            REQUIRE(engramdb::hdbscan_precomputed(F.data(), n, 10, min_samples, lf.data()) == -1);
            CHECK(lf == labels);
        }
}

TEST(hdbscan_labels_are_numbered_from_zero) {
    size_t n;
    const std::vector<double> D = blob_distances(50, 0, &n);
    for (size_t mcs : {2, 3, 7, 40, 101, 1000}) {
        Scope s("min_cluster_size", mcs);
        std::vector<int64_t> labels(n);
        REQUIRE(engramdb::hdbscan_precomputed(D.data(), n, mcs, 4, labels.data()) == -1);
        std::set<int64_t> seen(labels.begin(), labels.end());
        seen.erase(-1);
        int64_t want = 0;
        for (int64_t l : seen) CHECK_EQ(l, want++);
    }
}

TEST(hdbscan_of_zero_one_and_two_points) {
    std::vector<int64_t> labels(2, 99);
    const double none[1] = {0};
    CHECK_EQ(engramdb::hdbscan_precomputed(none, 0, 2, 1, labels.data()), int64_t{-1});
    const double one[] = {0.0};
    CHECK_EQ(engramdb::hdbscan_precomputed(one, 1, 2, 1, labels.data()), int64_t{-1});
    CHECK_EQ(labels[0], int64_t{-1});
    const double two[] = {0.0, 1.0, 1.0, 0.0};
    CHECK_EQ(engramdb::hdbscan_precomputed(two, 2, 2, 2, labels.data()), int64_t{-1});
    CHECK(labels[0] >= -1 && labels[1] >= -1);
}

TEST(hdbscan_names_the_first_bad_row) {
    size_t n;
    const std::vector<double> D0 = blob_distances(20, 1, &n);
    for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -0.5})
        for (size_t min_samples : {3, 20}) {
            Scope s("bad", bad, "min_samples", min_samples);
            std::vector<double> D = D0;
            D[17 * n + 30] = bad;
            D[25 * n + 2] = bad;
            std::vector<int64_t> labels(n, 99);
            CHECK_EQ(engramdb::hdbscan_precomputed(D.data(), n, 5, min_samples, labels.data()), int64_t{17});
            const std::vector<float> F(D.begin(), D.end());
            CHECK_EQ(engramdb::hdbscan_precomputed(F.data(), n, 5, min_samples, labels.data()), int64_t{17});
        }
}

TEST(group_sums_add_each_rows_group_columns_in_order) {
    // rows 0, 2 and 1 (odd counts: four side by side, then one alone), groups {1, 2}, {}, {0, 3, 3}
    const size_t n = 4;
    std::vector<double> D(n * n);
    for (size_t i = 0; i < n * n; ++i) D[i] = 0.25 * static_cast<double>(i) + 1.0 / 1024;
    const int64_t rows[] = {0, 2, 1, 3, 2};
    const int64_t cols[] = {1, 2, 0, 3, 3};
    const int64_t starts[] = {0, 2, 2};
    std::vector<double> out(5 * 3, -1.0);
    engramdb::group_sums(D.data(), n, rows, 5, cols, 5, starts, 3, out.data());
    for (size_t i = 0; i < 5; ++i) {
        Scope s("row", rows[i]);
        const double* r = D.data() + static_cast<size_t>(rows[i]) * n;
        CHECK_EQ(out[i * 3 + 0], r[1] + r[2]);
        CHECK_EQ(out[i * 3 + 1], 0.0);
        CHECK_EQ(out[i * 3 + 2], (r[0] + r[3]) + r[3]);
    }
    const std::vector<float> F(D.begin(), D.end());
    std::vector<double> outf(5 * 3, -1.0);
    engramdb::group_sums(F.data(), n, rows, 5, cols, 5, starts, 3, outf.data());
    for (size_t i = 0; i < 15; ++i) CHECK_EQ(outf[i], out[i]);  // these entries are exact in float
}

TEST(distances_from_overlaps_and_cosines) {
    // sets of sizes 2, 3 and 0: overlaps as counted; 1 - overlap / union, 0 over 0 counting as 0
    const float sizes[] = {2, 3, 0};
    float x[] = {2, 1, 0, 1, 3, 0, 0, 0, 0};
    engramdb::jaccard_from_overlaps(x, 3, sizes);
    const float want[] = {0, 1.0f - 1.0f / 4.0f, 1, 1.0f - 1.0f / 4.0f, 0, 1, 1, 1, 1};
    for (size_t i = 0; i < 9; ++i) CHECK_EQ(x[i], want[i]);
    // six sets (two empty): rows of four lanes and a scalar tail of two, against the scalar formula
    const float sz[] = {3, 0, 2, 5, 0, 1};
    const float ov[6][6] = {{3, 0, 1, 2, 0, 1}, {0, 0, 0, 0, 0, 0}, {1, 0, 2, 2, 0, 0},
                            {2, 0, 2, 5, 0, 1}, {0, 0, 0, 0, 0, 0}, {1, 0, 0, 1, 0, 1}};
    float y[36];
    for (size_t i = 0; i < 36; ++i) y[i] = ov[i / 6][i % 6];
    engramdb::jaccard_from_overlaps(y, 6, sz);
    for (size_t i = 0; i < 36; ++i) {
        const float o = ov[i / 6][i % 6], u = (sz[i / 6] - o) + sz[i % 6];
        CHECK_EQ(y[i], 1.0f - (u > 0.0f ? o / u : o));
    }
    CHECK_EQ(y[1 * 6 + 4], 1.0f);  // two empty sets: 0 over 0 counts as no overlap
    float c[] = {1.0f, 0.25f, -0.5f, 1.0000001f, std::numeric_limits<float>::quiet_NaN()};
    engramdb::distances_from_cosines(c, 1, 5);
    CHECK_EQ(c[0], 0.0f);
    CHECK_EQ(c[1], 0.75f);
    CHECK_EQ(c[2], 1.5f);
    CHECK_EQ(c[3], 0.0f);  // a cosine past 1 by rounding: clipped
    CHECK(std::isnan(c[4]));
}

TEST(row_sums_made_in_the_same_pass_leave_the_diagonal_out) {
    // 5 x 5 (a row of four lanes and a tail of one): each row's sum of its distances, the diagonal
    // entry (1 here: an empty set's, or a zero row's) left out, exactly
    const size_t n = 5;
    const float sz[] = {2, 0, 3, 1, 4};
    float ov[25], want[25];
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            const float o = i == j ? sz[i] : static_cast<float>((i + j) % 2 == 0 && sz[i] > 0 && sz[j] > 0);
            ov[i * n + j] = o;
            const float u = (sz[i] - o) + sz[j];
            want[i * n + j] = 1.0f - (u > 0.0f ? o / u : o);
        }
    double sums[5] = {-1, -1, -1, -1, -1};
    engramdb::jaccard_from_overlaps(ov, n, sz, sums);
    for (size_t i = 0; i < n; ++i) {
        double s = 0.0;
        for (size_t j = 0; j < n; ++j) {
            CHECK_EQ(ov[i * n + j], want[i * n + j]);
            if (j != i) s += static_cast<double>(want[i * n + j]);
        }
        CHECK_EQ(sums[i], s);
    }
    CHECK_EQ(ov[1 * n + 1], 1.0f);  // the empty set's diagonal: 1, and not in its sum
    float cs[25];
    for (size_t k = 0; k < 25; ++k) cs[k] = 1.25f - 0.125f * static_cast<float>(k % 11);  // past 1: clipped to 0
    double cw[5] = {-1, -1, -1, -1, -1};
    engramdb::distances_from_cosines(cs, n, n, cw);
    for (size_t i = 0; i < n; ++i) {
        double s = 0.0;
        for (size_t j = 0; j < n; ++j)
            if (j != i) s += static_cast<double>(cs[i * n + j]);
        CHECK_EQ(cw[i], s);
    }
}

HARNESS_MAIN
