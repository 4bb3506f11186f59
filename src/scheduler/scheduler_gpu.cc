// Copyright Weft authors. The scheduler core's GPUs (issue 32, docs/gpu.md): each node's GPUs
// and their free shares, which GPUs a container gets, and what the fit index sees of them.
//
// A node's gpu-milli room, as the fit index and Usable() see it, is exact for every valid ask:
// 1000 x its wholly free healthy GPUs when it has one, else the largest free share of a healthy
// GPU. An ask of m < 1000 fits iff some healthy GPU has m free; an ask of k x 1000 iff k
// healthy GPUs are wholly free; both hold iff m (or k x 1000) <= that room.
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "scheduler/scheduler.h"

namespace weft::scheduler {
namespace {

constexpr const char* kGpuType = "gpu";

}  // namespace

absl::StatusOr<std::vector<NodeGpu>> Scheduler::MakeNodeGpus(const NodeSpec& spec) const {
  std::vector<NodeGpu> gpus;
  const int64_t milli = spec.capacity[kGpuMilli];
  if (spec.gpus.empty()) {
    if (milli % kWholeDeviceMilli != 0)
      return absl::InvalidArgumentError(
          absl::StrCat("node '", spec.name, "': capacity gpu-milli=", milli,
                       " is not a whole number of GPUs (a multiple of 1000)"));
    for (int32_t i = 0; i < milli / kWholeDeviceMilli; ++i) {
      NodeGpu g;
      g.device.index = i;
      gpus.push_back(std::move(g));
    }
    return gpus;
  }
  absl::flat_hash_set<int32_t> seen;
  for (const GpuDevice& d : spec.gpus) {
    if (d.index < 0 || !seen.insert(d.index).second)
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", spec.name, "': GPU index ", d.index, " is negative or given twice"));
    NodeGpu g;
    g.device = d;
    gpus.push_back(std::move(g));
  }
  if (milli != GpuCapacity(gpus))
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", spec.name, "': capacity gpu-milli=", milli, " is not 1000 x its ",
        GpuCapacity(gpus) / kWholeDeviceMilli, " healthy GPU(s)"));
  return gpus;
}

int64_t Scheduler::GpuCapacity(const std::vector<NodeGpu>& gpus) {
  int64_t healthy = 0;
  for (const NodeGpu& g : gpus) healthy += g.device.healthy ? 1 : 0;
  return healthy * kWholeDeviceMilli;
}

int64_t Scheduler::GpuRoom(const NodeState& n) {
  int64_t whole = 0;
  int32_t best = 0;
  for (const NodeGpu& g : n.gpus) {
    if (!g.device.healthy) continue;
    if (g.free_milli == kWholeDeviceMilli) ++whole;
    best = std::max(best, g.free_milli);
  }
  return whole > 0 ? whole * kWholeDeviceMilli : best;
}

Resource Scheduler::NodeRoom(const NodeState& n) {
  Resource room = n.capacity - n.allocated;
  room[kGpuMilli] = n.gpus.empty() ? 0 : GpuRoom(n);
  return room;
}

bool Scheduler::GpuFits(const NodeState& n, int64_t milli, bool same_group) {
  if (milli <= 0) return true;
  if (milli < kWholeDeviceMilli || !same_group) return milli <= GpuRoom(n);
  absl::flat_hash_map<std::string_view, int64_t> whole;
  for (const NodeGpu& g : n.gpus) {
    if (g.device.healthy && g.free_milli == kWholeDeviceMilli &&
        ++whole[g.device.group] * kWholeDeviceMilli >= milli)
      return true;
  }
  return false;
}

gpu::GpuNode Scheduler::GpuView(const NodeState& n) {
  gpu::GpuNode v;
  const Resource room = NodeRoom(n);
  v.cpu_milli_free = room[kVcores] * 1000;
  v.memory_mib_free = room[kMemoryMb];
  v.device_free_milli.reserve(n.gpus.size());
  for (const NodeGpu& g : n.gpus)
    v.device_free_milli.push_back(g.device.healthy ? g.free_milli : 0);
  if (!n.gpus.empty()) v.model = n.gpus.front().device.model;
  return v;
}

