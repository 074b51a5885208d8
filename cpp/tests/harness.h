// harness.h: the few pieces the C++ unit tests share (no framework to install).
//
// TEST(name) registers a case; CHECK(cond) records a failure and goes on; REQUIRE(cond) stops the
// case. A failure prints the file, line, condition and the context stack (which ISA, which shape),
// so a report names the case that broke. main() runs every case and exits non-zero on a failure.
//
// Buffers are std::vectors sized exactly to what a kernel may touch, so under AddressSanitizer a
// read or write one element past them is reported (the heap redzone starts right after).
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engramdb/dispatch.h"

namespace harness {

struct Case {
    const char* name;
    void (*fn)();
};

inline std::vector<Case>& cases() {
    static std::vector<Case> c;
    return c;
}
inline int& failures() {
    static int f = 0;
    return f;
}
inline std::vector<std::string>& context() {
    static std::vector<std::string> c;
    return c;
}

struct Register {
    Register(const char* name, void (*fn)()) { cases().push_back({name, fn}); }
};

struct Stop {};  // thrown by REQUIRE: ends the case, not the program

// Scoped context line shown with every failure inside its scope.
struct Scope {
    template <typename... A>
    explicit Scope(const A&... parts) {
        std::ostringstream s;
        ((s << parts << ' '), ...);
        context().push_back(s.str());
    }
    ~Scope() { context().pop_back(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
};

inline void fail(const char* file, int line, const char* what, const std::string& detail) {
    // Many failures of one kind say nothing more: print the first 20 in full.
    if (++failures() <= 20) {
        std::fprintf(stderr, "%s:%d: CHECK failed: %s %s\n", file, line, what, detail.c_str());
        for (const std::string& c : context()) std::fprintf(stderr, "    in: %s\n", c.c_str());
    }
}

template <typename A, typename B>
std::string show(const A& a, const B& b) {
    std::ostringstream s;
    s.precision(9);
    s << "(" << a << " vs " << b << ")";
    return s.str();
}

// Every ISA this CPU runs, each made active in turn; the best one is active again afterwards.
template <typename F>
void each_isa(F&& fn) {
    const std::vector<std::string> isas = engramdb::available_isas();
    for (const std::string& isa : isas) {
        if (!engramdb::set_isa(isa)) {
            fail(__FILE__, __LINE__, "set_isa", isa);
            continue;
        }
        Scope s("isa", isa);
        fn(isa);
    }
    engramdb::set_isa(isas.front());
}

inline std::mt19937_64& rng() {
    static std::mt19937_64 r(20261126);
    return r;
}
inline float uniform(float lo = -1.f, float hi = 1.f) { return std::uniform_real_distribution<float>(lo, hi)(rng()); }
inline int64_t randint(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng());
}
inline std::vector<float> randvec(size_t n, float lo = -1.f, float hi = 1.f) {
    std::vector<float> v(n);
    for (float& x : v) x = uniform(lo, hi);
    return v;
}

// IEEE binary16 -> double, written independently of the library's converters.
inline double half_value(uint16_t h) {
    const int sign = (h >> 15) ? -1 : 1;
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    if (exp == 0) return sign * std::ldexp(static_cast<double>(mant), -24);
    if (exp == 31) return mant ? std::nan("") : sign * HUGE_VAL;
    return sign * std::ldexp(1024.0 + mant, exp - 25);
}
// A random finite half in about [-2, 2] (subnormals included).
inline uint16_t random_half() {
    for (;;) {
        const auto h = static_cast<uint16_t>(randint(0, 0xffff));
        const int exp = (h >> 10) & 0x1f;
        if (exp <= 15) return h;
    }
}

// Bound on |float32 dot - exact| for d terms with sum |q_i x_i| = mag (a loose form of the
// documented sqrt(d) * 2^-24 * mag: linear in d, since pairwise sums are not guaranteed).
inline double dot_tol(size_t d, double mag) { return (static_cast<double>(d) + 8.0) * 1.2e-7 * mag + 1e-30; }


// Checks a kernel's k best (idx, scores; padded with -1 / NaN) against candidates scored in double
// here: as many results as min(k, candidates), each a distinct candidate whose score is within tol
// of its reference, best first (ties to the lower index), and no candidate left out that beats the
// last one kept by more than 2 * tol. (Exact index equality would be too strict: float rounding
// may swap two candidates whose exact scores differ by less than the kernel's error.)
inline void check_topk(const int64_t* idx, const float* sc, size_t k,
                       const std::vector<std::pair<int64_t, double>>& cand, double tol, const char* file, int line) {
    const size_t want = std::min(k, cand.size());
    std::vector<int64_t> seen;
    for (size_t i = 0; i < k; ++i) {
        if (i >= want) {
            if (idx[i] != -1 || !std::isnan(sc[i])) fail(file, line, "padding is -1 / NaN", show(idx[i], sc[i]));
            continue;
        }
        const int64_t id = idx[i];
        auto it = std::find_if(cand.begin(), cand.end(), [id](const auto& c) { return c.first == id; });
        if (it == cand.end()) {
            fail(file, line, "result is a candidate", show(i, id));
            continue;
        }
        if (std::find(seen.begin(), seen.end(), id) != seen.end()) fail(file, line, "results are distinct", show(i, id));
        seen.push_back(id);
        if (!(std::fabs(sc[i] - it->second) <= tol)) fail(file, line, "score near reference", show(sc[i], it->second));
        if (i > 0 && !(sc[i - 1] > sc[i] || (sc[i - 1] == sc[i] && idx[i - 1] < id)))
            fail(file, line, "best first, ties to the lower index", show(sc[i - 1], sc[i]));
    }
    if (want == 0 || want < k) return;
    for (const auto& c : cand)
        if (std::find(seen.begin(), seen.end(), c.first) == seen.end() && c.second > sc[want - 1] + 2 * tol)
            fail(file, line, "no better candidate left out", show(c.first, c.second));
}

}  // namespace harness

#define HARNESS_CAT2(a, b) a##b
#define HARNESS_CAT(a, b) HARNESS_CAT2(a, b)
#define TEST(name)                                                          \
    static void name();                                                     \
    static ::harness::Register HARNESS_CAT(harness_reg_, name)(#name, name); \
    static void name()

#define CHECK(cond)                                                       \
    do {                                                                  \
        if (!(cond)) ::harness::fail(__FILE__, __LINE__, #cond, "");      \
    } while (0)
#define CHECK_EQ(a, b)                                                                                 \
    do {                                                                                               \
        const auto harness_a = (a);                                                                    \
        const auto harness_b = (b);                                                                    \
        if (!(harness_a == harness_b))                                                                 \
            ::harness::fail(__FILE__, __LINE__, #a " == " #b, ::harness::show(harness_a, harness_b)); \
    } while (0)
#define CHECK_NEAR(a, b, tol)                                                                                   \
    do {                                                                                                        \
        const double harness_a = static_cast<double>(a), harness_b = static_cast<double>(b);                    \
        if (!(std::fabs(harness_a - harness_b) <= (tol)))                                                       \
            ::harness::fail(__FILE__, __LINE__, "|" #a " - " #b "| <= " #tol, ::harness::show(harness_a, harness_b)); \
    } while (0)
#define CHECK_TOPK(idx, sc, k, cand, tol) ::harness::check_topk(idx, sc, k, cand, tol, __FILE__, __LINE__)
#define REQUIRE(cond)                                                     \
    do {                                                                  \
        if (!(cond)) {                                                    \
            ::harness::fail(__FILE__, __LINE__, #cond, "(required)");     \
            throw ::harness::Stop{};                                      \
        }                                                                 \
    } while (0)

#define HARNESS_MAIN                                                                        \
    int main() {                                                                            \
        for (const ::harness::Case& c : ::harness::cases()) {                               \
            const int before = ::harness::failures();                                       \
            const auto harness_t0 = std::chrono::steady_clock::now();                       \
            try {                                                                           \
                c.fn();                                                                     \
            } catch (const ::harness::Stop&) {                                              \
            } catch (const std::exception& e) {                                             \
                ::harness::fail(__FILE__, __LINE__, "unexpected exception", e.what());      \
            }                                                                               \
            const double harness_s =                                                        \
                std::chrono::duration<double>(std::chrono::steady_clock::now() - harness_t0).count(); \
            std::printf("%-56s %-6s %6.2f s\n", c.name, ::harness::failures() == before ? "ok" : "FAILED", harness_s); \
        }                                                                                   \
        std::printf("%d failure(s)\n", ::harness::failures());                              \
        return ::harness::failures() == 0 ? 0 : 1;                                          \
    }
