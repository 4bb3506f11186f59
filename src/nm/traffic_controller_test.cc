// Copyright Weft authors. TrafficController against a scripted CommandRunner (any user), and
// against the real kernel in a private network namespace with a veth pair (root only).
#include "nm/traffic_controller.h"

#include <sched.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::nm {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// Records every command; `fail` decides which ones exit 2 (with a stderr message).
class ScriptedRunner : public CommandRunner {
 public:
  absl::StatusOr<CommandResult> Run(const std::vector<std::string>& argv) override {
    std::string line = CommandLine(argv);
    commands.push_back(line);
    CommandResult result;
    if (fail && fail(line)) {
      result.exit_code = 2;
      result.stderr_text = "Error: scripted failure\n";
    }
    if (absl::StartsWith(line, "tc -s class show")) result.stdout_text = stats;
    return result;
  }
  std::vector<std::string> commands;
  std::function<bool(const std::string&)> fail;
  std::string stats;

  bool Ran(absl::string_view prefix) const {
    for (const std::string& c : commands) {
      if (absl::StartsWith(c, prefix)) return true;
    }
    return false;
  }
};

TrafficControlOptions Options() {
  TrafficControlOptions options;
  options.interface = "veth0";
  options.link_mbps = 200;
  options.containers_total_mbps = 180;
  options.net_cls_available = true;
  return options;
}

bool TcCgroupFilter(const std::string& line) { return absl::StrContains(line, " cgroup"); }

TEST(TrafficControllerTest, BuildsTheHtbTreeOfTheDesign) {
  ScriptedRunner runner;
  runner.fail = [](const std::string& line) {
    return absl::StartsWith(line, "tc filter add") && TcCgroupFilter(line);
  };
  auto tc = TrafficController::Create(Options(), &runner);
  ASSERT_TRUE(tc.ok()) << tc.status();
  EXPECT_TRUE(runner.Ran("tc qdisc add dev veth0 root handle 1: htb default 2"));
  EXPECT_TRUE(runner.Ran(
      "tc class add dev veth0 parent 1: classid 1:1 htb rate 200mbit ceil 200mbit"));
  EXPECT_TRUE(runner.Ran(
      "tc class add dev veth0 parent 1:1 classid 1:2 htb rate 20mbit ceil 200mbit"));
  EXPECT_TRUE(runner.Ran(
      "tc class add dev veth0 parent 1:1 classid 1:3 htb rate 180mbit ceil 200mbit"));
  // tc's cgroup filter failed: iptables with the net_cls match is next.
  EXPECT_EQ((*tc)->classifier(), "iptables-net_cls");
  ASSERT_EQ((*tc)->rejected_classifiers().size(), 1u);
  EXPECT_THAT((*tc)->rejected_classifiers()[0], HasSubstr("tc-cgroup"));
  EXPECT_TRUE(runner.Ran("iptables -w -t mangle -A POSTROUTING -o veth0 -j WEFT-veth0"));
  EXPECT_THAT((*tc)->Describe(), HasSubstr("link 200 Mbit/s, containers 180 Mbit/s"));
}

TEST(TrafficControllerTest, PrefersTheTcCgroupFilterWhenItWorks) {
  ScriptedRunner runner;
  auto tc = TrafficController::Create(Options(), &runner);
  ASSERT_TRUE(tc.ok()) << tc.status();
  EXPECT_EQ((*tc)->classifier(), "tc-cgroup");
  absl::StatusOr<uint32_t> classid = (*tc)->AddContainer("c1", 80);
  ASSERT_TRUE(classid.ok()) << classid.status();
  EXPECT_EQ(*classid, 0x10010u);
  EXPECT_FALSE(runner.Ran("iptables -w -t mangle -A WEFT-veth0"));  // no per-container rule
}

