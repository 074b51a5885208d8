// dispatch.h: choose the best instruction set once, at first use, and let callers force one.
//
// Order of preference: avx512 > avx2 > scalar on x86-64, neon > scalar on aarch64. The choice is
// made from __builtin_cpu_supports (which checks OS support of the wider registers through XGETBV)
// and may be forced with the environment variable ENGRAMDB_ISA=scalar|avx2|avx512|neon; a forced
// ISA the CPU cannot run falls back to the best available one and says so in `forced_note()`.
#pragma once
#include <string>
#include <vector>

#include "engramdb/isa_kernels.h"

namespace engramdb {

// The active table (thread-safe, cached after the first call).
const IsaKernels& kernels();
// Names of ISAs compiled into this build / runnable on this CPU.
std::vector<std::string> compiled_isas();
std::vector<std::string> available_isas();
// Select an ISA by name; returns false (and changes nothing) if it is not available.
bool set_isa(const std::string& name);
// Why the environment override was not honoured ("" when it was, or when none was given).
std::string forced_note();
// The environment override as given ("" when none).
std::string forced_isa();

}  // namespace engramdb
