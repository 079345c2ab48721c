#include "core/group_comm.hpp"

#include <algorithm>
#include <limits>

namespace dsgd {

namespace {

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

// A request of the parent whose Status is translated into the group's ranks and tags when it completes.
class GroupRequest final : public Request {
 public:
  GroupRequest(const GroupComm& group, RequestPtr request) : group_(group), request_(std::move(request)) {}
  Status wait() override {
    Status status = request_->wait();
    if (status.source != kAnySource) status.source = group_.group_rank_of(status.source);  // (a recorded schedule's)
    status.tag -= group_.tag_offset();
    return status;
  }

 private:
  const GroupComm& group_;
  RequestPtr request_;  // its destructor waits for it if nobody did
};

}  // namespace

Tag group_tag_offset(int index) {
  if (index < 0 || index >= kGroupTagBlocks) {
    throw InputError("group tag block " + std::to_string(index) + " is out of range [0, " +
                     std::to_string(kGroupTagBlocks) + ")");
  }
  return index * kGroupTagSpan;
}

GroupComm::GroupComm(Comm& parent, std::vector<int> members, Tag tag_offset)
    : parent_(parent), members_(std::move(members)), tag_offset_(tag_offset) {
  const std::string where = "group " + ranks_text(members_) + " of rank " + std::to_string(parent.rank()) + ": ";
  if (members_.empty()) throw InputError(where + "a group needs at least one member");
  if (tag_offset < 0 || tag_offset % kGroupTagSpan != 0) {
    throw InputError(where + "tag offset " + std::to_string(tag_offset) + " is not a block of " +
                     std::to_string(kGroupTagSpan) + " tags (group_tag_offset(k), 0 <= k < " +
                     std::to_string(kGroupTagBlocks) + ")");
  }
  by_world_rank_.reserve(members_.size());
  for (std::size_t i = 0; i < members_.size(); ++i) {
    const int world_rank = members_[i];
    if (world_rank < 0 || world_rank >= parent.size()) {
      throw InputError(where + "member " + std::to_string(world_rank) + " is out of range [0, " +
                       std::to_string(parent.size()) + ")");
    }
    by_world_rank_.emplace_back(world_rank, static_cast<int>(i));
  }
  std::sort(by_world_rank_.begin(), by_world_rank_.end());
  const auto twin = std::adjacent_find(by_world_rank_.begin(), by_world_rank_.end(),
                                       [](const auto& a, const auto& b) { return a.first == b.first; });
  if (twin != by_world_rank_.end()) {
    throw InputError(where + "rank " + std::to_string(twin->first) + " is a member twice");
  }
  const auto mine = std::lower_bound(by_world_rank_.begin(), by_world_rank_.end(), std::pair{parent.rank(), 0});
  if (mine == by_world_rank_.end() || mine->first != parent.rank()) {
    throw InputError(where + "the group does not contain rank " + std::to_string(parent.rank()));
  }
  rank_ = mine->second;
}

int GroupComm::group_rank_of(int world_rank) const {
  const auto found = std::lower_bound(by_world_rank_.begin(), by_world_rank_.end(), std::pair{world_rank, 0});
  if (found == by_world_rank_.end() || found->first != world_rank) {
    throw CommError("rank " + std::to_string(parent_.rank()) + " (group rank " + std::to_string(rank_) +
                    "): world rank " + std::to_string(world_rank) + " is not in the group " + ranks_text(members_) +
                    " (a group receiving from any rank needs a tag offset of its own; core/group_comm.hpp)");
  }
  return found->second;
}

int GroupComm::node_of(int rank) const {
  check_peer(rank, /*any_allowed=*/false, "node_of");
  return parent_.node_of(members_[static_cast<std::size_t>(rank)]);
}

Tag GroupComm::world_tag(Tag tag, std::string_view operation) const {
  if (tag < 0 || tag >= kGroupTagSpan) {
    throw CommError("rank " + std::to_string(rank_) + " of group " + ranks_text(members_) + ": " +
                    std::string(operation) + " tag " + std::to_string(tag) + " is out of a group's range [0, " +
                    std::to_string(kGroupTagSpan) + ")");
  }
  return tag + tag_offset_;  // the constructor keeps offset + kGroupTagSpan - 1 within Tag
}

RequestPtr GroupComm::isend(int destination, Tag tag, const void* data, std::size_t bytes, Category category) {
  check_peer(destination, /*any_allowed=*/false, "send to");
  const Tag sent_tag = world_tag(tag, "send");
  return std::make_unique<GroupRequest>(
      *this, parent_.isend(members_[static_cast<std::size_t>(destination)], sent_tag, data, bytes, category));
}

RequestPtr GroupComm::irecv(int source, Tag tag, void* data, std::size_t bytes, Category category) {
  check_peer(source, /*any_allowed=*/true, "receive from");
  const Tag received_tag = world_tag(tag, "receive");
  const int world_source = source == kAnySource ? kAnySource : members_[static_cast<std::size_t>(source)];
  return std::make_unique<GroupRequest>(*this, parent_.irecv(world_source, received_tag, data, bytes, category));
}

std::shared_ptr<SharedVector> GroupComm::shared_vector(const std::string& name, std::size_t /*count*/,
                                                       std::span<const float> /*initial*/) {
  throw UnavailableError("shared vector '" + name + "': a group has none (shared vectors belong to the whole " +
                         std::string(parent_.executor()) + " world; make them on the parent)");
}

std::shared_ptr<DatagramEndpoint> GroupComm::datagrams(const DatagramOptions& /*options*/) {
  throw UnavailableError("datagrams: a group has no unreliable channel (it belongs to the whole " +
                         std::string(parent_.executor()) + " world; open it on the parent)");
}

// --- 3-D parallel layouts ------------------------------------------------------------------------------------------

namespace {

std::string grid_text(const Grid3d& grid) {
  return "3-D grid tp " + std::to_string(grid.tp) + " x pp " + std::to_string(grid.pp) + " x dp " +
         std::to_string(grid.dp);
}

void check_grid(const Grid3d& grid) {
  if (grid.tp < 1 || grid.pp < 1 || grid.dp < 1)
    throw InputError(grid_text(grid) + ": every extent must be at least 1");
  if (static_cast<long long>(grid.tp) * grid.pp * grid.dp > std::numeric_limits<int>::max()) {
    throw InputError(grid_text(grid) + ": more ranks than an int holds");
  }
}

// The world ranks of `world_rank`'s line along one axis: `coords` with `index` running over [0, extent).
template <typename Set>
std::vector<int> line(const Grid3d& grid, int world_rank, int extent, Set set) {
  GridCoords coords = grid_coords(grid, world_rank);
  std::vector<int> ranks;
  ranks.reserve(static_cast<std::size_t>(extent));
  for (int index = 0; index < extent; ++index) {
    set(coords, index);
    ranks.push_back(grid_rank(grid, coords));
  }
  return ranks;
}

}  // namespace

GridCoords grid_coords(const Grid3d& grid, int world_rank) {
  check_grid(grid);
  if (world_rank < 0 || world_rank >= grid.size()) {
    throw InputError(grid_text(grid) + ": rank " + std::to_string(world_rank) + " is out of range [0, " +
                     std::to_string(grid.size()) + ")");
  }
  return {world_rank % grid.tp, world_rank / grid.tp % grid.pp, world_rank / (grid.tp * grid.pp)};
}

int grid_rank(const Grid3d& grid, const GridCoords& coords) {
  check_grid(grid);
  if (coords.tp_index < 0 || coords.tp_index >= grid.tp || coords.pp_index < 0 || coords.pp_index >= grid.pp ||
      coords.dp_index < 0 || coords.dp_index >= grid.dp) {
    throw InputError(grid_text(grid) + ": coordinates (" + std::to_string(coords.tp_index) + ", " +
                     std::to_string(coords.pp_index) + ", " + std::to_string(coords.dp_index) + ") are outside it");
  }
  return coords.tp_index + grid.tp * (coords.pp_index + grid.pp * coords.dp_index);
}

std::vector<int> tensor_group(const Grid3d& grid, int world_rank) {
  return line(grid, world_rank, grid.tp, [](GridCoords& c, int i) { c.tp_index = i; });
}

std::vector<int> pipeline_group(const Grid3d& grid, int world_rank) {
  return line(grid, world_rank, grid.pp, [](GridCoords& c, int i) { c.pp_index = i; });
}

std::vector<int> data_group(const Grid3d& grid, int world_rank) {
  return line(grid, world_rank, grid.dp, [](GridCoords& c, int i) { c.dp_index = i; });
}

}  // namespace dsgd
