#include "scheduler/policies/ras/ras_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

namespace weft::scheduler::ras {

double MapUtility(int64_t s_alloc, int64_t s_req, int64_t s_pend) {
  if (s_pend <= 0 || s_alloc >= s_pend) return 1.0;
  if (s_alloc <= 0) return kMinusInfinity;
  const int64_t req = std::clamp<int64_t>(s_req, 1, s_pend);
  if (s_alloc < req) {  // req >= 2 here, since s_alloc >= 1
    return std::log(static_cast<double>(s_alloc)) / std::log(static_cast<double>(req)) - 1.0;
  }
  // req <= s_alloc < s_pend, so s_pend - req > 0.
  return static_cast<double>(s_alloc - req) / static_cast<double>(s_pend - req);
}

double ReduceUtility(int64_t r_alloc, int64_t r_pend) {
  if (r_pend <= 0 || r_alloc >= r_pend) return 0.0;
  if (r_alloc <= 0) return -1.0;
  // 1 <= r_alloc < r_pend, so r_pend >= 2.
  return std::log(static_cast<double>(r_alloc)) / std::log(static_cast<double>(r_pend)) - 1.0;
}

double JobUtility(int64_t s_alloc, int64_t s_req, int64_t s_pend, int64_t r_alloc, int64_t r_pend) {
  return std::min(1.0, MapUtility(s_alloc, s_req, s_pend) + ReduceUtility(r_alloc, r_pend));
}

int64_t RequiredMapSlots(int64_t s_pend, double avg_task_ms, int64_t goal_ms, int64_t now_ms) {
  if (s_pend <= 0) return 0;
  if (goal_ms < 0 || !(avg_task_ms > 0)) return s_pend;
  const double waves = std::floor(static_cast<double>(goal_ms - now_ms) / avg_task_ms);
  if (waves < 1) return s_pend;
  const double req = std::ceil(static_cast<double>(s_pend) / waves);
  return std::clamp<int64_t>(static_cast<int64_t>(req), 1, s_pend);
}

Load TaskLoad(bool has_usage, const TaskUsage& usage, const Resource& request,
              const Resource& capacity) {
  if (has_usage) return Load{usage.cpu, usage.memory, usage.io, usage.io};
  auto share = [&](int type) {
    if (request[type] <= 0) return 0.0;
    if (capacity[type] <= 0) return 2.0;  // more than the node has: never fits
    return static_cast<double>(request[type]) / static_cast<double>(capacity[type]);
  };
  return Load{share(kVcores), share(kMemoryMb), share(kDiskMbps), share(kNetworkMbps)};
}

bool LoadFits(const Load& used, const Load& add) {
  for (int d = 0; d < kNumDims; ++d) {
    if (used[d] + add[d] > 1.0 + 1e-9) return false;
  }
  return true;
}

double PeakAfter(const Load& used, const Load& add) {
  double peak = 0;
  for (int d = 0; d < kNumDims; ++d) peak = std::max(peak, used[d] + add[d]);
  return peak;
}

double UtilityOf(const JobModel& job, int64_t s_alloc, int64_t r_alloc) {
  return JobUtility(s_alloc, job.s_req, job.s_pend, r_alloc, job.r_pend);
}

namespace {

// The mutable state of one run of the placement algorithm.
class Planner {
 public:
  explicit Planner(const PlacementModel& m) : m_(m) {
    const size_t n_nodes = m.nodes.size();
    used_.resize(n_nodes);
    free_.resize(n_nodes);
    reduces_on_.assign(n_nodes, 0);
    for (size_t n = 0; n < n_nodes; ++n) {
      used_[n] = m.nodes[n].used;
      free_[n] = m.nodes[n].free;
    }
    out_.slots.resize(m.phases.size());
    loads_.resize(m.phases.size());
    fresh_.assign(m.phases.size(), 0);
    s_alloc_.assign(m.jobs.size(), 0);
    r_alloc_.assign(m.jobs.size(), 0);
    job_phases_.resize(m.jobs.size());
    for (size_t p = 0; p < m.phases.size(); ++p) {
      const PhaseModel& ph = m.phases[p];
      job_phases_[ph.job].push_back(static_cast<int32_t>(p));
      out_.slots[p] = ph.running;
      out_.slots[p].resize(n_nodes, 0);
      loads_[p].resize(n_nodes);
      int64_t running = 0;
      for (size_t n = 0; n < n_nodes; ++n) {
        loads_[p][n] = TaskLoad(ph.has_usage, ph.usage, ph.request, m.nodes[n].capacity);
        running += out_.slots[p][n];
        if (ph.kind == PhaseKind::kReduceLike) reduces_on_[n] += out_.slots[p][n];
      }
      (IsMap(p) ? s_alloc_ : r_alloc_)[ph.job] += running;
    }
    out_.utility.resize(m.jobs.size());
    for (size_t j = 0; j < m.jobs.size(); ++j) Rescore(static_cast<int32_t>(j));
  }

