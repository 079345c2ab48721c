#pragma once
// The results entries (docs/results-schema.md) of the catalog's platforms and links, the rows `dsgd platforms`
// prints and writes: a platform's summary (nodes, cores, devices, peak, its node link) with its topology and what
// joins a node's parts; a link's alpha and beta.

#include "platforms/catalog.hpp"
#include "reports/results.hpp"

namespace dsgd::platforms {

reports::Entry to_entry(const Platform& platform);
reports::Entry to_entry(const Link& link);

}  // namespace dsgd::platforms
