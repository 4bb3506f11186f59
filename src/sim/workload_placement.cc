// Copyright Weft authors. PlacementMix: a seeded placement variant of any workload (tags,
// anti-affinity, gangs), for experiments on traces that carry none (workload.h).
#include <algorithm>
#include <random>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/workload.h"
#include "sim/workload_common.h"

namespace weft::sim {

absl::StatusOr<PlacementMix> ParsePlacementMix(absl::string_view text) {
  PlacementMix mix;
  mix.max_spread_tasks = INT32_MAX;
  mix.max_gang_tasks = INT32_MAX;
  auto bad = [&](absl::string_view key, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("placement mix '", text, "': ", key, ": ", why));
  };
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    size_t eq = part.find('=');
    if (eq == absl::string_view::npos) return bad(part, "expected key=value");
    absl::string_view key = absl::StripAsciiWhitespace(part.substr(0, eq));
    absl::string_view value = absl::StripAsciiWhitespace(part.substr(eq + 1));
    if (key == "anti-affinity" || key == "gang") {
      bool percent = absl::ConsumeSuffix(&value, "%");
      double f = 0;
      if (!internal::ParseDouble(value, &f)) return bad(key, "not a number");
      if (percent) f /= 100;
      if (!(f >= 0 && f <= 1)) return bad(key, "must be a fraction in [0, 1]");
      (key == "gang" ? mix.gang : mix.anti_affinity) = f;
    } else if (key == "max-spread" || key == "max-gang" || key == "seed") {
      int64_t n = 0;
      if (!internal::ParseInt64(value, &n) || n < (key == "seed" ? 0 : 1))
        return bad(key, key == "seed" ? "not an integer >= 0" : "not an integer >= 1");
      if (key == "seed") {
        mix.seed = static_cast<uint64_t>(n);
      } else {
        (key == "max-gang" ? mix.max_gang_tasks : mix.max_spread_tasks) = n;
      }
    } else if (key == "gang-timeout-s") {
      double s = 0;
      if (!internal::ParseDouble(value, &s) || !(s >= 0) ||
          s * 1000 > static_cast<double>(internal::kMaxTimeMs))
        return bad(key, "not a number of seconds >= 0");
      mix.gang_timeout_ms = static_cast<int64_t>(s * 1000 + 0.5);
    } else if (key == "soft") {
      std::string v = absl::AsciiStrToLower(value);
      if (v != "true" && v != "false") return bad(key, "expected true or false");
      mix.soft = v == "true";
    } else {
      return bad(key,
                 "unknown key (known: anti-affinity, gang, max-spread, max-gang, soft, "
                 "gang-timeout-s, seed)");
    }
  }
  return mix;
}

PlacementMixStats ApplyPlacementMix(const PlacementMix& mix, Workload* workload) {
  PlacementMixStats st;
  std::mt19937_64 rng(mix.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (Job& job : workload->jobs) {
    const double u1 = uniform(rng);
    const double u2 = uniform(rng);
    int64_t largest = 0, tasks = 0;
    for (const TaskGroup& g : job.groups) {
      largest = std::max(largest, g.count);
      tasks += g.count;
    }
    if (u1 < mix.anti_affinity && largest <= mix.max_spread_tasks) {
      const std::string tag = absl::StrCat("spread-", job.id);
      if (!scheduler::ValidAllocationTag(tag)) continue;  // an id with odd characters
      for (TaskGroup& g : job.groups) {
        g.tags = {tag};
        g.has_constraint = true;
        g.constraint_soft = mix.soft;
        g.constraint =
            scheduler::PlacementConstraint::NotIn(scheduler::ConstraintScope::kNode, tag);
      }
      ++st.anti_affinity_jobs;
      st.anti_affinity_tasks += tasks;
    } else if (u2 < mix.gang && largest <= mix.max_gang_tasks) {
      for (TaskGroup& g : job.groups) {
        g.gang = true;
        g.gang_timeout_ms = mix.gang_timeout_ms;
        ++st.gangs;
      }
      ++st.gang_jobs;
      st.gang_tasks += tasks;
    }
  }
  return st;
}

}  // namespace weft::sim