TEST(TrafficControllerTest, ContainerClassesAndRulesComeAndGo) {
  ScriptedRunner runner;
  runner.fail = [](const std::string& line) { return absl::StartsWith(line, "tc filter add"); };
  auto tc = TrafficController::Create(Options(), &runner);
  ASSERT_TRUE(tc.ok()) << tc.status();
  absl::StatusOr<uint32_t> a = (*tc)->AddContainer("container_a", 80);
  absl::StatusOr<uint32_t> b = (*tc)->AddContainer("container_b", 0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(*a, NetClsClassId(0x10));
  EXPECT_TRUE(runner.Ran("tc class add dev veth0 parent 1:3 classid 1:10 htb rate 80mbit "
                         "ceil 180mbit"));
  // A request of 0 gets the 1 Mbit/s best-effort minimum.
  EXPECT_TRUE(runner.Ran("tc class add dev veth0 parent 1:3 classid 1:11 htb rate 1mbit "
                         "ceil 180mbit"));
  EXPECT_TRUE(runner.Ran(absl::StrCat("iptables -w -t mangle -A WEFT-veth0 -m cgroup --cgroup ",
                                      0x10010, " -j CLASSIFY --set-class 1:10 -m comment "
                                      "--comment container_a")));
  EXPECT_EQ((*tc)->ClassOf("container_a"), "1:10");

  ASSERT_TRUE((*tc)->RemoveContainer("container_a").ok());
  EXPECT_TRUE(runner.Ran(absl::StrCat("iptables -w -t mangle -D WEFT-veth0 -m cgroup --cgroup ",
                                      0x10010)));
  EXPECT_TRUE(runner.Ran("tc class del dev veth0 classid 1:10"));
  EXPECT_FALSE((*tc)->HasContainer("container_a"));
  EXPECT_TRUE((*tc)->RemoveContainer("container_a").ok());  // idempotent
  // Ids are not reused at once.
  absl::StatusOr<uint32_t> c = (*tc)->AddContainer("container_c", 5);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, NetClsClassId(0x12));

  ASSERT_TRUE((*tc)->Teardown().ok());
  EXPECT_TRUE(runner.Ran("iptables -w -t mangle -X WEFT-veth0"));
  EXPECT_TRUE(runner.Ran("tc qdisc del dev veth0 root"));
}

TEST(TrafficControllerTest, BurstLimits) {
  for (auto [burst, ceil] : std::vector<std::pair<BurstLimit, std::string>>{
           {BurstLimit::kLink, "ceil 200mbit"}, {BurstLimit::kStrict, "ceil 30mbit"}}) {
    ScriptedRunner runner;
    TrafficControlOptions options = Options();
    options.burst = burst;
    auto tc = TrafficController::Create(options, &runner);
    ASSERT_TRUE(tc.ok());
    ASSERT_TRUE((*tc)->AddContainer("c", 30).ok());
    EXPECT_TRUE(runner.Ran(absl::StrCat("tc class add dev veth0 parent 1:3 classid 1:10 htb "
                                        "rate 30mbit ", ceil)))
        << BurstLimitName(burst);
  }
  EXPECT_FALSE(ParseBurstLimit("sometimes").ok());
  EXPECT_EQ(*ParseBurstLimit("strict"), BurstLimit::kStrict);
}

TEST(TrafficControllerTest, BadRequestsAreRefusedAndChangeNothing) {
  ScriptedRunner runner;
  auto tc = TrafficController::Create(Options(), &runner);
  ASSERT_TRUE(tc.ok());
  size_t before = runner.commands.size();
  absl::StatusOr<uint32_t> negative = (*tc)->AddContainer("c1", -5);
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(negative.status().message(), HasSubstr("network-mbps -5 is negative"));
  absl::StatusOr<uint32_t> too_big = (*tc)->AddContainer("c1", 181);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_big.status().message(), HasSubstr("above this node's containers' total of 180"));
  EXPECT_EQ(runner.commands.size(), before);
  EXPECT_FALSE((*tc)->HasContainer("c1"));
}

