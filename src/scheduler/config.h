// Copyright Weft authors. Scheduler and queue configuration, read from YAML.
#ifndef WEFT_SCHEDULER_CONFIG_H_
#define WEFT_SCHEDULER_CONFIG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/acl.h"
#include "common/resource.h"
#include "common/resource_types.h"
#include "scheduler/types.h"

namespace weft::scheduler {

enum class QueueState : uint8_t { kRunning, kStopped };
enum class LeafOrdering : uint8_t { kFifo, kFair };

// One queue of the hierarchy, YARN's queue attributes. Every key is documented in
// docs/scheduler.md, with which policies read it (a policy ignores the others). Percentages
// are of the parent queue (0..100).
struct QueueConfig {
  // Set by the core's parser (config.cc), as are state, ordering, the ACLs and children below.
  std::string name;               // [A-Za-z0-9_-]+; "root" at the top
  double weight = 1.0;            // share of the parent's share (> 0)
  Resource min_resources;         // guaranteed minimum (0 = none)
  Resource max_resources;         // hard cap; kUnlimited per type unless given
  int64_t max_running_apps = -1;  // apps beyond it wait (runnable later); -1 = none
  // Set by the capacity policy's parser (keys capacity, maximum-capacity, user-limit-factor,
  // maximum-am-resource-percent: policies/capacity/capacity_queue_config.cc), whatever the
  // configured policy; every policy may read them.
  double capacity = -1;                     // guaranteed % of parent; -1 = equal split
  double maximum_capacity = 100;            // elastic cap, % of parent
  double user_limit_factor = 1.0;           // a user may use this multiple of the guarantee
  double maximum_am_resource_percent = 10;  // % of the queue for AM containers
  // Set by the fair policy's parser (key max-am-share: policies/fair/fair_queue_config.cc).
  // YARN's FairScheduler maxAMShare: the share of the leaf's instantaneous fair share its AM
  // containers may hold, in [0, 1]; -1 = no limit. Unset = the cluster's
  // queue_max_am_share_default. Leaves only (the parser refuses it on a parent queue).
  std::optional<double> max_am_share;
  // Set by the core's parser.
  QueueState state = QueueState::kRunning;
  std::optional<LeafOrdering> ordering;  // leaf app ordering; policy default when unset
  // YARN's queue ACLs (acl_submit_applications, acl_administer_queue); unset = not given:
  // "*" (everyone) at root, nobody elsewhere. Access is inherited down the tree: see
  // QueueAccessAllowed.
  std::optional<AccessControlList> acl_submit_applications;
  std::optional<AccessControlList> acl_administer_queue;
  // Node labels (YARN's accessible-node-labels): the labels the queue's apps may ask for;
  // unset = its parent's (root: every label); "*" = every label. The default partition is
  // always accessible.
  std::optional<std::vector<std::string>> accessible_node_labels;
  // The most the queue's subtree may hold on each label's nodes, % of the label's capacity
  // (YARN's accessible-node-labels.<label>.maximum-capacity); unset = 100.
  std::map<std::string, double> node_label_maximum_capacity;
  std::vector<QueueConfig> children;
};

// One node label (YARN's cluster node label): exclusive labels' nodes run only asks for the
// label; non-exclusive ones also run default-partition asks while they have room.
struct NodeLabelConfig {
  bool exclusive = true;
};

struct LocalityConfig {
  // Scheduling passes an app may miss at a priority before node-local is relaxed to
  // rack-local, then a further `rack_locality_delay` before off-switch. 0 = relax at once.
  int32_t node_locality_delay = 2;
  int32_t rack_locality_delay = 2;
  // Preferred hosts (and racks) probed per placement attempt before giving up on that level.
  int32_t max_locality_probes = 16;
};

struct PreemptionConfig {
  bool enabled = false;
  int64_t starvation_timeout_ms = 15000;  // below entitlement this long -> contract
  int64_t grace_period_ms = 10000;        // contract -> kill if not released
  // A leaf is starved while its usage share is below threshold x its entitlement share and it
  // has pending asks (0 < threshold <= 1).
  double threshold = 0.8;
};

// Limits on one user's apps, across every queue (YARN's <user name="..."> element).
struct UserConfig {
  // Runnable apps the user may have at once; beyond it apps wait, and become runnable in
  // submission order as the user's apps finish. Unset = user_max_apps_default.
  std::optional<int64_t> max_running_apps;
};

struct SchedulerConfig {
  // A name known to the policy registry (scheduler/registry.h); "" = the policy the
  // scheduler is created with (the registry's default when created by name).
  std::string policy;
  LocalityConfig locality;
  PreemptionConfig preemption;
  // YARN's queueMaxAMShareDefault: the max_am_share of leaves that set none, in [0, 1], or -1
  // (no limit). Also bounds, as a share of the whole cluster, the AM containers admitted as
  // their queue's first AM (see SchedulingPolicy::AmLimit).
  double queue_max_am_share_default = 0.5;
  // YARN's userMaxAppsDefault: runnable apps per user for users `users` does not limit;
  // -1 = no limit.
  int64_t user_max_apps_default = -1;
  std::map<std::string, UserConfig> users;  // by user name
  // The cluster's node labels (key node-labels), by name ([A-Za-z0-9_.-]+).
  std::map<std::string, NodeLabelConfig> node_labels;
  // Gangs (seed 001's explicit gang scheduling): "reserve" (the default: all-or-nothing in a
  // pass, the oldest waiting gang reserves nodes) or "hold-and-wait" (the naive baseline for
  // experiments: a gang's containers are placed as they fit and held until all are; competing
  // gangs can deadlock).
  std::string gang_mode = "reserve";
  // GPUs (docs/gpu.md): how the core picks the node and GPUs of a container asking gpu-milli
  // with no host or rack preference: one of scheduler/gpu/gpu_placement.h's policies (fgd,
  // best-fit, dot-product, gpu-packing, gpu-clustering, random), scored over up to
  // `gpu_placement_candidates` nodes that fit, or "first-fit" (the first node that fits, as for
  // other asks). fgd's target workload is the GPU asks the core saw last (up to 1024).
  std::string gpu_placement = "fgd";
  int32_t gpu_placement_candidates = 64;
  QueueConfig root;  // name "root"; a single leaf "default" when not configured
  // Settings a policy owns beyond the queue tree: each top-level key a policy declared (see
  // PolicySection) -> its subtree as YAML text. The core keeps them and never reads them; the
  // policy parses its own in SchedulingPolicy::Configure.
  std::map<std::string, std::string> policy_sections;
  std::string origin = "config";  // where it was read from (a file name), for error messages
};

// The queue operations an ACL guards (YARN's QueueACL).
enum class QueueAcl : uint8_t { kSubmitApplications, kAdministerQueue };

// Whether `user`, a member of `groups`, may do `acl` on `queue`, with YARN's semantics:
//  * a queue's ACL that is not given is "*" at root and nobody elsewhere;
//  * access is inherited down the tree: the queue's ACL or that of any ancestor may allow;
//  * administering implies submitting: kSubmitApplications is also allowed to whoever may
//    administer the queue (through its own or an ancestor's acl_administer_queue).
// So with root's ACLs left unset every queue is open to everyone; to restrict, set root's
// ACLs to " " (nobody) and open the queues below. `queue` is named as apps name queues: a
// path ("root.prod.etl", or "prod.etl" without the root) or a queue's name ("etl"; names are
// unique in a parsed configuration; in a hand-built tree an ambiguous name matches nothing).
// False for an unknown queue. Pure; cluster administrators are the caller's business.
bool QueueAccessAllowed(const SchedulerConfig& config, absl::string_view queue, QueueAcl acl,
                        absl::string_view user, const std::vector<std::string>& groups);

// The configuration used when none is given: root with one leaf, "default", no policy named.
SchedulerConfig DefaultSchedulerConfig();

// A top-level key a policy owns in the configuration file, and its check: OK, or
// InvalidArgument "<origin>: <key path>: <what>".
struct PolicySection {
  std::string key;
  absl::Status (*validate)(absl::string_view yaml, absl::string_view origin);
};

// Queue keys a policy owns, and its parser for them. The core accepts them on every queue (of
// any policy: a configuration parsed once may run under several, as in the simulator), checks
// that each value given is a single value, and after the queue's children are parsed calls
// `parse` once per queue with the owned keys given there.
struct PolicyQueueKeys {
  std::string policy;             // the owning policy's registry name
  std::vector<std::string> keys;  // none of them a core queue key or another policy's
  // Sets the QueueConfig fields of the keys in `given` (owned key -> its scalar text; only the
  // keys given on this queue, possibly none) on `queue`, whose children are already parsed
  // (`leaf`: it has none). OK, or InvalidArgument "<origin>: <path>[.<key>]: <what>", where
  // `path` is the queue's key path, e.g. "queues.root.children.prod"; see ConfigError. Never
  // null.
  absl::Status (*parse)(const std::map<std::string, std::string>& given, bool leaf,
                        absl::string_view origin, absl::string_view path, QueueConfig* queue);
};

// Helpers for the parsers of the core and of the policies, so that every configuration error is
// worded in one place. `text` is a YAML scalar's text, `path` its key path.
//
// InvalidArgument "<origin>: <path>: <what>" ("<path>: <what>" when `origin` is empty).
absl::Status ConfigError(absl::string_view origin, absl::string_view path, absl::string_view what);
// `text` as a number, read as YAML reads one ("1e3", ".inf"); "'<text>' is not a valid value"
// otherwise.
absl::StatusOr<double> ConfigNumber(absl::string_view text, absl::string_view origin,
                                    absl::string_view path);
// A number > 0; "<v> must be > 0" otherwise.
absl::StatusOr<double> ConfigPositive(absl::string_view text, absl::string_view origin,
                                      absl::string_view path);
// A percentage in [0, 100]; "<v> must be a percentage in [0, 100]" otherwise.
absl::StatusOr<double> ConfigPercent(absl::string_view text, absl::string_view origin,
                                     absl::string_view path);
// A share in [0, 1], or -1 for no limit; "<v> must be a share in [0, 1], or -1 for no limit"
// otherwise.
absl::StatusOr<double> ConfigShareOrNoLimit(absl::string_view text, absl::string_view origin,
                                            absl::string_view path);

// Parses YAML text. Structural errors only (unknown keys, wrong types, malformed resources,
// duplicate queue names, out-of-range numbers); policy-specific rules (e.g. capacities summing
// to 100) are checked by the policy. Errors name the key path, e.g.
// "queues.root.children.prod.weight: -1 must be > 0". `origin` prefixes messages (a file name).
// Top-level keys beyond the core's (policy, locality, preemption, queues) must be one of
// `sections`, whose checks run on their subtrees. A queue's keys are the core's (weight,
// min-resources, max-resources, max-running-apps, state, ordering, acl_submit_applications,
// acl_administer_queue, children) and those of every one of `queue_keys`, each parsed by its
// policy whatever `policy:` names. InternalError when `queue_keys` names a key twice (or a core
// key). Most callers want the registry's ParseSchedulerConfig (scheduler/registry.h), which
// passes every policy's sections and queue keys.
absl::StatusOr<SchedulerConfig> ParseSchedulerConfigWith(
    absl::string_view yaml, const ResourceTypeRegistry& registry, absl::string_view origin,
    const std::vector<PolicySection>& sections, const std::vector<PolicyQueueKeys>& queue_keys);

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_CONFIG_H_
