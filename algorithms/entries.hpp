#pragma once
// The catalog's entries, one function per algorithm file (internal to algorithms/): registry.cpp lists them in
// seed 000's order. Adding an algorithm is a new file here, its line below and in registry.cpp, and its name in
// CMakeLists.txt -- all inside algorithms/.

#include <vector>

#include "algorithms/algorithm.hpp"

namespace dsgd::algorithms {

AlgorithmEntry sync_sgd_entry();
AlgorithmEntry wfbp_sgd_entry();
AlgorithmEntry async_sgd_entry();
AlgorithmEntry async_msgd_entry();
AlgorithmEntry hogwild_sgd_entry();
std::vector<AlgorithmEntry> original_easgd_entries();  // Original EASGD and EASGD*
AlgorithmEntry async_easgd_entry();
AlgorithmEntry async_measgd_entry();
AlgorithmEntry hogwild_easgd_entry();
std::vector<AlgorithmEntry> sync_easgd_entries();  // EASGD1, EASGD2, EASGD3
AlgorithmEntry ssp_sgd_entry();                    // seed 004's SSP
AlgorithmEntry a_bsp_sgd_entry();                  // seed 004's A-BSP (sync_sgd.cpp)
AlgorithmEntry hybrid_sgd_entry();                 // seed 001's hybrid data/model parallelism
std::vector<AlgorithmEntry> dogwild_entries();     // seed 002's Dogwild: over datagrams and over messages
AlgorithmEntry geeps_entry();                      // seed 003's GeePS (geeps/geeps.cpp)

}  // namespace dsgd::algorithms
