#pragma once
// A group of a world's ranks seen as a world of its own (MPI_Comm_create_group's sub-communicator), so that the
// collectives written once over Comm (core/collectives.hpp) run among a subset of the ranks: the tensor-parallel,
// pipeline and data-parallel groups of 3-D parallel training (docs/design.md "The comm interface").
//
// Time and bytes: a group has no clock or transport of its own. Its messages and compute steps are the parent's
// calls, so the parent's executor charges their time to the parent's breakdown and counts their bytes in the
// parent's bytes_sent(), as it would had the caller made them on the parent. The group's own breakdown() holds only
// what is charged on the group directly (Comm::charge, which charges the parent as well); its bytes_sent() stays 0.
//
// Tags: the world's tag space is cut into blocks of kGroupTagSpan tags. A group's own tags lie in [0, kGroupTagSpan)
// -- algorithm tags below kFirstCollectiveTag, collective tags from it up, as in the world -- and a group with
// tag_offset k * kGroupTagSpan sends them as world tags in block k. So every block repeats the world's split
// (algorithm tags in its lower half, collective tags in its upper), and groups with different offsets never share a
// tag. Block 0 is the world's own: offset 0 suits a group whose pairs of ranks have no other traffic on its tags at
// the same time (the hierarchical allreduces' inner and outer groups).
// Under MPI a world tag must also be at most MPI_TAG_UB (the MPI executor refuses it with CommError otherwise), which
// the standard lets be as low as 32767; Open MPI's ob1 layer allows every block.

#include <cstddef>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/collectives.hpp"
#include "core/comm.hpp"

namespace dsgd {

// The tags one group owns: twice kFirstCollectiveTag, algorithm tags and collective tags alike.
inline constexpr Tag kGroupTagSpan = 2 * kFirstCollectiveTag;
// How many blocks Tag holds: block 1023 ends at the largest Tag.
inline constexpr int kGroupTagBlocks = static_cast<int>(std::numeric_limits<Tag>::max() / kGroupTagSpan) + 1;
// The tag_offset of block `index`: index * kGroupTagSpan. InputError unless 0 <= index < kGroupTagBlocks.
Tag group_tag_offset(int index);

// A group of the world's ranks seen as a world of its own: rank() is this rank's index in `members`, size() the
// group's size, and messages to group rank i go to world rank members[i]. Everything else (clock, executor, payload,
// compute) is the parent's. Ranks of two groups that overlap in time must use distinct `tag_offset`s wherever a
// pair of ranks could be in both (not needed when every pair is in at most one group). A receive from kAnySource
// matches any world rank that sends this rank the same world tag, so a group that receives from kAnySource needs an
// offset of its own among all the groups that send to its ranks at the same time; a message from a rank outside the
// group is then a CommError.
//
// Each rank of the group constructs its own GroupComm over its own parent, with equal `members` and `tag_offset`.
// Groups nest (a group of a group) with offset 0 inside: the inner group's tags must stay in the outer one's span.
class GroupComm final : public Comm {
 public:
  // Throws InputError if `members` is empty, has duplicates or ranks outside the parent, or does not contain
  // parent.rank(); or if `tag_offset` is not group_tag_offset(k) for some k >= 0 that keeps its block within Tag.
  // `parent` must outlive the group.
  GroupComm(Comm& parent, std::vector<int> members, Tag tag_offset = 0);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  double now_s() const override { return parent_.now_s(); }
  std::string_view executor() const override { return parent_.executor(); }
  bool has_payload() const override { return parent_.has_payload(); }
  // The parent's node of world rank members[rank]. CommError for a rank outside [0, size()).
  int node_of(int rank) const override;

  // The parent's isend/irecv to members[peer] (kAnySource stays kAnySource) with tag + tag_offset. CommError for a
  // peer outside the group or a tag outside [0, kGroupTagSpan). A request's Status names group ranks and group tags.
  RequestPtr isend(int destination, Tag tag, const void* data, std::size_t bytes, Category category) override;
  RequestPtr irecv(int source, Tag tag, void* data, std::size_t bytes, Category category) override;

  void compute(const ComputeStep& step) override { parent_.compute(step); }
  // A member's own work runs where its parent's does (a simulation's kernel pool, deferred work).
  void run_side_by_side(std::span<const std::function<void()>> kernels) override { parent_.run_side_by_side(kernels); }
  int side_by_side() const override { return parent_.side_by_side(); }
  std::future<void> start_beside(std::function<void()> work) override { return parent_.start_beside(std::move(work)); }
  void set_up(const std::function<void()>& work) override { parent_.set_up(work); }

  // run_collective and start_stream keep Comm's defaults: the collective's body runs here message by message (an
  // executor simulating a whole collective from the parent would see the parent's world, not the group's), and a
  // stream's body runs inside join().

  // UnavailableError: shared vectors and datagrams belong to the whole world, not to a group.
  std::shared_ptr<SharedVector> shared_vector(const std::string& name, std::size_t count,
                                              std::span<const float> initial) override;
  std::shared_ptr<DatagramEndpoint> datagrams(const DatagramOptions& options) override;

  Comm& parent() const { return parent_; }
  const std::vector<int>& members() const { return members_; }
  Tag tag_offset() const { return tag_offset_; }
  // The group rank of world rank `world_rank`; CommError if it is not a member.
  int group_rank_of(int world_rank) const;

 protected:
  void charged(Category category, double seconds) override { parent_.charge(category, seconds); }

 private:
  Tag world_tag(Tag tag, std::string_view operation) const;

  Comm& parent_;
  std::vector<int> members_;
  std::vector<std::pair<int, int>> by_world_rank_;  // (world rank, group rank), sorted by world rank
  Tag tag_offset_;
  int rank_ = 0;
};

// --- 3-D parallel layouts ----------------------------------------------------------------------------------------
// Megatron-LM's rank order: tensor-parallel ranks adjacent, then pipeline stages, then data-parallel replicas:
// world rank = tp_index + tp * (pp_index + pp * dp_index).
struct Grid3d {
  int tp = 1, pp = 1, dp = 1;
  int size() const { return tp * pp * dp; }
};
struct GridCoords {
  int tp_index = 0, pp_index = 0, dp_index = 0;
  bool operator==(const GridCoords&) const = default;
};
// The coordinates of `world_rank`. Throws InputError unless every extent is >= 1 and 0 <= world_rank < grid.size();
// that grid.size() equals the world's size is the caller's to check.
GridCoords grid_coords(const Grid3d& grid, int world_rank);
// The world rank at `coords` (the inverse of grid_coords). Throws InputError for coordinates outside the grid.
int grid_rank(const Grid3d& grid, const GridCoords& coords);
// The world ranks of `world_rank`'s tensor-parallel group (equal pp and dp index), in tp order; likewise its pipeline
// group (in stage order) and its data-parallel group (in replica order). Each contains world_rank. Errors as
// grid_coords.
std::vector<int> tensor_group(const Grid3d& grid, int world_rank);
std::vector<int> pipeline_group(const Grid3d& grid, int world_rank);
std::vector<int> data_group(const Grid3d& grid, int world_rank);

}  // namespace dsgd
