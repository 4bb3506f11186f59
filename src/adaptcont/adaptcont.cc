#include "adaptcont/adaptcont.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace weft::adaptcont {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;
// Ceilings above this are treated as this (1 EiB of memory); keeps products in range.
constexpr int64_t kMaxCeilingMb = int64_t{1} << 30;
constexpr int64_t kMaxPreviousMb = int64_t{1} << 40;

int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

absl::Status FieldError(absl::string_view field, int64_t value, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("AmSizingInput.", field, ": ", value, " ", what));
}

absl::Status NonNegative(absl::string_view field, int64_t value) {
  if (value < 0) return FieldError(field, value, "must be >= 0");
  return absl::OkStatus();
}

std::string Bytes(int64_t b) {
  if (b >= kGiB && b % kGiB == 0) return absl::StrCat(b / kGiB, " GiB");
  if (b >= kGiB) return absl::StrFormat("%.1f GiB", static_cast<double>(b) / kGiB);
  if (b >= kMiB && b % kMiB == 0) return absl::StrCat(b / kMiB, " MiB");
  if (b >= kMiB) return absl::StrFormat("%.1f MiB", static_cast<double>(b) / kMiB);
  return absl::StrCat(b, " bytes");
}

std::string Size(const AmResource& r) {
  return absl::StrCat(r.memory_mb, " MB/", r.vcores, r.vcores == 1 ? " vcore" : " vcores");
}

std::string Plural(int64_t n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

// The AM a wave needs under the dynamic rule, raised to the model's need (rounded up to m0).
// *raised_for_need says whether the model raised it.
int64_t DynamicMemoryWithNeed(int64_t wave, const AdaptContConfig& c, bool* raised_for_need) {
  const int64_t rule = DynamicAmSize(wave, c).memory_mb;
  const int64_t need = AmMemoryNeedMb(wave, c.am_memory_model);
  *raised_for_need = need > rule;
  return *raised_for_need ? CeilDiv(need, c.m0_mb) * c.m0_mb : rule;
}

}  // namespace

std::string AmSizingDecision::Explanation() const {
  return absl::StrCat(input_stage, "; constraints: ", constraint_stage, "; ", decision_stage);
}

AmResource DynamicAmSize(int64_t wave_size, const AdaptContConfig& c) {
  const int64_t increments =
      std::max<int64_t>(0, CeilDiv(std::max<int64_t>(wave_size, 0), c.w0) - 1);
  const int64_t memory = c.m0_mb * (1 + increments);
  return {memory, DynamicVcores(memory, c)};
}

int64_t DynamicVcores(int64_t memory_mb, const AdaptContConfig& c) {
  const int64_t steps = std::max<int64_t>(1, CeilDiv(std::max<int64_t>(memory_mb, 1), c.m0_mb));
  return 1 + (steps - 1) / 2;
}

int64_t DynamicMaxWave(int64_t memory_mb, const AdaptContConfig& c) {
  const int64_t j = std::min(memory_mb, kMaxCeilingMb) / c.m0_mb;
  if (j <= 0) return 0;
  const int64_t by_rule = j * c.w0;  // <= 2^30 * 2^40
  const int64_t trackable = AmTasksTrackable(j * c.m0_mb, c.am_memory_model);
  return trackable == kUnlimitedTasks ? by_rule : std::min(by_rule, trackable);
}

int64_t ContainersInHeadroom(const Resource& headroom, const Resource& worker) {
  int64_t n = -1;
  for (int type : {kMemoryMb, kVcores}) {
    if (worker[type] <= 0) continue;
    const int64_t fit = std::max<int64_t>(0, headroom[type]) / worker[type];
    n = n < 0 ? fit : std::min(n, fit);
  }
  return std::max<int64_t>(n, 0);
}

std::string FormatAmSizingInput(const AmSizingInput& in) {
  std::string s = absl::StrCat(
      "user=", in.user.empty() ? "(none)" : in.user, " input_bytes=", in.input_bytes,
      " split_bytes=", in.split_bytes, " map_tasks=", in.map_tasks,
      " reduce_tasks=", in.reduce_tasks, " available_containers=", in.available_containers,
      " nodes_lost=", in.nodes_lost, " lost_containers=", in.lost_containers,
      " cluster_max_allocation=", Size(in.cluster_max_allocation),
      " queue_am_limit=", in.queue_am_limit ? Size(*in.queue_am_limit) : std::string("none"),
      " previous_attempt=");
  if (in.previous_attempt) {
    absl::StrAppend(&s, Size(in.previous_attempt->size),
                    in.previous_attempt->failed_for_memory ? " (killed over memory limit)" : "");
  } else {
    absl::StrAppend(&s, "none");
  }
  return s;
}