TEST(TrafficControllerTest, ChangeRateChangesTheClassInPlace) {
  ScriptedRunner runner;
  runner.fail = [](const std::string& line) { return absl::StartsWith(line, "tc filter add"); };
  auto tc = TrafficController::Create(Options(), &runner);
  ASSERT_TRUE(tc.ok()) << tc.status();
  absl::StatusOr<uint32_t> classid = (*tc)->AddContainer("c1", 20);
  ASSERT_TRUE(classid.ok());
  const size_t added = runner.commands.size();
  ASSERT_TRUE((*tc)->ChangeRate("c1", 60).ok());
  EXPECT_TRUE(
      runner.Ran("tc class change dev veth0 parent 1:3 classid 1:10 htb rate 60mbit "
                 "ceil 180mbit"));
  EXPECT_EQ((*tc)->RateOf("c1"), 60);
  EXPECT_EQ((*tc)->ClassOf("c1"), "1:10");  // same class: same net_cls.classid and rule
  // A decrease to 0 is the best-effort minimum, as at start.
  ASSERT_TRUE((*tc)->ChangeRate("c1", 0).ok());
  EXPECT_TRUE(runner.Ran("tc class change dev veth0 parent 1:3 classid 1:10 htb rate 1mbit "));
  // Nothing but the class changed: the classifier rule was never touched.
  for (size_t i = added; i < runner.commands.size(); ++i) {
    EXPECT_TRUE(absl::StartsWith(runner.commands[i], "tc class change")) << runner.commands[i];
  }

  // Refusals change nothing: bad rates run no command, a failed command keeps the old rate.
  const size_t before = runner.commands.size();
  EXPECT_EQ((*tc)->ChangeRate("c1", 181).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*tc)->ChangeRate("c1", -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*tc)->ChangeRate("nobody", 10).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(runner.commands.size(), before);
  runner.fail = [](const std::string& line) { return absl::StartsWith(line, "tc class change"); };
  absl::Status failed = (*tc)->ChangeRate("c1", 50);
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), HasSubstr("changing the bandwidth of container c1"));
  EXPECT_EQ((*tc)->RateOf("c1"), 1);
}

TEST(TrafficControllerTest, AFailedRuleRemovesTheClassAndFailsTheContainer) {
  ScriptedRunner runner;
  runner.fail = [](const std::string& line) { return absl::StartsWith(line, "tc filter add"); };
  auto tc = TrafficController::Create(Options(), &runner);
  ASSERT_TRUE(tc.ok());
  runner.fail = [](const std::string& line) {
    return absl::StrContains(line, "--comment doomed");
  };
  absl::StatusOr<uint32_t> result = (*tc)->AddContainer("doomed", 10);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("shaping container doomed"));
  EXPECT_THAT(result.status().message(), HasSubstr("scripted failure"));
  EXPECT_TRUE(runner.Ran("tc class del dev veth0 classid 1:10"));
  EXPECT_FALSE((*tc)->HasContainer("doomed"));
}

TEST(TrafficControllerTest, BadOptionsAreNamed) {
  ScriptedRunner runner;
  TrafficControlOptions options = Options();
  options.interface = "no such if";
  EXPECT_THAT(TrafficController::Create(options, &runner).status().message(),
              HasSubstr("interface 'no such if'"));
  options = Options();
  options.containers_total_mbps = 300;
  EXPECT_THAT(TrafficController::Create(options, &runner).status().message(),
              HasSubstr("containers' total 300 Mbit/s is above the link's 200"));
  options = Options();
  options.classifier = "bpf";
  EXPECT_THAT(TrafficController::Create(options, &runner).status().message(),
              HasSubstr("classifier 'bpf'"));
  // No classifier at all: start-up fails listing each reason, and the tree is removed again.
  options = Options();
  options.net_cls_available = false;
  runner.commands.clear();
  absl::Status none = TrafficController::Create(options, &runner).status();
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.message(), HasSubstr("no usable packet classifier"));
  EXPECT_THAT(none.message(), HasSubstr("net_cls controller is not mounted"));
  EXPECT_EQ(runner.commands.back(), "tc qdisc del dev veth0 root");
}

