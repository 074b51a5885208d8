// panels.cpp: query packing for the panel kernels (baseline-compiled; done once per call).
#include "engramdb/panels.h"

#include <new>

namespace engramdb {

PanelBuffer pack_panels(const float* Q, size_t nq, size_t d) {
    const size_t panels = (nq + kPanelWidth - 1) / kPanelWidth;
    const size_t bytes = (panels * d * kPanelWidth * sizeof(float) + 31) / 32 * 32;
    float* P = static_cast<float*>(std::aligned_alloc(32, bytes > 0 ? bytes : 32));
    if (P == nullptr) throw std::bad_alloc();
    for (size_t p = 0; p < panels; ++p)
        for (size_t i = 0; i < d; ++i)
            for (size_t l = 0; l < kPanelWidth; ++l) {
                const size_t j = p * kPanelWidth + l;
                P[(p * d + i) * kPanelWidth + l] = j < nq ? Q[j * d + i] : 0.f;
            }
    return PanelBuffer(P);
}

}  // namespace engramdb