std::vector<DeviceShare> Scheduler::ChooseGpus(const NodeState& n, int64_t milli,
                                               bool same_group) const {
  std::vector<DeviceShare> out;
  if (milli <= 0) return out;
  if (milli < kWholeDeviceMilli || !same_group) {
    // The placement library's device choice: a share from the healthy GPU with the least room
    // that holds it (partly used GPUs fill up before a whole one is broken), whole GPUs the
    // first wholly free ones.
    gpu::GpuAsk ask;
    ask.gpu_milli = milli;
    const std::optional<gpu::DeviceChoice> c = gpu::AssignDevices(GpuView(n), ask);
    if (!c.has_value()) return out;
    for (int32_t pos : c->devices())
      out.push_back({kGpuType, n.gpus[pos].device.index, c->milli_per_device});
    return out;
  }
  const int64_t k = milli / kWholeDeviceMilli;
  // Whole GPUs of one topology group: from the group with the fewest wholly free GPUs that
  // still holds all k, lowest indices first.
  std::vector<const NodeGpu*> free;
  for (const NodeGpu& g : n.gpus) {
    if (g.device.healthy && g.free_milli == kWholeDeviceMilli) free.push_back(&g);
  }
  std::sort(free.begin(), free.end(), [](const NodeGpu* a, const NodeGpu* b) {
    return a->device.index < b->device.index;
  });
  absl::flat_hash_map<std::string_view, int64_t> count;
  for (const NodeGpu* g : free) ++count[g->device.group];
  std::string_view pick;
  int64_t pick_count = -1;
  for (const auto& [group, c] : count) {
    if (c >= k && (pick_count < 0 || c < pick_count || (c == pick_count && group < pick))) {
      pick = group;
      pick_count = c;
    }
  }
  if (pick_count < 0) return out;
  std::erase_if(free, [&](const NodeGpu* g) { return g->device.group != pick; });
  for (int64_t i = 0; i < k; ++i)
    out.push_back({kGpuType, free[i]->device.index, kWholeDeviceMilli});
  return out;
}

bool Scheduler::ChargeGpus(NodeState& n, const std::vector<DeviceShare>& shares, int sign) {
  bool ok = true;
  for (const DeviceShare& s : shares) {
    auto it = std::find_if(n.gpus.begin(), n.gpus.end(),
                           [&](const NodeGpu& g) { return g.device.index == s.index; });
    if (it == n.gpus.end()) {
      ok = false;
      continue;
    }
    it->free_milli -= sign * s.milli;
    if (it->free_milli < 0 || it->free_milli > kWholeDeviceMilli) ok = false;
    it->free_milli = std::clamp(it->free_milli, 0, kWholeDeviceMilli);
  }
  return ok;
}

absl::Status Scheduler::CheckGpuShares(const NodeState& n, const Resource& r,
                                       const std::vector<DeviceShare>& shares) const {
  int64_t total = 0;
  for (const DeviceShare& s : shares) {
    auto it = std::find_if(n.gpus.begin(), n.gpus.end(),
                           [&](const NodeGpu& g) { return g.device.index == s.index; });
    if (s.type != kGpuType || it == n.gpus.end())
      return absl::InvalidArgumentError(absl::StrCat("node '", n.name, "' has no device ",
                                                     FormatDeviceShare(s)));
    if (it->free_milli < s.milli)
      return absl::FailedPreconditionError(
          absl::StrCat("device share ", FormatDeviceShare(s), " does not fit on node '", n.name,
                       "', whose GPU ", s.index, " has ", it->free_milli, " milli free"));
    total += s.milli;
  }
  if (total != r[kGpuMilli])
    return absl::InvalidArgumentError(absl::StrCat("device shares total ", total,
                                                   " milli, but the resource has gpu-milli=",
                                                   r[kGpuMilli]));
  return absl::OkStatus();
}

absl::Status Scheduler::SetNodeGpus(absl::string_view name, const std::vector<GpuDevice>& gpus) {
  auto it = node_by_name_.find(name);
  if (it == node_by_name_.end())
    return absl::NotFoundError(absl::StrCat("node '", name, "' is not registered"));
  NodeState& n = nodes_[it->second];
  if (gpus.size() != n.gpus.size())
    return absl::InvalidArgumentError(absl::StrCat("node '", name, "' reports ", gpus.size(),
                                                   " GPU(s); it registered ", n.gpus.size()));
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].index != n.gpus[i].device.index)
      return absl::InvalidArgumentError(absl::StrCat("node '", name, "': GPU #", i, " has index ",
                                                     gpus[i].index, "; it registered ",
                                                     n.gpus[i].device.index));
  }
  for (size_t i = 0; i < gpus.size(); ++i) n.gpus[i].device = gpus[i];
  return UpdateNode(name, n.capacity, n.schedulable);  // it sets gpu-milli from the GPUs
}

