// Copyright Weft authors.
#include "common/device_share.h"

#include <algorithm>
#include <charconv>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace weft {
namespace {

bool ParseInt(absl::string_view s, int32_t* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool ValidType(absl::string_view t) {
  if (t.empty() || t.size() > 32) return false;
  for (char c : t) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

}  // namespace

std::string FormatDeviceShare(const DeviceShare& share) {
  return absl::StrCat(share.type, ":", share.index, "=", share.milli);
}

absl::StatusOr<DeviceShare> ParseDeviceShare(absl::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("device share '", text, "' (expected type:index=milli, e.g. gpu:0=500): ",
                     why));
  };
  const size_t colon = text.find(':');
  const size_t eq = text.find('=');
  if (colon == absl::string_view::npos || eq == absl::string_view::npos || eq < colon)
    return bad("malformed");
  DeviceShare s;
  s.type = std::string(text.substr(0, colon));
  if (!ValidType(s.type)) return bad("the type must be 1-32 characters of [a-z0-9-]");
  if (!ParseInt(text.substr(colon + 1, eq - colon - 1), &s.index) || s.index < 0)
    return bad("the index must be a non-negative integer");
  if (!ParseInt(text.substr(eq + 1), &s.milli) || s.milli < 1 || s.milli > kWholeDeviceMilli)
    return bad("the share must be an integer from 1 to 1000");
  return s;
}

absl::StatusOr<std::vector<DeviceShare>> ParseDeviceShares(const std::vector<std::string>& texts) {
  std::vector<DeviceShare> out;
  for (const std::string& t : texts) {
    absl::StatusOr<DeviceShare> s = ParseDeviceShare(t);
    if (!s.ok()) return s.status();
    // A grant names a handful of devices: a linear scan is the cheapest check.
    if (std::any_of(out.begin(), out.end(), [&](const DeviceShare& o) {
          return o.type == s->type && o.index == s->index;
        }))
      return absl::InvalidArgumentError(
          absl::StrCat("device share '", t, "': device ", s->type, ":", s->index, " named twice"));
    out.push_back(*std::move(s));
  }
  if (out.size() > 1) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].milli != kWholeDeviceMilli)
        return absl::InvalidArgumentError(
            absl::StrCat("device share '", texts[i],
                         "': a grant of several devices takes each whole (1000)"));
    }
  }
  return out;
}

int64_t TotalMilli(const std::vector<DeviceShare>& shares, absl::string_view type) {
  int64_t total = 0;
  for (const DeviceShare& s : shares) {
    if (s.type == type) total += s.milli;
  }
  return total;
}

}  // namespace weft
