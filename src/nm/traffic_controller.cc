// Copyright Weft authors. HTB trees and classifier rules through tc and iptables.
#include "nm/traffic_controller.h"

#include <sys/mount.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/errors.h"
#include "common/log.h"

namespace weft::nm {
namespace {

constexpr uint32_t kFirstContainerMinor = 0x10;
constexpr uint32_t kLastContainerMinor = 0xffff;
constexpr char kClassifierTcCgroup[] = "tc-cgroup";
constexpr char kClassifierNetCls[] = "iptables-net_cls";
constexpr char kClassifierCgroup2[] = "iptables-cgroup2";

std::string Mbit(int64_t mbps) { return absl::StrCat(mbps, "mbit"); }

// HTB's quantum for a class of `rate_mbps`: rate/10 in bytes per second (HTB's r2q) kept
// between one MTU-sized frame and 200,000 bytes, so that the kernel does not warn and borrowing
// between siblings stays proportional to their rates.
std::string Quantum(int64_t rate_mbps) {
  int64_t bytes = rate_mbps * 1'000'000 / 8 / 10;
  return absl::StrCat(std::clamp<int64_t>(bytes, 1514, 200'000));
}

std::string Handle(uint32_t minor) { return absl::StrCat("1:", absl::Hex(minor)); }

bool ValidInterfaceName(absl::string_view name) {
  if (name.empty() || name.size() > 15) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

}  // namespace

absl::StatusOr<BurstLimit> ParseBurstLimit(absl::string_view text) {
  if (text == "containers") return BurstLimit::kContainersTotal;
  if (text == "link") return BurstLimit::kLink;
  if (text == "strict") return BurstLimit::kStrict;
  return absl::InvalidArgumentError(absl::StrCat(
      "network burst limit '", text, "' is not one of containers, link, strict"));
}

std::string BurstLimitName(BurstLimit burst) {
  switch (burst) {
    case BurstLimit::kContainersTotal:
      return "containers";
    case BurstLimit::kLink:
      return "link";
    case BurstLimit::kStrict:
      return "strict";
  }
  return "?";
}

TrafficController::TrafficController(TrafficControlOptions options, CommandRunner* runner)
    : options_(std::move(options)), runner_(runner) {}

TrafficController::~TrafficController() {
  log::WarnIfError(Teardown(), "traffic_control_teardown_failed",
                   {{"interface", options_.interface}});
}

absl::StatusOr<std::unique_ptr<TrafficController>> TrafficController::Create(
    TrafficControlOptions options, CommandRunner* runner, OsEnv* env) {
  constexpr absl::string_view kWhat = "setting up network bandwidth isolation: ";
  if (!ValidInterfaceName(options.interface)) {
    return absl::InvalidArgumentError(absl::StrCat(
        kWhat, "interface '", options.interface,
        "' is not a valid interface name ([A-Za-z0-9_.-], 1 to 15 characters)"));
  }
  if (options.link_mbps < 0 || options.containers_total_mbps < 0) {
    return absl::InvalidArgumentError(absl::StrCat(kWhat, "link (", options.link_mbps,
                                                   " Mbit/s) and containers' total (",
                                                   options.containers_total_mbps,
                                                   " Mbit/s) must not be negative"));
  }
  if (options.classifier != "auto" && options.classifier != kClassifierTcCgroup &&
      options.classifier != kClassifierNetCls && options.classifier != kClassifierCgroup2) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWhat, "classifier '", options.classifier, "' is not one of auto, ",
                     kClassifierTcCgroup, ", ", kClassifierNetCls, ", ", kClassifierCgroup2));
  }
  // The interface, seen from this process's network namespace (sysfs may show another's).
  absl::StatusOr<CommandResult> link = runner->Run({"ip", "-o", "link", "show", "dev",
                                                     options.interface});
  if (!link.ok()) return link.status();
  if (link->exit_code != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(kWhat, "interface '", options.interface, "' does not exist here: ",
                     absl::StripAsciiWhitespace(link->stderr_text)));
  }
  if (options.link_mbps == 0) {
    absl::StatusOr<std::string> speed =
        env->ReadFile(absl::StrCat("/sys/class/net/", options.interface, "/speed"));
    int64_t mbps = 0;
    if (!speed.ok() || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*speed), &mbps) ||
        mbps <= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          kWhat, "the link rate of ", options.interface,
          " is unknown (no usable /sys/class/net/", options.interface,
          "/speed, as on veth and most virtual NICs): configure it (weft nm --link-mbps)"));
    }
    options.link_mbps = mbps;
  }
  if (options.containers_total_mbps == 0) {
    options.containers_total_mbps = std::max<int64_t>(1, options.link_mbps * 9 / 10);
  }
  if (options.containers_total_mbps > options.link_mbps) {
    return absl::InvalidArgumentError(
        absl::StrCat(kWhat, "containers' total ", options.containers_total_mbps,
                     " Mbit/s is above the link's ", options.link_mbps, " Mbit/s"));
  }
  auto controller = absl::WrapUnique(new TrafficController(std::move(options), runner));
  if (absl::Status s = controller->Setup(env); !s.ok()) {
    log::WarnIfError(controller->Teardown(), "traffic_control_teardown_failed",
                     {{"interface", controller->options_.interface}, {"during", "setup"}});
    return absl::Status(s.code(), absl::StrCat(kWhat, s.message()));
  }
  return controller;
}

