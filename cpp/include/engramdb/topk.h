// topk.h: a bounded heap keeping the k best (score, index) pairs.
//
// Order: higher score first, then lower index (deterministic ties). Scores must be finite; the
// scanners check that before pushing. Used only from baseline-compiled translation units.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace engramdb {

class TopK {
public:
    explicit TopK(size_t k) : k_(k) {
        score_.reserve(k);
        index_.reserve(k);
    }

    // Admission threshold for an in-order scan: a later row with an equal score never wins a tie,
    // so `score > threshold()` is exact while scanning rows by increasing index.
    float threshold() const { return threshold_; }

    void push(float score, int64_t index) {
        if (k_ == 0) return;
        if (score_.size() < k_) {
            score_.push_back(score);
            index_.push_back(index);
            sift_up(score_.size() - 1);
            if (score_.size() == k_) threshold_ = score_[0];
        } else if (better(score, index, score_[0], index_[0])) {
            score_[0] = score;
            index_[0] = index;
            sift_down(0);
            threshold_ = score_[0];
        }
    }

    void merge(const TopK& other) {
        for (size_t i = 0; i < other.score_.size(); ++i) push(other.score_[i], other.index_[i]);
    }

    size_t size() const { return score_.size(); }

    // Writes the kept pairs best first; pads with index -1 and NaN up to k.
    void write(int64_t* idx, float* scores) const {
        std::vector<size_t> order(score_.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [this](size_t a, size_t b) {
            return better(score_[a], index_[a], score_[b], index_[b]);
        });
        for (size_t i = 0; i < k_; ++i) {
            if (i < order.size()) {
                idx[i] = index_[order[i]];
                scores[i] = score_[order[i]];
            } else {
                idx[i] = -1;
                scores[i] = std::numeric_limits<float>::quiet_NaN();
            }
        }
    }

    static bool better(float sa, int64_t ia, float sb, int64_t ib) { return sa > sb || (sa == sb && ia < ib); }

private:
    // Min-heap on "better": the root is the worst kept pair.
    void sift_up(size_t i) {
        while (i > 0) {
            const size_t p = (i - 1) / 2;
            if (!better(score_[p], index_[p], score_[i], index_[i])) break;
            swap(i, p);
            i = p;
        }
    }
    void sift_down(size_t i) {
        const size_t n = score_.size();
        for (;;) {
            size_t worst = i;
            const size_t l = 2 * i + 1, r = l + 1;
            if (l < n && better(score_[worst], index_[worst], score_[l], index_[l])) worst = l;
            if (r < n && better(score_[worst], index_[worst], score_[r], index_[r])) worst = r;
            if (worst == i) return;
            swap(i, worst);
            i = worst;
        }
    }
    void swap(size_t a, size_t b) {
        std::swap(score_[a], score_[b]);
        std::swap(index_[a], index_[b]);
    }

    size_t k_;
    std::vector<float> score_;
    std::vector<int64_t> index_;
    float threshold_ = -std::numeric_limits<float>::infinity();
};

}  // namespace engramdb
