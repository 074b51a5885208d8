// util.h: shared helpers for the binding files (the only code that sees pybind11).
// The Python layer (engramdb.kernels) validates everything and names the argument in its
// errors; these checks are the last line of defence so nothing can crash the interpreter.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

namespace py = pybind11;

namespace engramdb::bind {

template <typename T>
using carray = py::array_t<T, py::array::c_style>;

template <typename T>
inline void require_rank(const carray<T>& a, py::ssize_t ndim, const char* name) {
    if (a.ndim() != ndim)
        throw py::value_error(std::string(name) + " must have " + std::to_string(ndim) + " dimensions, got " +
                              std::to_string(a.ndim()));
}

inline void require_len(py::ssize_t got, py::ssize_t want, const char* name) {
    if (got != want)
        throw py::value_error(std::string(name) + " has length " + std::to_string(got) + ", expected " +
                              std::to_string(want));
}

template <typename T>
inline const T* opt_ptr(const std::optional<carray<T>>& a, py::ssize_t len, const char* name) {
    if (!a.has_value()) return nullptr;
    require_rank(*a, 1, name);
    require_len(a->shape(0), len, name);
    return a->data();
}

inline std::size_t uz(py::ssize_t v) { return static_cast<std::size_t>(v); }

}  // namespace engramdb::bind
