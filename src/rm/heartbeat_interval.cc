#include "rm/heartbeat_interval.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace weft::rm {

absl::Status ValidateHeartbeatScaling(const HeartbeatScaling& s, int64_t interval_ms) {
  if (interval_ms < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("NM heartbeat interval ", interval_ms, " ms must be >= 1"));
  auto factor = [](const char* name, double v) -> absl::Status {
    if (!std::isfinite(v) || v < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("NM heartbeat ", name, " factor ", v, " must be a number >= 0"));
    return absl::OkStatus();
  };
  if (absl::Status st = factor("speedup", s.speedup_factor); !st.ok()) return st;
  if (absl::Status st = factor("slowdown", s.slowdown_factor); !st.ok()) return st;
  if (!s.enabled) return absl::OkStatus();
  if (s.min_ms < 1 || s.max_ms < 1)
    return absl::InvalidArgumentError(absl::StrCat("NM heartbeat interval bounds ", s.min_ms,
                                                   "..", s.max_ms, " ms must be >= 1"));
  if (!(s.min_ms <= interval_ms && interval_ms <= s.max_ms))
    return absl::InvalidArgumentError(
        absl::StrCat("NM heartbeat interval ", interval_ms, " ms must lie within its scaling "
                     "bounds ", s.min_ms, "..", s.max_ms, " ms"));
  return absl::OkStatus();
}

int64_t ScaledHeartbeatIntervalMs(int64_t interval_ms, const HeartbeatScaling& s,
                                  std::optional<double> node_util,
                                  std::optional<double> cluster_util) {
  if (!s.enabled || !node_util.has_value() || !cluster_util.has_value()) return interval_ms;
  const double node = std::clamp(*node_util, 0.0, 1.0);
  const double cluster = std::clamp(*cluster_util, 0.0, 1.0);
  double scaled = static_cast<double>(interval_ms);
  if (node > cluster) {
    scaled *= 1.0 + (node - cluster) * s.slowdown_factor;
  } else if (node < cluster) {
    scaled *= 1.0 - (cluster - node) * s.speedup_factor;
  }
  const double bounded =
      std::clamp(scaled, static_cast<double>(s.min_ms), static_cast<double>(s.max_ms));
  return static_cast<int64_t>(std::llround(bounded));
}

}  // namespace weft::rm
