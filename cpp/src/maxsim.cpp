// maxsim.cpp: N5 driver. Each document's tokens are scored against all query tokens by the same
// register-tiled block primitive as dense search (tokens as rows, query tokens as queries), then
// reduced by max over tokens and sum over query tokens.
#include "engramdb/maxsim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engramdb/dispatch.h"
#include "engramdb/parallel.h"

namespace engramdb {

int64_t maxsim(const float* Q, size_t m, const float* tokens, size_t d, const int64_t* offsets, size_t n_docs,
               const int64_t* docs, size_t n_out, size_t threads, float* out) {
    (void)n_docs;  // docs were range-checked by the caller
    const IsaKernels& K = kernels();
    const size_t chunk = std::clamp<size_t>(16384 / std::max<size_t>(m, 1), 4, 1024);  // token rows per call
    const size_t nt = plan_threads(n_out, threads, 64);
    std::vector<int64_t> bad(nt, -1);
    parallel_for(n_out, nt, [&](size_t begin, size_t end, size_t t) {
        std::vector<float> buf(chunk * m), best(m);
        for (size_t o = begin; o < end; ++o) {
            const size_t doc = docs != nullptr ? static_cast<size_t>(docs[o]) : o;
            const size_t a = static_cast<size_t>(offsets[doc]), b = static_cast<size_t>(offsets[doc + 1]);
            if (a == b) {
                out[o] = 0.f;
                continue;
            }
            std::fill(best.begin(), best.end(), -std::numeric_limits<float>::infinity());
            for (size_t s = a; s < b; s += chunk) {
                const size_t cnt = std::min(chunk, b - s);
                K.dot_f32(Q, m, tokens + s * d, cnt, d, buf.data());
                bool finite = true;
                for (size_t r = 0; r < cnt; ++r)
                    for (size_t i = 0; i < m; ++i) {
                        const float v = buf[r * m + i];
                        finite &= std::isfinite(v);  // std::max would silently drop a NaN
                        best[i] = std::max(best[i], v);
                    }
                if (!finite) {
                    bad[t] = static_cast<int64_t>(doc);
                    return;
                }
            }
            double total = 0;
            for (size_t i = 0; i < m; ++i) total += best[i];
            if (!std::isfinite(total)) {
                bad[t] = static_cast<int64_t>(doc);
                return;
            }
            out[o] = static_cast<float>(total);
        }
    });
    for (int64_t b : bad)
        if (b >= 0) return b;
    return -1;
}

}  // namespace engramdb