absl::Status TrafficController::Run(const std::vector<std::string>& argv, std::string* out) {
  return RunChecked(runner_, argv, out);
}

void TrafficController::RunBestEffort(const std::vector<std::string>& argv) {
  absl::StatusOr<CommandResult> r = runner_->Run(argv);
  if (!r.ok()) {
    log::Warn("traffic_control_command_not_run",
              {{"command", absl::StrJoin(argv, " ")}, {"error", r.status()}});
  } else if (r->exit_code != 0) {
    log::Debug("traffic_control_nothing_to_remove",
               {{"command", absl::StrJoin(argv, " ")}, {"exit_code", r->exit_code}});
  }
}

std::vector<std::string> TrafficController::Tc(std::vector<std::string> args) const {
  args.insert(args.begin(), "tc");
  return args;
}

std::vector<std::string> TrafficController::Iptables(std::vector<std::string> args) const {
  // -w: wait for the xtables lock instead of failing when another program holds it.
  std::vector<std::string> argv = {"iptables", "-w", "-t", "mangle"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

absl::Status TrafficController::RemoveStale() {
  // The root qdisc: whatever is there is replaced (an earlier NM's tree goes with its classes
  // and filters). "No such file" / "handle of zero" mean there was none: fine.
  RunBestEffort(Tc({"qdisc", "del", "dev", options_.interface, "root"}));
  // An earlier NM's chain: unhook it from POSTROUTING, flush and delete it.
  absl::StatusOr<CommandResult> rules = runner_->Run(Iptables({"-S", "POSTROUTING"}));
  if (rules.ok() && rules->exit_code == 0) {
    for (absl::string_view line : absl::StrSplit(rules->stdout_text, '\n')) {
      if (!absl::StartsWith(line, "-A POSTROUTING ") ||
          !absl::StrContains(line, absl::StrCat("-j ", Chain()))) {
        continue;
      }
      std::vector<std::string> argv = Iptables({"-D", "POSTROUTING"});
      for (absl::string_view word :
           absl::StrSplit(line.substr(strlen("-A POSTROUTING ")), ' ', absl::SkipEmpty())) {
        argv.emplace_back(word);
      }
      RunBestEffort(argv);
    }
  }
  RunBestEffort(Iptables({"-F", Chain()}));
  RunBestEffort(Iptables({"-X", Chain()}));
  return absl::OkStatus();
}

absl::Status TrafficController::Setup(OsEnv* /*env*/) {
  if (absl::Status s = RemoveStale(); !s.ok()) return s;
  programmed_ = true;
  const std::string& dev = options_.interface;
  const int64_t link = options_.link_mbps;
  const int64_t total = options_.containers_total_mbps;
  const int64_t others = std::max<int64_t>(1, link - total);
  std::vector<std::vector<std::string>> tree = {
      Tc({"qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "2"}),
      Tc({"class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", Mbit(link),
          "ceil", Mbit(link), "quantum", Quantum(link)}),
      Tc({"class", "add", "dev", dev, "parent", "1:1", "classid", "1:2", "htb", "rate",
          Mbit(others), "ceil", Mbit(link), "quantum", Quantum(others)}),
      Tc({"class", "add", "dev", dev, "parent", "1:1", "classid", "1:3", "htb", "rate",
          Mbit(total), "ceil", Mbit(link), "quantum", Quantum(total)}),
  };
  for (const auto& argv : tree) {
    if (absl::Status s = Run(argv); !s.ok()) return s;
  }
  return ChooseClassifier();
}

absl::Status TrafficController::ChooseClassifier() {
  const std::string& wanted = options_.classifier;
  auto wants = [&](absl::string_view name) { return wanted == "auto" || wanted == name; };
  const std::string& dev = options_.interface;

  if (wants(kClassifierTcCgroup)) {
    if (!options_.net_cls_available) {
      rejected_.push_back(absl::StrCat(kClassifierTcCgroup, ": the net_cls controller is not mounted"));
    } else {
      absl::Status s = Run(Tc({"filter", "add", "dev", dev, "parent", "1:", "protocol", "all",
                               "prio", "10", "handle", "1:", "cgroup"}));
      if (s.ok()) {
        classifier_ = kClassifierTcCgroup;
        return absl::OkStatus();
      }
      rejected_.push_back(absl::StrCat(kClassifierTcCgroup, ": ", s.message()));
    }
  }
  for (const char* name : {kClassifierNetCls, kClassifierCgroup2}) {
    if (!wants(name)) continue;
    const bool net_cls = name == std::string(kClassifierNetCls);
    if (net_cls && !options_.net_cls_available) {
      rejected_.push_back(absl::StrCat(name, ": the net_cls controller is not mounted"));
      continue;
    }
    if (!net_cls && !options_.cgroup_v2) {
      rejected_.push_back(absl::StrCat(name, ": containers are not in cgroup v2 groups"));
      continue;
    }
    // The chain, hooked to this interface's egress, and a probe rule of the kind needed.
    RunBestEffort(Iptables({"-N", Chain()}));
    std::vector<std::string> probe =
        net_cls ? std::vector<std::string>{"-m", "cgroup", "--cgroup", "1", "-j", "CLASSIFY",
                                           "--set-class", "1:2"}
                : std::vector<std::string>{"-m", "cgroup", "--path", "/", "-j", "CLASSIFY",
                                           "--set-class", "1:2"};
    std::vector<std::string> add = Iptables({"-A", Chain()});
    add.insert(add.end(), probe.begin(), probe.end());
    absl::Status s = Run(add);
    if (s.ok()) {
      std::vector<std::string> del = Iptables({"-D", Chain()});
      del.insert(del.end(), probe.begin(), probe.end());
      s = Run(del);
    }
    if (s.ok()) s = Run(Iptables({"-A", "POSTROUTING", "-o", dev, "-j", Chain()}));
    if (s.ok()) {
      classifier_ = name;
      return absl::OkStatus();
    }
    rejected_.push_back(absl::StrCat(name, ": ", s.message()));
    RunBestEffort(Iptables({"-F", Chain()}));
    RunBestEffort(Iptables({"-X", Chain()}));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("no usable packet classifier (", absl::StrJoin(rejected_, "; "), ")"));
}

std::string TrafficController::Describe() const {
  std::string text = absl::StrCat("HTB on ", options_.interface, ": link ", options_.link_mbps,
                                  " Mbit/s, containers ", options_.containers_total_mbps,
                                  " Mbit/s, burst up to ", BurstLimitName(options_.burst),
                                  ", classifier ", classifier_);
  if (!rejected_.empty()) absl::StrAppend(&text, " (not usable: ", absl::StrJoin(rejected_, "; "), ")");
  return text;
}

uint32_t TrafficController::NextFreeMinor() {
  // Round-robin from the last one given out, so a just-freed id is not reused at once.
  const uint32_t span = kLastContainerMinor - kFirstContainerMinor + 1;
  for (uint32_t i = 0; i < span; ++i) {
    uint32_t minor = kFirstContainerMinor + (next_minor_ - kFirstContainerMinor + i) % span;
    if (!minors_.contains(minor)) {
      next_minor_ = minor + 1 > kLastContainerMinor ? kFirstContainerMinor : minor + 1;
      return minor;
    }
  }
  return 0;
}

std::vector<std::string> TrafficController::RuleSpec(uint32_t minor,
                                                      absl::string_view cgroup2_path) const {
  std::vector<std::string> spec = {"-m", "cgroup"};
  if (classifier_ == kClassifierCgroup2) {
    spec.insert(spec.end(), {"--path", std::string(cgroup2_path)});
  } else {
    spec.insert(spec.end(), {"--cgroup", absl::StrCat(NetClsClassId(minor))});
  }
  spec.insert(spec.end(), {"-j", "CLASSIFY", "--set-class", Handle(minor)});
  return spec;
}

absl::StatusOr<uint32_t> TrafficController::AddContainer(absl::string_view container_id,
                                                         int64_t rate_mbps,
                                                         absl::string_view cgroup2_path) {
  auto error_prefix = [&] { return absl::StrCat("shaping container ", container_id, ": "); };
  if (rate_mbps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(error_prefix(), "network-mbps ", rate_mbps, " is negative"));
  }
  if (rate_mbps > options_.containers_total_mbps) {
    return absl::InvalidArgumentError(absl::StrCat(
        error_prefix(), "network-mbps ", rate_mbps, " is above this node's containers' total of ",
        options_.containers_total_mbps, " Mbit/s"));
  }
  if (containers_.contains(container_id)) {
    return absl::AlreadyExistsError(absl::StrCat(error_prefix(), "it already has a class"));
  }
  if (classifier_ == kClassifierCgroup2 && cgroup2_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(error_prefix(), "no cgroup v2 path given"));
  }
  const uint32_t minor = NextFreeMinor();
  if (minor == 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat(error_prefix(), "all ", kLastContainerMinor - kFirstContainerMinor + 1,
                     " HTB class ids on ", options_.interface, " are in use"));
  }
  const int64_t rate = std::max<int64_t>(1, rate_mbps);
  int64_t ceil = options_.containers_total_mbps;
  if (options_.burst == BurstLimit::kLink) ceil = options_.link_mbps;
  if (options_.burst == BurstLimit::kStrict) ceil = rate;
  ceil = std::max(ceil, rate);
  const std::string handle = Handle(minor);
  absl::Status s = Run(Tc({"class", "add", "dev", options_.interface, "parent", "1:3", "classid",
                           handle, "htb", "rate", Mbit(rate), "ceil", Mbit(ceil), "quantum",
                           Quantum(rate)}));
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(error_prefix(), s.message()));
  if (classifier_ != kClassifierTcCgroup) {
    std::vector<std::string> add = Iptables({"-A", Chain()});
    std::vector<std::string> spec = RuleSpec(minor, cgroup2_path);
    add.insert(add.end(), spec.begin(), spec.end());
    add.insert(add.end(), {"-m", "comment", "--comment", std::string(container_id)});
    s = Run(add);
    if (!s.ok()) {
      RunBestEffort(Tc({"class", "del", "dev", options_.interface, "classid", handle}));
      return absl::Status(s.code(), absl::StrCat(error_prefix(), s.message()));
    }
  }
  ContainerClass record;
  record.minor = minor;
  record.rate_mbps = rate;
  record.cgroup2_path = std::string(cgroup2_path);
  containers_.emplace(std::string(container_id), std::move(record));
  minors_.emplace(minor, std::string(container_id));
  return uses_net_cls() ? NetClsClassId(minor) : 0;
}

