// Copyright Weft authors.
#include "rm/bench_types.h"

#include <sys/resource.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace weft::rm {

const char* SimNmScheduleName(SimNmSchedule schedule) {
  return schedule == SimNmSchedule::kFixed ? "fixed" : "after-reply";
}

absl::StatusOr<SimNmSchedule> ParseSimNmSchedule(const std::string& name) {
  if (name == "after-reply") return SimNmSchedule::kAfterReply;
  if (name == "fixed") return SimNmSchedule::kFixed;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown NM heartbeat schedule '", name,
      "': 'after-reply' (one interval after each reply, as NMs do) or 'fixed' (a fixed "
      "timetable, a late node's next heartbeat sent on reply)"));
}

LatencyMs SummarizeLatencies(std::vector<double> v) {
  LatencyMs l;
  l.count = static_cast<int64_t>(v.size());
  if (v.empty()) return l;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  l.mean = sum / static_cast<double>(v.size());
  auto at = [&](double p) {
    size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1));
    return v[i];
  };
  l.p50 = at(0.50);
  l.p99 = at(0.99);
  l.max = v.back();
  return l;
}

nlohmann::json LatencyJson(const LatencyMs& l) {
  return nlohmann::json{{"p50_ms", l.p50},   {"p99_ms", l.p99},    {"max_ms", l.max},
                        {"mean_ms", l.mean}, {"count", l.count}};
}

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace weft::rm
