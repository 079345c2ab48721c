#include "measure/transport_entries.hpp"

#include <set>
#include <utility>

#include "core/format.hpp"

namespace dsgd::measure {

namespace {

// Seed 001 Tables I (latency, us) and II (bandwidth, MB/s), by transport, at the sizes both give (0 B has no
// bandwidth and is left out).
struct PublishedTransport {
  const char* name;
  std::vector<std::pair<double, double>> latency_us;  // (bytes, us)
  std::vector<std::pair<double, double>> bandwidth_MBps;
};

const std::vector<PublishedTransport>& seed001_tables() {
  static const std::vector<PublishedTransport> tables = {
      {"seed 001: shared memory, host",
       {{1, 1.11}, {128, 1.28}, {512, 1.54}, {16384, 6.95}, {524288, 138.61}, {2097152, 501.10}, {4194304, 971.19}},
       {{1, 1.76},
        {128, 213.95},
        {512, 679.82},
        {16384, 5269.01},
        {524288, 4540.58},
        {2097152, 4901.57},
        {4194304, 5064.01}}},
      {"seed 001: shared memory, GPU",
       {{1, 31.70}, {128, 26.25}, {512, 26.20}, {16384, 30.97}, {524288, 163.39}, {2097152, 515.71}, {4194304, 936.43}},
       {{1, 0.06},
        {128, 9.41},
        {512, 37.60},
        {16384, 107.76},
        {524288, 4081.20},
        {2097152, 5148.11},
        {4194304, 5266.48}}},
      {"seed 001: intra-node IB-EDR GDR",
       {{1, 6.13}, {128, 5.83}, {512, 12.00}, {16384, 16.95}, {524288, 218.72}, {2097152, 458.22}, {4194304, 765.36}},
       {{1, 0.58},
        {128, 69.99},
        {512, 226.62},
        {16384, 3558.15},
        {524288, 5298.05},
        {2097152, 7543.43},
        {4194304, 7758.30}}},
      {"seed 001: inter-node IB-EDR GDR",
       {{1, 5.98}, {128, 5.77}, {512, 11.58}, {16384, 16.74}, {524288, 157.12}, {2097152, 425.37}, {4194304, 741.60}},
       {{1, 0.68},
        {128, 87.41},
        {512, 268.72},
        {16384, 3922.10},
        {524288, 6110.80},
        {2097152, 8105.62},
        {4194304, 8657.90}}},
      {"seed 001: CUDA P2P",
       {{1, 19.41}, {128, 15.51}, {512, 15.33}, {16384, 17.50}, {524288, 80.91}, {2097152, 279.04}, {4194304, 541.65}},
       {{1, 0.13},
        {128, 16.41},
        {512, 67.28},
        {16384, 2336.16},
        {524288, 8984.97},
        {2097152, 9604.57},
        {4194304, 9720.82}}},
  };
  return tables;
}

bool seed_size(double bytes) {
  static const std::set<double> sizes = {1, 128, 512, 16384, 524288, 2097152, 4194304};
  return sizes.contains(bytes);
}

}  // namespace

reports::Entry transport_entry(const std::string& transport, const std::string& executor, const std::string& fidelity,
                               double bytes, double one_way_s, const std::string& description) {
  reports::Entry entry;
  entry.name = "transport/" + transport + "/" + fixed(bytes, 0);
  entry.executor = executor;
  entry.fidelity = fidelity;
  entry.algorithm = transport;
  entry.real_time = one_way_s;
  entry.cpu_time = one_way_s;
  entry.labels = {
      {"transport", transport}, {"description", description}, {"seed_size", seed_size(bytes) ? "yes" : "no"}};
  entry.counters = {{"bytes", bytes},
                    {"one_way_s", one_way_s},
                    {"latency_us", one_way_s * 1e6},
                    {"bandwidth_MBps", one_way_s > 0 ? bytes / one_way_s / 1e6 : 0}};
  return entry;
}

reports::Entry to_entry(const Transport& transport, const TransportPoint& point) {
  auto entry = transport_entry(transport.name, "threads", "measured", static_cast<double>(point.bytes), point.one_way_s,
                               transport.description);
  entry.iterations = point.samples;
  entry.counters["min_s"] = point.min_s;
  return entry;
}

std::vector<reports::Entry> seed001_transport_entries() {
  std::vector<reports::Entry> entries;
  for (const auto& table : seed001_tables()) {
    for (std::size_t i = 0; i < table.latency_us.size(); ++i) {
      const auto [bytes, latency_us] = table.latency_us[i];
      auto entry = transport_entry(table.name, "published", "published", bytes, latency_us * 1e-6,
                                   "seed 001 Tables I (latency) and II (bandwidth)");
      entry.counters["bandwidth_MBps"] = table.bandwidth_MBps[i].second;
      entries.push_back(std::move(entry));
    }
  }
  return entries;
}

}  // namespace dsgd::measure