absl::StatusOr<WorkloadInputs> GenerateInputs(const AdaptContConfig& c, const AmSizingInput& in) {
  if (auto s = NonNegative("input_bytes", in.input_bytes); !s.ok()) return s;
  if (auto s = NonNegative("split_bytes", in.split_bytes); !s.ok()) return s;
  if (in.map_tasks < -1) return FieldError("map_tasks", in.map_tasks, "must be >= 0 (or -1)");
  if (auto s = NonNegative("reduce_tasks", in.reduce_tasks); !s.ok()) return s;
  if (auto s = NonNegative("available_containers", in.available_containers); !s.ok()) return s;
  if (auto s = NonNegative("nodes_lost", in.nodes_lost); !s.ok()) return s;
  if (auto s = NonNegative("lost_containers", in.lost_containers); !s.ok()) return s;

  WorkloadInputs w;
  w.split_bytes = in.split_bytes > 0 ? in.split_bytes : c.split_bytes;
  w.reduce_tasks = in.reduce_tasks;
  if (in.map_tasks >= 0) {
    w.map_tasks = in.map_tasks;
    w.log = absl::StrCat(Plural(w.map_tasks, "map task", "map tasks"), " (given)");
  } else {
    w.map_tasks = CeilDiv(in.input_bytes, w.split_bytes);
    w.log = absl::StrCat("input ", Bytes(in.input_bytes), " / ", Bytes(w.split_bytes),
                         " splits = ", Plural(w.map_tasks, "map task", "map tasks"));
  }
  if (w.reduce_tasks > 0)
    absl::StrAppend(&w.log, ", ", Plural(w.reduce_tasks, "reduce task", "reduce tasks"));
  w.available_containers = std::max<int64_t>(0, in.available_containers - in.lost_containers);
  absl::StrAppend(&w.log, "; ", Plural(w.available_containers, "container", "containers"), " free");
  if (in.nodes_lost > 0 || in.lost_containers > 0) {
    absl::StrAppend(&w.log, " (", Plural(in.nodes_lost, "node", "nodes"),
                    " lost since the last decision, -", in.lost_containers, ")");
  }
  if (w.map_tasks == 0) {
    absl::StrAppend(&w.log, " -> no waves");
    return w;
  }
  // With no headroom now, the job will get containers as they free up: size for waves of 1.
  w.wave_size = std::min(w.map_tasks, std::max<int64_t>(1, w.available_containers));
  w.waves = CeilDiv(w.map_tasks, w.wave_size);
  absl::StrAppend(&w.log, " -> ", Plural(w.waves, "wave", "waves"), " of ", w.wave_size);
  return w;
}

