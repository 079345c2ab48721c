#pragma once
// The catalog's entries, one function per method file (internal to algorithms/shared_memory/): registry.cpp lists
// them in seed 003's order. A new method is a new file here, its line below and in registry.cpp, and its name in
// CMakeLists.txt.

#include "algorithms/shared_memory/method.hpp"

namespace dsgd::algorithms::shared_memory {

MethodEntry serial_entry();
MethodEntry mini_batch_entry();
MethodEntry hogwild_entry();
MethodEntry hogbatch_entry();        // plain HogBatch (seed 003 Algorithm 3)
MethodEntry hogbatch_local_entry();  // HogBatch computing on model - own pending gradient (Table II)
MethodEntry multi_model_hogwild_entry();

}  // namespace dsgd::algorithms::shared_memory