absl::Status TrafficController::ChangeRate(absl::string_view container_id, int64_t rate_mbps) {
  auto error_prefix = [&] {
    return absl::StrCat("changing the bandwidth of container ", container_id, ": ");
  };
  if (rate_mbps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(error_prefix(), "network-mbps ", rate_mbps, " is negative"));
  }
  if (rate_mbps > options_.containers_total_mbps) {
    return absl::InvalidArgumentError(absl::StrCat(error_prefix(), "network-mbps ", rate_mbps,
                                                   " is above this node's containers' total of ",
                                                   options_.containers_total_mbps, " Mbit/s"));
  }
  auto it = containers_.find(container_id);
  if (it == containers_.end()) {
    return absl::NotFoundError(absl::StrCat(error_prefix(), "it has no class"));
  }
  const int64_t rate = std::max<int64_t>(1, rate_mbps);
  int64_t ceil = options_.containers_total_mbps;
  if (options_.burst == BurstLimit::kLink) ceil = options_.link_mbps;
  if (options_.burst == BurstLimit::kStrict) ceil = rate;
  ceil = std::max(ceil, rate);
  absl::Status s = Run(Tc({"class", "change", "dev", options_.interface, "parent", "1:3", "classid",
                           Handle(it->second.minor), "htb", "rate", Mbit(rate), "ceil", Mbit(ceil),
                           "quantum", Quantum(rate)}));
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(error_prefix(), s.message()));
  it->second.rate_mbps = rate;
  return absl::OkStatus();
}

