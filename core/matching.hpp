#pragma once
// MPI's matching rule, written once for the executors that match messages themselves (measure/threads/comm.cpp,
// simulate/simgrid/comm.cpp; the MPI executor leaves it to MPI). A receive names a source (or kAnySource) and a tag;
// a message carries its source and tag. An arriving message goes to the oldest posted receive that accepts it, else
// waits among the unexpected messages; a new receive takes the oldest unexpected message it accepts, else is posted.
// Both queues are FIFO, so messages of one (source, destination, tag) never overtake each other (core/comm.hpp).
//
// The queues hold the executor's own handles: `Receive` for a posted receive (a pointer to its state), `Message` for
// an unexpected message (its payload). The caller locks what needs locking.

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

#include "core/comm.hpp"

namespace dsgd {

// What a message says of itself.
struct Envelope {
  int source = 0;
  Tag tag = 0;
};

// What a receive asks for.
struct ReceivePattern {
  int source = kAnySource;
  Tag tag = 0;
  bool accepts(const Envelope& message) const {
    return message.tag == tag && (source == kAnySource || source == message.source);
  }
};

template <typename Receive, typename Message>
class MatchQueues {
 public:
  // A message arrives: removes and returns the oldest posted receive that accepts it, or nullopt (then the caller
  // either queues the message with add_unexpected or keeps it as it likes).
  std::optional<Receive> match_arrival(const Envelope& message) {
    const auto found =
        std::find_if(posted_.begin(), posted_.end(), [&](const auto& posted) { return posted.first.accepts(message); });
    if (found == posted_.end()) return std::nullopt;
    Receive receive = std::move(found->second);
    posted_.erase(found);
    return receive;
  }

  // A receive is posted: removes and returns the oldest unexpected message it accepts with its envelope, or nullopt
  // (then the caller posts the receive with add_posted).
  std::optional<std::pair<Envelope, Message>> match_receive(const ReceivePattern& pattern) {
    const auto found = std::find_if(unexpected_.begin(), unexpected_.end(),
                                    [&](const auto& arrived) { return pattern.accepts(arrived.first); });
    if (found == unexpected_.end()) return std::nullopt;
    std::pair<Envelope, Message> arrived = std::move(*found);
    unexpected_.erase(found);
    return arrived;
  }

  void add_posted(const ReceivePattern& pattern, Receive receive) { posted_.emplace_back(pattern, std::move(receive)); }
  void add_unexpected(const Envelope& envelope, Message message) {
    unexpected_.emplace_back(envelope, std::move(message));
  }

  // Forgets a posted receive nobody will wait for (compared with ==). Returns whether it was posted.
  bool withdraw(const Receive& receive) {
    const auto found =
        std::find_if(posted_.begin(), posted_.end(), [&](const auto& posted) { return posted.second == receive; });
    if (found == posted_.end()) return false;
    posted_.erase(found);
    return true;
  }

  std::size_t posted_count() const { return posted_.size(); }
  std::size_t unexpected_count() const { return unexpected_.size(); }

 private:
  std::deque<std::pair<ReceivePattern, Receive>> posted_;  // posting order
  std::deque<std::pair<Envelope, Message>> unexpected_;    // arrival order
};

}  // namespace dsgd
