// panels.h: packing queries into the panel layout the dot_panels / max_panels primitives read.
// Panel p holds queries 8p .. 8p+7 as P[(p * d + i) * 8 + lane]; lanes past nq are zero.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <memory>

#include "engramdb/isa_kernels.h"

namespace engramdb {

struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
};
using PanelBuffer = std::unique_ptr<float[], FreeDeleter>;

// 32-byte aligned, packed copy of Q (nq x d). Throws std::bad_alloc when memory runs out.
PanelBuffer pack_panels(const float* Q, size_t nq, size_t d);

}  // namespace engramdb