int64_t TrafficController::RateOf(absl::string_view container_id) const {
  auto it = containers_.find(container_id);
  return it == containers_.end() ? 0 : it->second.rate_mbps;
}

absl::Status TrafficController::RemoveContainer(absl::string_view container_id) {
  auto it = containers_.find(container_id);
  if (it == containers_.end()) return absl::OkStatus();
  const ContainerClass record = it->second;
  containers_.erase(it);
  minors_.erase(record.minor);
  absl::Status result;
  if (classifier_ != kClassifierTcCgroup) {
    std::vector<std::string> del = Iptables({"-D", Chain()});
    std::vector<std::string> spec = RuleSpec(record.minor, record.cgroup2_path);
    del.insert(del.end(), spec.begin(), spec.end());
    del.insert(del.end(), {"-m", "comment", "--comment", std::string(container_id)});
    result.Update(Run(del));
  }
  result.Update(
      Run(Tc({"class", "del", "dev", options_.interface, "classid", Handle(record.minor)})));
  if (!result.ok()) {
    return absl::Status(result.code(), absl::StrCat("removing the bandwidth class of ",
                                                    container_id, ": ", result.message()));
  }
  return absl::OkStatus();
}

bool TrafficController::HasContainer(absl::string_view container_id) const {
  return containers_.contains(container_id);
}

