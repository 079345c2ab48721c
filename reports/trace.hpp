#pragma once
// A timeline of every rank's steps as a Chrome trace-event file: the JSON that Perfetto UI (ui.perfetto.dev) and
// chrome://tracing load. One thread per rank, one slice per step, named after its time-breakdown category, so a
// run's overlap of computation, communication and waiting can be seen rather than inferred from totals.
//
// File layout (docs/results-schema.md "Traces"):
//   {"traceEvents": [
//      {"ph":"M","pid":0,"tid":R,"name":"thread_name","args":{"name":"rank R"}},   one per rank in the input
//      {"ph":"X","pid":0,"tid":R,"name":"<category>","ts":<us>,"dur":<us>},         one per kept event
//    ],
//    "displayTimeUnit": "ms",
//    "otherData": {<caller's metadata>, "events_in", "events_written", "events_dropped", "max_events",
//                  "drop_rule"}}
// Times are microseconds (Chrome's unit), converted from the executor's seconds (wall or simulated).

#include <cstddef>
#include <filesystem>
#include <map>
#include <span>
#include <string>

#include "core/breakdown.hpp"

namespace dsgd::reports {

// One step of one rank: the executors' timeline span (core/breakdown.hpp).
using TraceEvent = TimelineSpan;

// Bounds the file's size: long runs with many ranks produce millions of steps, and the viewers slow down or give
// up long before that (chrome://tracing at roughly a few hundred thousand events).
struct TraceLimits {
  std::size_t max_events = 200000;  // most "X" events written; metadata events are not counted
};

// What write_chrome_trace did.
struct TraceSummary {
  std::size_t events_in = 0;       // events.size()
  std::size_t events_written = 0;  // "X" events in the file, <= limits.max_events
  std::size_t events_dropped = 0;  // events_in - events_written
  std::size_t bytes = 0;           // size of the file written
};

// Writes `events` to `path` as a Chrome trace, atomically (a temporary file beside it, then a rename), creating
// parent folders. `metadata` goes into "otherData" as strings (e.g. algorithm, platform, command); bytes that are
// not valid UTF-8 are replaced by U+FFFD.
//
// The bound: when there are more than limits.max_events events, each rank keeps its earliest events (by start_s,
// ties in input order) up to a fair share of the budget. The share is the largest equal quota q with
// sum over ranks of min(count, q) <= max_events, so ranks with fewer than q events keep all of them and their
// unused share goes to the others; the budget still left after that (fewer than the number of ranks over the
// quota) goes one event each to those ranks in ascending rank order. Every rank with events keeps at least one
// whenever max_events >= the number of such ranks. Kept events are written in input order. The rule and the
// counts are recorded in "otherData".
//
// Throws InputError for max_events == 0, for an event with a negative rank, a category out of range, or a
// negative or non-finite start or duration (naming the event's index and rank), and for a metadata key that
// collides with one dsgd records ("events_in", "events_written", "events_dropped", "max_events", "drop_rule").
// Throws IoError naming the path when the file cannot be written. Either way nothing half-written is left: input
// is checked before anything is written, and `path` is either replaced whole or left as it was.
TraceSummary write_chrome_trace(const std::filesystem::path& path, std::span<const TraceEvent> events,
                                const TraceLimits& limits, const std::map<std::string, std::string>& metadata = {});

}  // namespace dsgd::reports