  Placement Run(int32_t max_rounds) {
    PlaceReduces();
    PlaceMaps(max_rounds);
    return std::move(out_);
  }

 private:
  bool IsMap(size_t p) const { return m_.phases[p].kind == PhaseKind::kMapLike; }
  int64_t Running(size_t p, size_t n) const {
    return n < m_.phases[p].running.size() ? m_.phases[p].running[n] : 0;
  }
  bool WantsMore(size_t p) const { return fresh_[p] < m_.phases[p].pending; }
  void Rescore(int32_t j) { out_.utility[j] = UtilityOf(m_.jobs[j], s_alloc_[j], r_alloc_[j]); }

  // Whether one more task of phase p fits on node n, given `extra_free` load and request
  // released there first (a slot being taken away).
  bool Fits(size_t p, size_t n, const Load& released = Load{},
            const Resource& released_req = Resource()) const {
    const PhaseModel& ph = m_.phases[p];
    if (!m_.nodes[n].usable || n >= ph.allowed.size() || !ph.allowed[n]) return false;
    Load used = used_[n];
    for (int d = 0; d < kNumDims; ++d) used[d] -= released[d];
    return LoadFits(used, loads_[p][n]) && ph.request.FitsIn(free_[n] + released_req);
  }

  void Add(size_t p, size_t n, int sign) {
    const PhaseModel& ph = m_.phases[p];
    int32_t& slots = out_.slots[p][n];
    if (sign > 0 && slots >= Running(p, n)) ++fresh_[p];
    if (sign < 0 && slots > Running(p, n)) --fresh_[p];
    slots += sign;
    for (int d = 0; d < kNumDims; ++d) used_[n][d] += sign * loads_[p][n][d];
    if (sign > 0) {
      free_[n] -= ph.request;
    } else {
      free_[n] += ph.request;
    }
    if (!IsMap(p)) reduces_on_[n] += sign;
    (IsMap(p) ? s_alloc_ : r_alloc_)[ph.job] += sign;
    Rescore(ph.job);
  }

  // Jobs in ascending utility; ties by index.
  std::vector<int32_t> ByUtility() const {
    std::vector<int32_t> order(m_.jobs.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return out_.utility[a] < out_.utility[b]; });
    return order;
  }

  void PlaceReduces() {
    for (int32_t j : ByUtility()) {
      for (int32_t p : job_phases_[j]) {
        if (IsMap(p)) continue;
        while (WantsMore(p)) {
          int best = -1;
          std::tuple<int32_t, int32_t, double> best_key;
          for (size_t n = 0; n < m_.nodes.size(); ++n) {
            if (!Fits(p, n)) continue;
            int32_t same = 0;
            for (int32_t q : job_phases_[j]) {
              if (!IsMap(q)) same += out_.slots[q][n];
            }
            auto key = std::make_tuple(reduces_on_[n], same, PeakAfter(used_[n], loads_[p][n]));
            if (best < 0 || key < best_key) {
              best = static_cast<int>(n);
              best_key = key;
            }
          }
          if (best < 0) break;
          Add(p, static_cast<size_t>(best), +1);
        }
      }
    }
  }

