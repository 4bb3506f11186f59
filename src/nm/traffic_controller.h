// Copyright Weft authors. Per-container egress bandwidth isolation with HTB (seed 000; DESIGN.md,
// "Network bandwidth isolation").
//
// On the NM's interface the controller owns this HTB tree (handles are fixed):
//
//   1:    root qdisc htb default 2
//   1:1   root class         rate = ceil = link
//   1:2   everything else    rate = link - containers_total, ceil = link   (the node's own traffic)
//   1:3   all containers     rate = containers_total,        ceil = link
//   1:N   one per container  rate = its network-mbps,        ceil = the burst limit
//         (N = 0x10 .. 0xffff, unique among running containers)
//
// A container's packets reach its class through a classifier, chosen at start-up from what the
// kernel offers, in this order:
//   "tc-cgroup"          the tc cgroup filter reads the socket's net_cls.classid (= 1:N);
//   "iptables-net_cls"   mangle/POSTROUTING rules `-m cgroup --cgroup 0x1000N -j CLASSIFY
//                        --set-class 1:N` matching the same net_cls.classid;
//   "iptables-cgroup2"   rules `-m cgroup --path <cgroup v2 path> -j CLASSIFY --set-class 1:N`.
// The first two need the cgroup v1 net_cls controller (MountNetClsIfMissing mounts it).
// Only egress is shaped; ingress is out of scope as in the seed.
#ifndef WEFT_NM_TRAFFIC_CONTROLLER_H_
#define WEFT_NM_TRAFFIC_CONTROLLER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nm/command_runner.h"
#include "nm/os_env.h"

namespace weft::nm {

// What a container may use above its guaranteed rate.
enum class BurstLimit {
  kContainersTotal,  // ceil = containers_total (default)
  kLink,             // ceil = link
  kStrict,           // ceil = rate: no borrowing
};
// "containers", "link", "strict".
absl::StatusOr<BurstLimit> ParseBurstLimit(absl::string_view text);
std::string BurstLimitName(BurstLimit burst);

struct TrafficControlOptions {
  // The interface whose egress is shaped, e.g. "eth0". Required.
  std::string interface;
  // The link rate, Mbit/s. 0: read /sys/class/net/<interface>/speed (fails when unknown, as on
  // veth: then it must be configured).
  int64_t link_mbps = 0;
  // The share of the link given to containers, Mbit/s, <= link. 0: 90% of the link.
  int64_t containers_total_mbps = 0;
  BurstLimit burst = BurstLimit::kContainersTotal;
  // "auto" (the first usable, in the order above) or one classifier name to require.
  std::string classifier = "auto";
  // What the NM's cgroups offer: the net_cls controller (v1), or cgroup v2.
  bool net_cls_available = false;
  bool cgroup_v2 = false;
};

// Counters of one container's class, from the kernel's class statistics.
struct ContainerNetStats {
  int64_t tx_bytes = 0;
  int64_t tx_packets = 0;
  int64_t drops = 0;
  // Average rate since the previous ReadStats, Mbit/s (0 on the first reading).
  double tx_rate_mbps = 0;
};

// Programs the kernel for containers' bandwidth. Thread-compatible: the NM's loop makes every
// call. Commands are run through a CommandRunner (tc and iptables from iproute2/iptables).
class TrafficController {
 public:
  // Removes the HTB tree and the rules (same as Teardown, errors ignored).
  ~TrafficController();
  TrafficController(const TrafficController&) = delete;
  TrafficController& operator=(const TrafficController&) = delete;

  // Validates `options`, removes whatever an earlier NM left on the interface (stale classes
  // and rules: a restarted NM adds again, with AddContainer, the classes of the containers it
  // re-attaches to, and rewrites their net_cls.classid), builds the tree and chooses the
  // classifier. Errors: InvalidArgument for bad options (named); FailedPrecondition when the
  // interface does not exist, the link rate is unknown, or no classifier works (each reason
  // listed); the failing command's error otherwise. On error nothing is left programmed.
  static absl::StatusOr<std::unique_ptr<TrafficController>> Create(
      TrafficControlOptions options, CommandRunner* runner = CommandRunner::Default(),
      OsEnv* env = OsEnv::Default());

  const std::string& interface() const { return options_.interface; }
  int64_t link_mbps() const { return options_.link_mbps; }
  int64_t containers_total_mbps() const { return options_.containers_total_mbps; }
  BurstLimit burst() const { return options_.burst; }
  // "tc-cgroup", "iptables-net_cls" or "iptables-cgroup2".
  const std::string& classifier() const { return classifier_; }
  // The classifiers tried before the chosen one and why they were not usable.
  const std::vector<std::string>& rejected_classifiers() const { return rejected_; }
  // One line for logs and node status, e.g. "HTB on veth0: link 200 Mbit/s, containers 180
  // Mbit/s, burst up to containers, classifier iptables-net_cls".
  std::string Describe() const;
  // True when containers must carry the net_cls.classid that AddContainer returns.
  bool uses_net_cls() const { return classifier_ != "iptables-cgroup2"; }

