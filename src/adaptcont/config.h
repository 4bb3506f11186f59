// Copyright Weft authors. AdaptCont configuration: how ApplicationMaster containers are sized.
//
// Every key, its unit and its default is documented in docs/adaptcont.md. The defaults are
// the seed's (002): M0 = 256 MB, 64 MB splits, a pool of 512/1024/2048 MB AMs.
#ifndef WEFT_ADAPTCONT_CONFIG_H_
#define WEFT_ADAPTCONT_CONFIG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adaptcont/am_memory_model.h"

namespace weft::adaptcont {

// How an AM container is sized ("master" in the seed's evaluation).
enum class AdaptContMode : uint8_t {
  kYarnDefault,  // "yarn-default": every AM gets the same fixed container (YARN's behaviour)
  kDynamic,      // "dynamic": Dynamic AdaptCont, sized from the wave with M0/W0
  kPool,         // "pool": Pool AdaptCont, a predefined container close to the dynamic size
};

// "yarn-default", "dynamic" or "pool".
absl::string_view AdaptContModeName(AdaptContMode mode);
// Inverse of AdaptContModeName. InvalidArgument naming the accepted names otherwise.
absl::StatusOr<AdaptContMode> ParseAdaptContMode(absl::string_view name);

// A memory/vcores pair: an AM container's size or a ceiling on it.
struct AmResource {
  int64_t memory_mb = 0;  // mebibytes
  int64_t vcores = 0;
  friend bool operator==(const AmResource&, const AmResource&) = default;
};

// One predefined AM container of Pool AdaptCont.
struct PoolContainer {
  std::string name;       // e.g. "small"; non-empty, unique in the pool
  int64_t memory_mb = 0;  // > 0
  int64_t vcores = 0;     // > 0
  // The largest wave (concurrently tracked tasks) this container is offered for (> 0).
  int64_t max_wave = 0;
};

struct AdaptContConfig {
  AdaptContMode mode = AdaptContMode::kDynamic;

  // Input generation. The split size used when the application does not give one (bytes).
  int64_t split_bytes = int64_t{64} << 20;

  // Dynamic AdaptCont. An AM for a wave of up to `w0` tasks gets `m0_mb`; each further `w0`
  // tasks of wave size adds one `m0_mb`; every two such increments add one vcore.
  int64_t m0_mb = 256;
  int64_t w0 = 64;

  // yarn-default: the fixed AM container (YARN's yarn.app.mapreduce.am.resource.* in spirit).
  AmResource yarn_default_am = {1024, 1};

  // Pool AdaptCont: the predefined containers and how close (MB, either side) one must be to
  // the dynamic decision to be used instead of a container of the dynamic size.
  std::vector<PoolContainer> pool = {
      {"small", 512, 1, 128}, {"medium", 1024, 2, 256}, {"large", 2048, 3, 512}};
  int64_t pool_match_threshold_mb = 1024;

  // Feedback. After an attempt is killed for exceeding its memory, the next attempt gets at
  // least max(previous + m0_mb, previous x factor rounded up to m0_mb). Must be >= 1.
  double failure_growth_factor = 2.0;

  // User constraints: a ceiling on one AM container of that user. Users not listed get
  // `default_user_am_cap` (none when unset).
  std::map<std::string, AmResource> user_am_caps;
  std::optional<AmResource> default_user_am_cap;

  // The AM memory-need model: AdaptCont never sizes an AM below its need for the wave it is
  // sized for (dynamic and pool; yarn-default is fixed).
  AmMemoryModel am_memory_model;
};

// The seed's defaults (the values above).
AdaptContConfig DefaultAdaptContConfig();

// Checks ranges: sizes and counts positive and below sane bounds (m0_mb, memory <= 2^30 MB,
// w0, max_wave <= 2^40), pool names non-empty and unique, threshold >= 0, factor finite and
// >= 1, caps non-negative. InvalidArgument naming the field, e.g. "m0_mb: 0 must be > 0".
absl::Status ValidateAdaptContConfig(const AdaptContConfig& config);

// Parses YAML text (a mapping; every key optional, defaults as above):
//
//   mode: dynamic                 # yarn-default | dynamic | pool
//   split-mb: 64
//   m0-mb: 256
//   w0: 64
//   yarn-default-am: {memory-mb: 1024, vcores: 1}
//   pool:                         # replaces the default pool when given
//     - {name: small, memory-mb: 512, vcores: 1, max-wave: 128}
//   pool-match-threshold-mb: 1024
//   failure-growth-factor: 2.0
//   user-am-caps: {alice: {memory-mb: 2048, vcores: 2}}
//   default-user-am-cap: {memory-mb: 4096, vcores: 4}
//   am-memory-model: {base-mb: 128, per-task-kb: 2048}
//
// Unknown keys, wrong types and out-of-range values are InvalidArgument naming the key path,
// e.g. "adaptcont.yaml: pool[1].memory-mb: -5 must be > 0". `origin` prefixes messages.
absl::StatusOr<AdaptContConfig> ParseAdaptContConfig(absl::string_view yaml,
                                                     absl::string_view origin = "adaptcont");
// Reads and parses a file; NotFound when it cannot be opened.
absl::StatusOr<AdaptContConfig> LoadAdaptContConfigFile(absl::string_view path);

}  // namespace weft::adaptcont

#endif  // WEFT_ADAPTCONT_CONFIG_H_
