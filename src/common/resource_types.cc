#include "common/resource_types.h"

#include <charconv>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace weft {
namespace {

bool ValidResourceTypeName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-' || c == '.' || c == '/'))
      return false;
  }
  return true;
}

absl::Status CheckRange(absl::string_view name, int64_t minimum, int64_t maximum,
                        int64_t increment) {
  if (minimum < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("resource type '", name, "': minimum ", minimum, " is negative"));
  if (maximum < minimum)
    return absl::InvalidArgumentError(absl::StrCat("resource type '", name, "': maximum ", maximum,
                                                   " is below minimum ", minimum));
  if (increment < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("resource type '", name, "': increment ", increment, " must be >= 1"));
  return absl::OkStatus();
}

}  // namespace

ResourceTypeRegistry::ResourceTypeRegistry() {
  types_.push_back({"memory-mb", "MiB", 128, int64_t{1} << 20, 128});
  types_.push_back({"vcores", "cores", 1, 1024, 1});
  types_.push_back({"network-mbps", "Mbit/s", 0, 100000, 1});
  types_.push_back({"disk-mbps", "MB/s", 0, 100000, 1});
  types_.push_back({"gpu-milli", "milli-GPUs", 0, 64000, 1});
}

absl::StatusOr<int> ResourceTypeRegistry::AddType(ResourceTypeInfo info) {
  if (!ValidResourceTypeName(info.name))
    return absl::InvalidArgumentError(absl::StrCat("resource type name '", info.name,
                                                   "' must be 1-64 characters of [a-z0-9-./]"));
  if (Find(info.name) >= 0)
    return absl::AlreadyExistsError(absl::StrCat("resource type '", info.name, "' already exists"));
  if (size() >= kMaxResourceTypes)
    return absl::ResourceExhaustedError(absl::StrCat("cannot add resource type '", info.name,
                                                     "': at most ", kMaxResourceTypes,
                                                     " types are supported"));
  if (absl::Status s = CheckRange(info.name, info.minimum, info.maximum, info.increment); !s.ok())
    return s;
  types_.push_back(std::move(info));
  return size() - 1;
}

absl::Status ResourceTypeRegistry::SetLimits(absl::string_view name, int64_t minimum,
                                             int64_t maximum, int64_t increment) {
  int id = Find(name);
  if (id < 0) return absl::NotFoundError(absl::StrCat("unknown resource type '", name, "'"));
  if (absl::Status s = CheckRange(name, minimum, maximum, increment); !s.ok()) return s;
  types_[id].minimum = minimum;
  types_[id].maximum = maximum;
  types_[id].increment = increment;
  return absl::OkStatus();
}

int ResourceTypeRegistry::Find(absl::string_view name) const {
  for (int i = 0; i < size(); ++i) {
    if (types_[i].name == name) return i;
  }
  return -1;
}

absl::StatusOr<Resource> ResourceTypeRegistry::Parse(absl::string_view text) const {
  Resource r;
  uint32_t seen = 0;
  if (absl::StripAsciiWhitespace(text).empty()) return r;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    size_t eq = item.find('=');
    if (eq == absl::string_view::npos)
      return absl::InvalidArgumentError(
          absl::StrCat("resource item '", item, "' is not of the form type=value"));
    absl::string_view name = absl::StripAsciiWhitespace(item.substr(0, eq));
    absl::string_view value = absl::StripAsciiWhitespace(item.substr(eq + 1));
    int id = Find(name);
    if (id < 0) {
      std::string known;
      for (const auto& t : types_) absl::StrAppend(&known, known.empty() ? "" : ", ", t.name);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown resource type '", name, "' (known: ", known, ")"));
    }
    if (seen & (1u << id))
      return absl::InvalidArgumentError(absl::StrCat("resource type '", name, "' given twice"));
    seen |= 1u << id;
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || ptr != value.data() + value.size())
      return absl::InvalidArgumentError(
          absl::StrCat("resource '", name, "': value '", value, "' is not an integer"));
    r[id] = v;
  }
  return r;
}

std::string ResourceTypeRegistry::Format(const Resource& r) const {
  std::string out = "<";
  bool first = true;
  for (int i = 0; i < size(); ++i) {
    if (i > kVcores && r[i] == 0) continue;
    absl::StrAppend(&out, first ? "" : ", ", types_[i].name, "=", r[i]);
    first = false;
  }
  return out + ">";
}

absl::Status ResourceTypeRegistry::Validate(const Resource& r) const {
  for (int i = 0; i < kMaxResourceTypes; ++i) {
    if (i >= size()) {
      if (r[i] != 0)
        return absl::InvalidArgumentError(
            absl::StrCat("resource type id ", i, " is not registered"));
      continue;
    }
    const ResourceTypeInfo& t = types_[i];
    if (r[i] < 0)
      return absl::InvalidArgumentError(absl::StrCat(t.name, "=", r[i], " is negative"));
    if (r[i] > t.maximum)
      return absl::InvalidArgumentError(
          absl::StrCat(t.name, "=", r[i], " is above the maximum allocation ", t.maximum));
  }
  if (const int64_t g = r[kGpuMilli]; g > 1000 && g % 1000 != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu-milli=", g, " is neither a share of one GPU (1-1000) nor whole GPUs (a multiple of 1000)"));
  return absl::OkStatus();
}

absl::StatusOr<Resource> ResourceTypeRegistry::Normalize(const Resource& r) const {
  if (absl::Status s = Validate(r); !s.ok()) return s;
  Resource out = r;
  for (int i = 0; i < size(); ++i) {
    const ResourceTypeInfo& t = types_[i];
    int64_t v = out[i];
    if (v == 0 && i != kMemoryMb && i != kVcores) continue;
    v = std::max(v, t.minimum);
    if (v % t.increment != 0) v += t.increment - v % t.increment;
    if (v > t.maximum)
      return absl::InvalidArgumentError(absl::StrCat(t.name, "=", r[i], " rounds up to ", v,
                                                     ", above the maximum allocation ", t.maximum));
    out[i] = v;
  }
  return out;
}

}  // namespace weft
