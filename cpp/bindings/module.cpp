// module.cpp: ties the per-family bindings into engramdb._core and exposes dispatch control.
#include "engramdb/dispatch.h"
#include "util.h"

namespace engramdb::bind {
void bind_dense(py::module_& m);
void bind_hamming(py::module_& m);
void bind_sparse(py::module_& m);
void bind_maxsim(py::module_& m);
void bind_centroids(py::module_& m);
void bind_tree(py::module_& m);
void bind_bm25(py::module_& m);
void bind_density(py::module_& m);
void bind_analysis(py::module_& m);
void bind_codes(py::module_& m);
}  // namespace engramdb::bind

PYBIND11_MODULE(_core, m) {
    m.doc() = "engramdb native kernels (private: use engramdb.kernels)";
    engramdb::bind::bind_dense(m);
    engramdb::bind::bind_hamming(m);
    engramdb::bind::bind_sparse(m);
    engramdb::bind::bind_maxsim(m);
    engramdb::bind::bind_centroids(m);
    engramdb::bind::bind_tree(m);
    engramdb::bind::bind_bm25(m);
    engramdb::bind::bind_density(m);
    engramdb::bind::bind_analysis(m);
    engramdb::bind::bind_codes(m);
    m.def("isa", []() { return std::string(engramdb::kernels().name); }, "Name of the active instruction set.");
    m.def("compiled_isas", &engramdb::compiled_isas, "Instruction sets compiled into this build, best first.");
    m.def("available_isas", &engramdb::available_isas, "Instruction sets this CPU runs, best first.");
    m.def("set_isa", &engramdb::set_isa, py::arg("name"),
          "Switch the active instruction set; returns False if it is not available.");
    m.def("forced_isa", &engramdb::forced_isa, "The ENGRAMDB_ISA override as given, or ''.");
    m.def("forced_note", &engramdb::forced_note, "Why the ENGRAMDB_ISA override was not honoured, or ''.");
}
