// parallel.h: split [0, n) into contiguous ranges over a few std::threads (no OpenMP: its
// runtimes clash inside wheels). The calling thread takes the first range. Exceptions are
// carried back and rethrown on the calling thread.
#pragma once
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace engramdb {

// Threads a call uses when the caller asks for "auto" (0): ENGRAMDB_NUM_THREADS if set, else the
// hardware concurrency. Read once.
size_t default_threads();

// Threads worth using for n items when each thread should get at least `grain` of them
// (requested == 0 means default_threads()).
inline size_t plan_threads(size_t n, size_t requested, size_t grain) {
    if (requested == 0) requested = default_threads();
    const size_t by_work = grain == 0 ? requested : (n + grain - 1) / grain;
    size_t t = requested < by_work ? requested : by_work;
    return t == 0 ? 1 : t;
}

template <typename F>
void parallel_for(size_t n, size_t threads, F&& fn) {
    if (threads <= 1 || n == 0) {
        fn(size_t{0}, n, size_t{0});
        return;
    }
    std::vector<std::exception_ptr> errors(threads);
    std::vector<std::thread> pool;
    pool.reserve(threads - 1);
    auto run = [&](size_t t) {
        const size_t begin = n * t / threads, end = n * (t + 1) / threads;
        try {
            fn(begin, end, t);
        } catch (...) {
            errors[t] = std::current_exception();
        }
    };
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(run, t);
    run(0);
    for (std::thread& th : pool) th.join();
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace engramdb