namespace {

constexpr size_t kGpuAskMemory = 1024;

gpu::GpuAsk AskOf(const Resource& r) {
  gpu::GpuAsk a;
  a.cpu_milli = r[kVcores] * 1000;
  a.memory_mib = r[kMemoryMb];
  a.gpu_milli = r[kGpuMilli];
  return a;
}

}  // namespace

void Scheduler::NoteGpuAsk(const Resource& r, int32_t count) {
  // Each container asked counts once (a large ask at most 16 times, so that one app does not
  // stand for the whole workload).
  for (int32_t i = 0; i < std::clamp(count, 0, 16); ++i) {
    if (gpu_asks_.size() < kGpuAskMemory) {
      gpu_asks_.push_back(AskOf(r));
    } else {
      gpu_asks_[gpu_ask_next_] = AskOf(r);
      gpu_ask_next_ = (gpu_ask_next_ + 1) % kGpuAskMemory;
    }
    gpu_workload_dirty_ = true;
  }
}

void Scheduler::CountHosted(NodeId node, const Resource& r, int sign) {
  if (r[kGpuMilli] <= 0) return;
  gpu::HostedTaskCounts& h = gpu_hosted_[node];
  h[gpu::GpuClassOf(r[kGpuMilli])] += sign;
}

NodeId Scheduler::FindGpuNode(const AppState& app, const Resource& r,
                              std::vector<DeviceShare>* gpus) {
  gpus->clear();
  if (gpu_policy_ == nullptr || gpu_policy_name_ != config_.gpu_placement || gpu_workload_dirty_) {
    if (gpu_workload_dirty_ && !gpu_asks_.empty()) {
      absl::StatusOr<gpu::TargetWorkload> w = gpu::TargetWorkload::FromAsks(gpu_asks_);
      if (w.ok()) gpu_workload_ = std::make_unique<gpu::TargetWorkload>(*std::move(w));
    }
    gpu_workload_dirty_ = false;
    absl::StatusOr<std::unique_ptr<gpu::GpuPlacement>> p = gpu::MakeGpuPlacement(
        config_.gpu_placement, gpu_workload_.get(), /*seed=*/pass_id_ + 1);
    // fgd without a workload yet (no GPU ask seen): best-fit until there is one.
    if (!p.ok()) p = gpu::MakeGpuPlacement("best-fit", nullptr, 1);
    if (!p.ok()) return FindAnywhere(app, r);
    gpu_policy_ = *std::move(p);
    gpu_policy_name_ = config_.gpu_placement;
  }
  // Up to the candidate budget of usable nodes, rack by rack from the rotating cursor.
  const size_t budget = static_cast<size_t>(config_.gpu_placement_candidates);
  std::vector<NodeId> ids;
  if (rack_index_.size() > 0) {
    const int start = rack_cursor_ < rack_index_.size() ? rack_cursor_ : 0;
    int rack = rack_index_.FindFrom(r, start);
    const int first_rack = rack;
    while (rack >= 0 && ids.size() < budget) {
      const Rack& rk = racks_[rack];
      for (int slot = rk.nodes.FindFrom(r, 0); slot >= 0 && ids.size() < budget;) {
        const NodeId id = rk.slot_node[slot];
        if (Usable(app, id, r)) ids.push_back(id);
        if (slot + 1 >= rk.nodes.size()) break;
        const int next = rk.nodes.FindFrom(r, slot + 1);
        if (next <= slot) break;  // wrapped around
        slot = next;
      }
      rack = rack_index_.FindFrom(r, rack + 1 < rack_index_.size() ? rack + 1 : 0);
      if (rack == first_rack) break;
    }
  }
  if (ids.empty()) return -1;
  std::vector<gpu::GpuNode> views(ids.size());
  std::vector<const gpu::GpuNode*> ptrs(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    views[i] = GpuView(nodes_[ids[i]]);
    if (auto h = gpu_hosted_.find(ids[i]); h != gpu_hosted_.end()) views[i].hosted = h->second;
    ptrs[i] = &views[i];
  }
  const gpu::PickedNode pick = gpu::PickBestNode(*gpu_policy_, ptrs, AskOf(r), nullptr);
  if (pick.index < 0) return -1;
  const NodeId id = ids[pick.index];
  const NodeState& n = nodes_[id];
  for (int32_t pos : pick.verdict.devices.devices())
    gpus->push_back({kGpuType, n.gpus[pos].device.index, pick.verdict.devices.milli_per_device});
  return id;
}

std::vector<DeviceShare> Scheduler::ContainerDevices(ContainerId id) const {
  auto it = gpu_shares_.find(id);
  return it == gpu_shares_.end() ? std::vector<DeviceShare>{} : it->second;
}

}  // namespace weft::scheduler