TEST(TrafficControllerTest, ParsesClassStatisticsAndComputesRates) {
  const std::string text =
      "class htb 1:1 root rate 200Mbit ceil 200Mbit burst 1600b cburst 1600b \n"
      " Sent 150190526 bytes 99233 pkt (dropped 0, overlimits 2183 requeues 0) \n"
      " backlog 0b 0p requeues 0\n"
      "class htb 1:10 parent 1:3 prio 0 rate 20Mbit ceil 20Mbit burst 1600b cburst 1600b \n"
      " Sent 7559566 bytes 5010 pkt (dropped 3, overlimits 410 requeues 0) \n";
  auto parsed = internal::ParseTcClassStats(text);
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed["1:10"].bytes, 7559566);
  EXPECT_EQ(parsed["1:10"].packets, 5010);
  EXPECT_EQ(parsed["1:10"].drops, 3);

  ScriptedRunner runner;
  auto tc = TrafficController::Create(Options(), &runner);
  ASSERT_TRUE(tc.ok());
  ASSERT_TRUE((*tc)->AddContainer("c", 20).ok());
  runner.stats = text;
  auto first = (*tc)->ReadStats(1000);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*first)["c"].tx_bytes, 7559566);
  EXPECT_EQ((*first)["c"].tx_rate_mbps, 0);
  runner.stats = absl::StrCat(
      "class htb 1:10 parent 1:3 prio 0 rate 20Mbit\n Sent ", 7559566 + 2'500'000,
      " bytes 6000 pkt (dropped 3, overlimits 410 requeues 0) \n");
  auto second = (*tc)->ReadStats(2000);
  ASSERT_TRUE(second.ok());
  EXPECT_DOUBLE_EQ((*second)["c"].tx_rate_mbps, 20.0);  // 2.5 MB in 1 s
}

// ---- The real kernel, in a network namespace of this test process's own.

class RealKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces, tc, iptables)";
    static bool in_namespace = false;
    if (!in_namespace) {
      if (unshare(CLONE_NEWNET) != 0) GTEST_SKIP() << "unshare(CLONE_NEWNET) failed";
      in_namespace = true;
      CommandRunner* run = CommandRunner::Default();
      for (const std::vector<std::string>& argv :
           std::vector<std::vector<std::string>>{
               {"ip", "link", "add", "wtest0", "type", "veth", "peer", "name", "wtest1"},
               {"ip", "link", "set", "wtest0", "up"},
               {"ip", "link", "set", "wtest1", "up"}}) {
        absl::Status s = RunChecked(run, argv);
        if (!s.ok()) GTEST_SKIP() << "cannot create a veth pair: " << s;
      }
    }
    absl::StatusOr<bool> mounted = MountNetClsIfMissing();
    if (!mounted.ok()) GTEST_SKIP() << "no net_cls: " << mounted.status();
  }

  static std::string Output(const std::vector<std::string>& argv) {
    std::string out;
    absl::Status s = RunChecked(CommandRunner::Default(), argv, &out);
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }
};