  // Creates the container's class with rate = rate_mbps (a request of 0 gets 1 Mbit/s, the
  // best-effort minimum, and borrows like the others) and ceil from the burst limit, plus its
  // classifier rule. `cgroup2_path` is the container's cgroup relative to the cgroup2 root
  // (used by "iptables-cgroup2" only). Returns the net_cls classid (0x0001NNNN) to write into
  // the container's cgroup, or 0 when the classifier does not use net_cls.
  // Errors: InvalidArgument (negative rate, rate above containers_total), AlreadyExists,
  // ResourceExhausted when every class id is taken, or the failing command's error (then
  // nothing of the container remains).
  absl::StatusOr<uint32_t> AddContainer(absl::string_view container_id, int64_t rate_mbps,
                                        absl::string_view cgroup2_path = "");
  // A resource update of a running container (YARN's container increase/decrease): changes
  // its class's rate to `rate_mbps` (0: the 1 Mbit/s minimum, as AddContainer) and its ceil
  // from the burst limit, in place (`tc class change`): the class id, the classifier rule and
  // the container's net_cls.classid stay, and its packets are never unshaped.
  // Errors: InvalidArgument (negative rate, rate above containers_total), NotFound when the
  // container has no class, or the failing command's error; on any error the class keeps its
  // earlier rate.
  absl::Status ChangeRate(absl::string_view container_id, int64_t rate_mbps);
  // The rate of the container's class, Mbit/s (as programmed), or 0 when it has none.
  int64_t RateOf(absl::string_view container_id) const;
  // Removes the container's rule and class. OK when unknown (idempotent).
  absl::Status RemoveContainer(absl::string_view container_id);
  bool HasContainer(absl::string_view container_id) const;
  // The HTB class of a container ("1:1a"), or "" when it has none.
  std::string ClassOf(absl::string_view container_id) const;

  // Reads every container's class counters (one `tc -s class show`), `now_ms` being the
  // caller's clock for the rate. Containers whose class is missing are left out.
  absl::StatusOr<std::map<std::string, ContainerNetStats>> ReadStats(int64_t now_ms);

  // Removes every rule and class and the root qdisc. Idempotent.
  absl::Status Teardown();

 private:
  struct ContainerClass {
    uint32_t minor = 0;
    int64_t rate_mbps = 0;
    std::string cgroup2_path;
    int64_t last_bytes = 0;
    int64_t last_read_ms = -1;
  };

  TrafficController(TrafficControlOptions options, CommandRunner* runner);
  absl::Status Setup(OsEnv* env);
  absl::Status RemoveStale();
  absl::Status ChooseClassifier();
  std::vector<std::string> RuleSpec(uint32_t minor, absl::string_view cgroup2_path) const;
  absl::Status Run(const std::vector<std::string>& argv, std::string* out = nullptr);
  // A clean-up command that may find nothing to remove (a qdisc, chain or class that is not
  // there): a non-zero exit is expected and logged at debug; a command that could not be run
  // at all is logged at warn.
  void RunBestEffort(const std::vector<std::string>& argv);
  std::vector<std::string> Tc(std::vector<std::string> args) const;
  std::vector<std::string> Iptables(std::vector<std::string> args) const;
  std::string Chain() const { return "WEFT-" + options_.interface; }
  uint32_t NextFreeMinor();

  TrafficControlOptions options_;
  CommandRunner* const runner_;
  std::string classifier_;
  std::vector<std::string> rejected_;
  bool programmed_ = false;
  std::map<std::string, ContainerClass, std::less<>> containers_;
  std::map<uint32_t, std::string> minors_;  // minor -> container id
  uint32_t next_minor_ = 0x10;
};

// The class id of HTB class 1:`minor` as written to net_cls.classid.
inline constexpr uint32_t NetClsClassId(uint32_t minor) { return (1u << 16) | minor; }

// On a cgroup v1 system (`root` a tmpfs of per-controller mounts) without a net_cls mount,
// mounts the net_cls controller at <root>/net_cls. OK when already mounted or on cgroup v2
// (which has no net_cls). Needs root (CAP_SYS_ADMIN). Returns whether it mounted it.
absl::StatusOr<bool> MountNetClsIfMissing(absl::string_view root = "/sys/fs/cgroup",
                                          OsEnv* env = OsEnv::Default());

namespace internal {
// One class of `tc -s class show dev X`: handle "1:1a" -> counters.
struct TcClassCounters {
  int64_t bytes = 0;
  int64_t packets = 0;
  int64_t drops = 0;
};
std::map<std::string, TcClassCounters> ParseTcClassStats(absl::string_view text);
}  // namespace internal

}  // namespace weft::nm

#endif  // WEFT_NM_TRAFFIC_CONTROLLER_H_
