// threads.cpp: the default worker count for kernels called with threads=0 ("auto").
#include <cstdlib>
#include <thread>

#include "engramdb/parallel.h"

namespace engramdb {

size_t default_threads() {
    static const size_t n = [] {
        if (const char* env = std::getenv("ENGRAMDB_NUM_THREADS"); env != nullptr && *env != '\0') {
            const long v = std::strtol(env, nullptr, 10);
            if (v >= 1) return static_cast<size_t>(v);
        }
        const unsigned hw = std::thread::hardware_concurrency();
        return static_cast<size_t>(hw == 0 ? 1 : hw);
    }();
    return n;
}

}  // namespace engramdb
