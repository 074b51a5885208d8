// maxsim.cpp: N5 driver. Query tokens are packed into panels once; each document's tokens then go
// through the fused max_panels primitive (dots, max over tokens, in registers), and the per-query
// maxima are summed in float64.
#include "engramdb/maxsim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engramdb/dispatch.h"
#include "engramdb/panels.h"
#include "engramdb/parallel.h"

namespace engramdb {

int64_t maxsim(const float* Q, size_t m, const float* tokens, size_t d, const int64_t* offsets, size_t n_docs,
               const int64_t* docs, size_t n_out, size_t threads, float* out) {
    (void)n_docs;  // docs were range-checked by the caller
    const IsaKernels& K = kernels();
    const PanelBuffer panels = pack_panels(Q, m, d);  // query tokens packed once for all documents
    const size_t nt = plan_threads(n_out, threads, 64);
    std::vector<int64_t> bad(nt, -1);
    parallel_for(n_out, nt, [&](size_t begin, size_t end, size_t t) {
        std::vector<float> best(m);
        for (size_t o = begin; o < end; ++o) {
            const size_t doc = docs != nullptr ? static_cast<size_t>(docs[o]) : o;
            const size_t a = static_cast<size_t>(offsets[doc]), b = static_cast<size_t>(offsets[doc + 1]);
            if (a == b) {
                out[o] = 0.f;
                continue;
            }
            std::fill(best.begin(), best.end(), -std::numeric_limits<float>::infinity());
            if (!K.max_panels(panels.get(), m, tokens + a * d, b - a, d, best.data())) {
                bad[t] = static_cast<int64_t>(doc);
                return;
            }
            double total = 0;
            for (size_t i = 0; i < m; ++i) total += best[i];
            out[o] = static_cast<float>(total);
        }
    });
    for (int64_t b : bad)
        if (b >= 0) return b;
    return -1;
}

}  // namespace engramdb
