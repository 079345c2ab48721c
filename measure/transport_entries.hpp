#pragma once
// The results entries of `dsgd bench transports` (docs/transports.md): one row per transport and message size, with
// latency and bandwidth as seed 001's Tables I-II put them, whoever measured or predicted it; and those tables'
// published rows beside them.

#include <string>
#include <vector>

#include "measure/transports.hpp"
#include "reports/results.hpp"

namespace dsgd::measure {

// `transport` moved `bytes` one way in `one_way_s` (latency from the ping-pong's or copy's own time, bandwidth bytes
// over it), by `executor` at `fidelity`; label seed_size says whether seed 001's tables have that size.
reports::Entry transport_entry(const std::string& transport, const std::string& executor, const std::string& fidelity,
                               double bytes, double one_way_s, const std::string& description);

// A local copy timed by time_transport: the median as its time, the fastest copy as min_s.
reports::Entry to_entry(const Transport& transport, const TransportPoint& point);

// Seed 001 Tables I (latency) and II (bandwidth), one entry per transport and size both give (executor and fidelity
// "published"; counter bandwidth_MBps the seed's own, measured apart from its latency).
std::vector<reports::Entry> seed001_transport_entries();

}  // namespace dsgd::measure