std::string TrafficController::ClassOf(absl::string_view container_id) const {
  auto it = containers_.find(container_id);
  return it == containers_.end() ? "" : Handle(it->second.minor);
}

absl::StatusOr<std::map<std::string, ContainerNetStats>> TrafficController::ReadStats(
    int64_t now_ms) {
  std::map<std::string, ContainerNetStats> stats;
  if (containers_.empty()) return stats;
  std::string text;
  if (absl::Status s = Run(Tc({"-s", "class", "show", "dev", options_.interface}), &text);
      !s.ok()) {
    return s;
  }
  std::map<std::string, internal::TcClassCounters> counters = internal::ParseTcClassStats(text);
  for (auto& [id, record] : containers_) {
    auto found = counters.find(Handle(record.minor));
    if (found == counters.end()) continue;
    ContainerNetStats& out = stats[id];
    out.tx_bytes = found->second.bytes;
    out.tx_packets = found->second.packets;
    out.drops = found->second.drops;
    if (record.last_read_ms >= 0 && now_ms > record.last_read_ms &&
        out.tx_bytes >= record.last_bytes) {
      out.tx_rate_mbps = static_cast<double>(out.tx_bytes - record.last_bytes) * 8 /
                         static_cast<double>(now_ms - record.last_read_ms) / 1000.0;
    }
    record.last_bytes = out.tx_bytes;
    record.last_read_ms = now_ms;
  }
  return stats;
}