  // The best node for one more task of a map-like phase of job j: (phase, node), or (-1, -1).
  std::pair<int, int> BestMapSlot(int32_t j) const {
    std::pair<int, int> best{-1, -1};
    double best_peak = 0;
    for (int32_t p : job_phases_[j]) {
      if (!IsMap(p) || !WantsMore(p)) continue;
      for (size_t n = 0; n < m_.nodes.size(); ++n) {
        if (!Fits(p, n)) continue;
        double peak = PeakAfter(used_[n], loads_[p][n]);
        if (best.first < 0 || peak < best_peak - 1e-12) {
          best = {p, static_cast<int>(n)};
          best_peak = peak;
        }
      }
    }
    return best;
  }

  bool HasMapLeft(int32_t j) const {
    for (int32_t p : job_phases_[j]) {
      if (IsMap(p) && WantsMore(p)) return true;
    }
    return false;
  }

  // One max-min round for job `low`: moves a map-like slot from the highest-utility job that
  // stays above `low`'s utility without it, on a node where that makes room. True if moved.
  bool TakeFor(int32_t low) {
    std::vector<int32_t> order = ByUtility();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const int32_t hi = *it;
      if (hi == low || !(out_.utility[hi] > out_.utility[low])) continue;
      if (s_alloc_[hi] <= 0) continue;
      double after = UtilityOf(m_.jobs[hi], s_alloc_[hi] - 1, r_alloc_[hi]);
      if (!(after > out_.utility[low])) continue;
      for (int32_t q : job_phases_[hi]) {
        if (!IsMap(q)) continue;
        for (size_t n = 0; n < m_.nodes.size(); ++n) {
          if (out_.slots[q][n] <= 0) continue;
          for (int32_t p : job_phases_[low]) {
            if (!IsMap(p) || !WantsMore(p)) continue;
            if (!Fits(p, n, loads_[q][n], m_.phases[q].request)) continue;
            Add(q, n, -1);
            Add(p, n, +1);
            return true;
          }
        }
      }
    }
    return false;
  }

  void PlaceMaps(int32_t max_rounds) {
    std::vector<uint8_t> stuck(m_.jobs.size(), 0);
    while (true) {
      int32_t low = -1;
      for (int32_t j = 0; j < static_cast<int32_t>(m_.jobs.size()); ++j) {
        if (stuck[j] || !HasMapLeft(j)) continue;
        if (low < 0 || out_.utility[j] < out_.utility[low]) low = j;
      }
      if (low < 0) return;
      auto [p, n] = BestMapSlot(low);
      if (p >= 0) {
        Add(static_cast<size_t>(p), static_cast<size_t>(n), +1);
        continue;
      }
      if (out_.rounds < max_rounds && TakeFor(low)) {
        ++out_.rounds;
        continue;
      }
      stuck[low] = 1;  // neither placeable nor helped: leave it, serve the next one
    }
  }

  const PlacementModel& m_;
  Placement out_;
  std::vector<Load> used_;
  std::vector<Resource> free_;
  std::vector<int32_t> reduces_on_;
  std::vector<std::vector<Load>> loads_;  // [phase][node]
  std::vector<int64_t> fresh_;            // slots beyond the running tasks, per phase
  std::vector<int64_t> s_alloc_, r_alloc_;
  std::vector<std::vector<int32_t>> job_phases_;
};

}  // namespace

Placement ComputePlacement(const PlacementModel& model, int32_t max_rounds) {
  return Planner(model).Run(max_rounds);
}

}  // namespace weft::scheduler::ras
