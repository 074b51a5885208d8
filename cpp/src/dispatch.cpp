// dispatch.cpp: run-time choice of the instruction set, cached, with an environment override.
#include "engramdb/dispatch.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

namespace engramdb {
namespace {

struct Entry {
    const char* name;
    const IsaKernels* table;
    bool (*runs)();
};

bool always() { return true; }

#if defined(__x86_64__) || defined(_M_X64)
bool cpu_avx2() {
    __builtin_cpu_init();
    // __builtin_cpu_supports checks XGETBV, so the OS must save YMM/ZMM state too.
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
           __builtin_cpu_supports("popcnt");
}
bool cpu_avx512() {
    __builtin_cpu_init();
    return cpu_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
#endif

// Best first.
const Entry kEntries[] = {
#if defined(ENGRAMDB_HAVE_AVX512)
    {"avx512", &kAvx512Kernels, cpu_avx512},
#endif
#if defined(ENGRAMDB_HAVE_AVX2)
    {"avx2", &kAvx2Kernels, cpu_avx2},
#endif
#if defined(ENGRAMDB_HAVE_NEON)
    {"neon", &kNeonKernels, always},
#endif
    {"scalar", &kScalarKernels, always},
};

std::atomic<const IsaKernels*> g_active{nullptr};
std::once_flag g_once;
std::string g_note;
std::string g_forced;

const IsaKernels* find_available(const std::string& name) {
    for (const Entry& e : kEntries)
        if (name == e.name && e.runs()) return e.table;
    return nullptr;
}

void choose() {
    const IsaKernels* best = nullptr;
    for (const Entry& e : kEntries)
        if (e.runs()) {
            best = e.table;
            break;
        }
    if (const char* env = std::getenv("ENGRAMDB_ISA"); env != nullptr && *env != '\0') {
        g_forced = env;
        if (const IsaKernels* t = find_available(g_forced)) {
            best = t;
        } else {
            g_note = "ENGRAMDB_ISA=" + g_forced + " is not compiled in or not supported by this CPU; using " +
                     best->name;
        }
    }
    g_active.store(best, std::memory_order_release);
}

}  // namespace

const IsaKernels& kernels() {
    const IsaKernels* t = g_active.load(std::memory_order_acquire);
    if (t == nullptr) {
        std::call_once(g_once, choose);
        t = g_active.load(std::memory_order_acquire);
    }
    return *t;
}

std::vector<std::string> compiled_isas() {
    std::vector<std::string> out;
    for (const Entry& e : kEntries) out.emplace_back(e.name);
    return out;
}

std::vector<std::string> available_isas() {
    std::vector<std::string> out;
    for (const Entry& e : kEntries)
        if (e.runs()) out.emplace_back(e.name);
    return out;
}

bool set_isa(const std::string& name) {
    kernels();  // make sure the one-time choice has happened, so it cannot overwrite this one
    const IsaKernels* t = find_available(name);
    if (t == nullptr) return false;
    g_active.store(t, std::memory_order_release);
    return true;
}

std::string forced_note() {
    kernels();
    return g_note;
}

std::string forced_isa() {
    kernels();
    return g_forced;
}

}  // namespace engramdb