TEST_F(RealKernelTest, ProgramsAndRemovesClassesAndRules) {
  TrafficControlOptions options = Options();
  options.interface = "wtest0";
  auto tc = TrafficController::Create(options);
  ASSERT_TRUE(tc.ok()) << tc.status();
  std::cout << (*tc)->Describe() << "\n";
  ASSERT_TRUE((*tc)->AddContainer("container_x", 20).ok());
  std::string classes = Output({"tc", "class", "show", "dev", "wtest0"});
  EXPECT_THAT(classes, HasSubstr("class htb 1:10 parent 1:3"));
  EXPECT_THAT(classes, HasSubstr("rate 20Mbit ceil 180Mbit"));
  if ((*tc)->classifier() == "iptables-net_cls") {
    EXPECT_THAT(Output({"iptables", "-w", "-t", "mangle", "-S", "WEFT-wtest0"}),
                HasSubstr("container_x"));
  }
  auto stats = (*tc)->ReadStats(1);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(stats->contains("container_x"));

  ASSERT_TRUE((*tc)->RemoveContainer("container_x").ok());
  EXPECT_THAT(Output({"tc", "class", "show", "dev", "wtest0"}), Not(HasSubstr("1:10")));
  EXPECT_THAT(Output({"iptables", "-w", "-t", "mangle", "-S"}), Not(HasSubstr("container_x")));

  ASSERT_TRUE((*tc)->AddContainer("container_y", 30).ok());
  ASSERT_TRUE((*tc)->Teardown().ok());
  EXPECT_THAT(Output({"tc", "class", "show", "dev", "wtest0"}), IsEmpty());
  EXPECT_THAT(Output({"iptables", "-w", "-t", "mangle", "-S"}), Not(HasSubstr("WEFT")));
}

TEST_F(RealKernelTest, ChangeRateShowsInTheKernelsClass) {
  TrafficControlOptions options = Options();
  options.interface = "wtest0";
  auto tc = TrafficController::Create(options);
  ASSERT_TRUE(tc.ok()) << tc.status();
  ASSERT_TRUE((*tc)->AddContainer("container_r", 20).ok());
  EXPECT_THAT(Output({"tc", "class", "show", "dev", "wtest0"}),
              HasSubstr("rate 20Mbit ceil 180Mbit"));
  ASSERT_TRUE((*tc)->ChangeRate("container_r", 75).ok());
  std::string classes = Output({"tc", "class", "show", "dev", "wtest0"});
  std::cout << classes;
  EXPECT_THAT(classes, HasSubstr("class htb 1:10 parent 1:3"));
  EXPECT_THAT(classes, HasSubstr("rate 75Mbit ceil 180Mbit"));
  ASSERT_TRUE((*tc)->ChangeRate("container_r", 5).ok());
  EXPECT_THAT(Output({"tc", "class", "show", "dev", "wtest0"}),
              HasSubstr("rate 5Mbit ceil 180Mbit"));
  ASSERT_TRUE((*tc)->Teardown().ok());
}

TEST_F(RealKernelTest, AStartAfterACrashRemovesTheStaleTree) {
  TrafficControlOptions options = Options();
  options.interface = "wtest0";
  // What a crashed NM leaves behind: its tree, a container class and its rule.
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {"tc", "qdisc", "add", "dev", "wtest0", "root", "handle", "1:", "htb", "default", "2"},
           {"tc", "class", "add", "dev", "wtest0", "parent", "1:", "classid", "1:10", "htb",
            "rate", "10mbit"},
           {"iptables", "-w", "-t", "mangle", "-N", "WEFT-wtest0"},
           {"iptables", "-w", "-t", "mangle", "-A", "POSTROUTING", "-o", "wtest0", "-j",
            "WEFT-wtest0"},
           {"iptables", "-w", "-t", "mangle", "-A", "WEFT-wtest0", "-m", "cgroup", "--cgroup",
            "65552", "-j", "CLASSIFY", "--set-class", "1:10", "-m", "comment", "--comment",
            "stale_container"}}) {
    Output(argv);
  }
  auto tc = TrafficController::Create(options);
  ASSERT_TRUE(tc.ok()) << tc.status();
  EXPECT_THAT(Output({"tc", "class", "show", "dev", "wtest0"}), Not(HasSubstr("1:10")));
  EXPECT_THAT(Output({"iptables", "-w", "-t", "mangle", "-S"}), Not(HasSubstr("stale_container")));
  ASSERT_TRUE((*tc)->Teardown().ok());
}

}  // namespace
}  // namespace weft::nm