absl::Status TrafficController::Teardown() {
  if (!programmed_) return absl::OkStatus();
  programmed_ = false;
  containers_.clear();
  minors_.clear();
  absl::Status result;
  if (classifier_ == kClassifierNetCls || classifier_ == kClassifierCgroup2) {
    result.Update(Run(Iptables({"-D", "POSTROUTING", "-o", options_.interface, "-j", Chain()})));
    result.Update(Run(Iptables({"-F", Chain()})));
    result.Update(Run(Iptables({"-X", Chain()})));
  }
  result.Update(Run(Tc({"qdisc", "del", "dev", options_.interface, "root"})));
  return result;
}

absl::StatusOr<bool> MountNetClsIfMissing(absl::string_view root, OsEnv* env) {
  absl::StatusOr<std::string> mountinfo = env->ReadFile("/proc/self/mountinfo");
  if (!mountinfo.ok()) return mountinfo.status();
  bool root_is_tmpfs = false;
  for (absl::string_view line : absl::StrSplit(*mountinfo, '\n', absl::SkipEmpty())) {
    // "<id> <parent> <dev> <root> <mount point> <options> [optional...] - <type> <source> <super>"
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) continue;
    absl::string_view mount_point = fields[4];
    absl::string_view type = dash[1];
    absl::string_view super = dash[3];
    if (mount_point == root && type == "cgroup2") return false;  // v2: no net_cls
    if (mount_point == root && type == "tmpfs") root_is_tmpfs = true;
    if (type == "cgroup" && absl::StartsWith(mount_point, root)) {
      for (absl::string_view option : absl::StrSplit(super, ',')) {
        if (option == "net_cls") return false;  // already mounted
      }
    }
  }
  if (!root_is_tmpfs) {
    return absl::FailedPreconditionError(absl::StrCat(
        "mounting net_cls: ", root, " is not a cgroup v1 tmpfs of per-controller mounts"));
  }
  const std::string target = absl::StrCat(root, "/net_cls");
  if (absl::Status s = env->CreateDirs(target); !s.ok()) return s;
  if (mount("net_cls", target.c_str(), "cgroup", 0, "net_cls") != 0) {
    return ErrnoError(errno, absl::StrCat("mounting the net_cls controller at ", target));
  }
  return true;
}

namespace internal {

std::map<std::string, TcClassCounters> ParseTcClassStats(absl::string_view text) {
  std::map<std::string, TcClassCounters> result;
  std::string current;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() >= 3 && words[0] == "class") {
      current = std::string(words[2]);
      result[current];
      continue;
    }
    // " Sent 7559566 bytes 5010 pkt (dropped 0, overlimits 410 requeues 0)"
    if (!current.empty() && words.size() >= 7 && words[0] == "Sent") {
      TcClassCounters& counters = result[current];
      (void)absl::SimpleAtoi(words[1], &counters.bytes);
      (void)absl::SimpleAtoi(words[3], &counters.packets);
      (void)absl::SimpleAtoi(absl::StripSuffix(words[6], ","), &counters.drops);
      current.clear();
    }
  }
  return result;
}

}  // namespace internal

}  // namespace weft::nm