absl::StatusOr<AmConstraints> FilterConstraints(const AdaptContConfig& c, const AmSizingInput& in,
                                                const WorkloadInputs& w) {
  if (in.cluster_max_allocation.memory_mb <= 0)
    return FieldError("cluster_max_allocation.memory_mb", in.cluster_max_allocation.memory_mb,
                      "must be > 0");
  if (in.cluster_max_allocation.vcores <= 0)
    return FieldError("cluster_max_allocation.vcores", in.cluster_max_allocation.vcores,
                      "must be > 0");
  if (in.queue_am_limit) {
    if (auto s = NonNegative("queue_am_limit.memory_mb", in.queue_am_limit->memory_mb); !s.ok())
      return s;
    if (auto s = NonNegative("queue_am_limit.vcores", in.queue_am_limit->vcores); !s.ok()) return s;
  }
  if (in.previous_attempt) {
    const AmResource& p = in.previous_attempt->size;
    if (p.memory_mb <= 0 || p.memory_mb > kMaxPreviousMb)
      return FieldError("previous_attempt.size.memory_mb", p.memory_mb,
                        absl::StrCat("must be in [1, ", kMaxPreviousMb, "]"));
    if (p.vcores <= 0) return FieldError("previous_attempt.size.vcores", p.vcores, "must be > 0");
  }

  AmConstraints k;
  const bool yarn_default = c.mode == AdaptContMode::kYarnDefault;
  k.ceiling = in.cluster_max_allocation;
  k.memory_bound_by = k.vcores_bound_by = "cluster max allocation";
  auto tighten = [&k](const AmResource& cap, const std::string& by) {
    if (cap.memory_mb < k.ceiling.memory_mb) {
      k.ceiling.memory_mb = cap.memory_mb;
      k.memory_bound_by = by;
    }
    if (cap.vcores < k.ceiling.vcores) {
      k.ceiling.vcores = cap.vcores;
      k.vcores_bound_by = by;
    }
  };
  // YARN's fixed AM knows only the maximum allocation; AdaptCont filters all three.
  if (!yarn_default) {
    if (in.queue_am_limit) tighten(*in.queue_am_limit, "queue AM limit");
    auto it = c.user_am_caps.find(in.user);
    if (it != c.user_am_caps.end()) {
      tighten(it->second, absl::StrCat("user cap for '", in.user, "'"));
    } else if (c.default_user_am_cap) {
      tighten(*c.default_user_am_cap, absl::StrCat("default user cap ('", in.user, "')"));
    }
  }
  k.ceiling.memory_mb = std::min(k.ceiling.memory_mb, kMaxCeilingMb);
  k.log = absl::StrCat("ceiling ", k.ceiling.memory_mb, " MB (", k.memory_bound_by, ")/",
                       Plural(k.ceiling.vcores, "vcore", "vcores"), " (", k.vcores_bound_by, ")");

  // Application constraint: the map-like phase runs before the reduce-like one, which reads
  // at most the map output, so the AM tracks the map waves first and is sized for them.
  int64_t phase_tasks = w.map_tasks;
  if (w.reduce_tasks > w.map_tasks) {
    phase_tasks = w.reduce_tasks;
    absl::StrAppend(&k.log, "; reduce phase (", w.reduce_tasks, ") larger than map phase (",
                    w.map_tasks, "): sized for it");
  } else if (w.reduce_tasks > 0) {
    absl::StrAppend(&k.log, "; sized for the map phase (", w.map_tasks, " >= ", w.reduce_tasks,
                    " reduces, which run after it)");
  }
  k.sizing_tasks = phase_tasks;
  k.wave_size =
      phase_tasks == 0 ? 0 : std::min(phase_tasks, std::max<int64_t>(1, w.available_containers));

  if (yarn_default) {
    const AmResource& fixed = c.yarn_default_am;
    if (fixed.memory_mb > k.ceiling.memory_mb || fixed.vcores > k.ceiling.vcores) {
      return absl::FailedPreconditionError(absl::StrCat("yarn-default AM ", Size(fixed),
                                                        " is above the cluster max allocation ",
                                                        Size(in.cluster_max_allocation)));
    }
    k.max_wave = kUnlimitedTasks;
  } else {
    if (k.ceiling.vcores < 1) {
      return absl::FailedPreconditionError(absl::StrCat("no AM fits: the ", k.vcores_bound_by,
                                                        " allows ", k.ceiling.vcores, " vcores"));
    }
    k.max_wave = DynamicMaxWave(k.ceiling.memory_mb, c);
    if (k.max_wave == 0) {
      bool unused;
      return absl::FailedPreconditionError(absl::StrCat(
          "no AM fits: the smallest AM (", DynamicMemoryWithNeed(1, c, &unused),
          " MB) is above the ", k.memory_bound_by, " of ", k.ceiling.memory_mb, " MB"));
    }
    if (k.wave_size > k.max_wave) {
      absl::StrAppend(&k.log, "; waves limited to ", k.max_wave, " tasks (was ", k.wave_size, ")");
      k.wave_size = k.max_wave;
    }
  }
  k.waves = k.wave_size == 0 ? 0 : CeilDiv(phase_tasks, k.wave_size);

  if (in.previous_attempt && in.previous_attempt->failed_for_memory) {
    const int64_t prev = in.previous_attempt->size.memory_mb;
    if (yarn_default) {
      absl::StrAppend(&k.log, "; previous attempt killed over its memory limit at ", prev,
                      " MB (yarn-default retries the same size)");
    } else {
      const double grown = std::ceil(static_cast<double>(prev) * c.failure_growth_factor /
                                     static_cast<double>(c.m0_mb)) *
                           static_cast<double>(c.m0_mb);
      k.failure_floor_mb = std::max(prev + c.m0_mb, static_cast<int64_t>(grown));
      absl::StrAppend(&k.log, "; previous attempt killed over its memory limit at ", prev,
                      " MB -> next at least ", k.failure_floor_mb, " MB (x",
                      c.failure_growth_factor, ", rounded up to ", c.m0_mb, " MB)");
    }
  }
  return k;
}

absl::StatusOr<AmSizingDecision> DecideAmSize(const AdaptContConfig& c, const AmSizingInput& in) {
  if (auto s = ValidateAdaptContConfig(c); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("AdaptContConfig.", s.message()));
  auto w = GenerateInputs(c, in);
  if (!w.ok()) return w.status();
  auto k = FilterConstraints(c, in, *w);
  if (!k.ok()) return k.status();

  AmSizingDecision d;
  d.mode = c.mode;
  d.split_bytes = w->split_bytes;
  d.map_tasks = w->map_tasks;
  d.reduce_tasks = w->reduce_tasks;
  d.available_containers = w->available_containers;
  d.tasks = k->sizing_tasks;
  d.wave_size = k->wave_size;
  d.waves = k->waves;
  d.ceiling = k->ceiling;
  d.need_mb = AmMemoryNeedMb(d.wave_size, c.am_memory_model);
  d.input_stage = w->log;
  d.constraint_stage = k->log;

  // Dynamic decision: the rule, raised to the model's need, then to the failure floor.
  bool raised_for_need = false;
  const AmResource rule = DynamicAmSize(d.wave_size, c);
  int64_t memory = DynamicMemoryWithNeed(d.wave_size, c, &raised_for_need);
  std::string dynamic_log = absl::StrCat(
      "dynamic: ", c.m0_mb, " MB + ", (rule.memory_mb / c.m0_mb) - 1, " x ", c.m0_mb,
      " MB for a wave of ", d.wave_size, " (W0 = ", c.w0, ") = ", rule.memory_mb, " MB");
  if (raised_for_need) {
    absl::StrAppend(&dynamic_log, ", raised to ", memory, " MB for the model need of ", d.need_mb,
                    " MB");
  }
  if (in.previous_attempt && in.previous_attempt->failed_for_memory &&
      c.mode != AdaptContMode::kYarnDefault) {
    d.feedback_applied = true;
    const int64_t floor = std::min(k->failure_floor_mb, k->ceiling.memory_mb);
    d.feedback_capped = k->failure_floor_mb > k->ceiling.memory_mb;
    if (floor > memory) {
      absl::StrAppend(&dynamic_log, ", raised to ", floor, " MB after the memory failure");
      memory = floor;
    }
    if (d.feedback_capped) {
      absl::StrAppend(&dynamic_log, " (growth capped by the ", k->memory_bound_by, " at ",
                      k->ceiling.memory_mb, " MB",
                      memory <= in.previous_attempt->size.memory_mb ? "; cannot grow" : "", ")");
    }
  }
  d.dynamic_size = {memory, std::min(DynamicVcores(memory, c), k->ceiling.vcores)};
  absl::StrAppend(&dynamic_log, " -> ", Size(d.dynamic_size));
  if (d.dynamic_size.vcores < DynamicVcores(memory, c))
    absl::StrAppend(&dynamic_log, " (vcores capped by the ", k->vcores_bound_by, ")");

  switch (c.mode) {
    case AdaptContMode::kYarnDefault: {
      d.size = c.yarn_default_am;
      d.max_running_tasks = kUnlimitedTasks;
      const int64_t trackable = AmTasksTrackable(d.size.memory_mb, c.am_memory_model);
      d.decision_stage = absl::StrCat("yarn-default: fixed ", Size(d.size), " (model need ",
                                      d.need_mb, " MB for a wave of ", d.wave_size);
      if (trackable != kUnlimitedTasks) {
        absl::StrAppend(&d.decision_stage, "; fails above ", trackable, " tasks at once");
      }
      absl::StrAppend(&d.decision_stage, ")");
      break;
    }
    case AdaptContMode::kDynamic:
      d.size = d.dynamic_size;
      d.decision_stage = dynamic_log;
      break;
    case AdaptContMode::kPool: {
      // The smallest predefined container offered for this wave that is safe (>= need and the
      // failure floor), fits the ceiling, and is within the threshold of the dynamic size.
      const int64_t floor = d.feedback_applied ? d.dynamic_size.memory_mb : 0;
      const PoolContainer* best = nullptr;
      for (const PoolContainer& p : c.pool) {
        if (p.max_wave < d.wave_size || p.memory_mb < d.need_mb || p.memory_mb < floor ||
            p.memory_mb > k->ceiling.memory_mb || p.vcores > k->ceiling.vcores ||
            std::abs(p.memory_mb - d.dynamic_size.memory_mb) > c.pool_match_threshold_mb) {
          continue;
        }
        if (best == nullptr || p.memory_mb < best->memory_mb) best = &p;
      }
      if (best != nullptr) {
        d.size = {best->memory_mb, best->vcores};
        d.pool_container = best->name;
        d.decision_stage = absl::StrCat(
            dynamic_log, "; pool: '", best->name, "' (waves <= ", best->max_wave, ") is ",
            std::abs(best->memory_mb - d.dynamic_size.memory_mb), " MB from it (threshold ",
            c.pool_match_threshold_mb, " MB) -> ", Size(d.size));
      } else {
        d.size = d.dynamic_size;
        d.decision_stage = absl::StrCat(dynamic_log, "; pool: no container within ",
                                        c.pool_match_threshold_mb, " MB covers a wave of ",
                                        d.wave_size, " -> new container of the dynamic size");
      }
      break;
    }
  }
  if (c.mode != AdaptContMode::kYarnDefault) {
    d.max_running_tasks = AmTasksTrackable(d.size.memory_mb, c.am_memory_model);
    absl::StrAppend(&d.decision_stage, "; model need ", d.need_mb, " MB, runs up to ",
                    d.max_running_tasks == kUnlimitedTasks ? std::string("any number of")
                                                           : absl::StrCat(d.max_running_tasks),
                    " tasks at once");
  }
  return d;
}

}  // namespace weft::adaptcont
