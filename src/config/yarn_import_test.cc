#include "config/yarn_import.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/resource_types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/config.h"
#include "scheduler/registry.h"
#include "yaml-cpp/yaml.h"

namespace weft::config {
namespace {

using scheduler::QueueConfig;
using scheduler::SchedulerConfig;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A test data file (testdata/, written out from Hadoop's documentation), named `as`.
XmlFile TestData(const std::string& file, const std::string& as) {
  std::ifstream in(absl::StrCat(WEFT_CONFIG_TESTDATA, "/", file));
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << file;
  return {as, s.str()};
}

XmlFile Site(const std::string& properties, const std::string& name = "yarn-site.xml") {
  return {name, absl::StrCat("<configuration>\n", properties, "</configuration>\n")};
}

std::string Prop(const std::string& name, const std::string& value) {
  return absl::StrCat("<property><name>", name, "</name><value>", value, "</value></property>\n");
}

SchedulerConfig Parsed(const YarnImport& r) {
  ResourceTypeRegistry registry;
  auto c = scheduler::ParseSchedulerConfig(r.scheduler_yaml, registry, "scheduler.yaml");
  EXPECT_TRUE(c.ok()) << c.status() << "\n" << r.scheduler_yaml;
  return c.ok() ? *c : SchedulerConfig();
}

const QueueConfig& Child(const QueueConfig& q, const std::string& name) {
  for (const QueueConfig& c : q.children)
    if (c.name == name) return c;
  ADD_FAILURE() << q.name << " has no child " << name;
  static QueueConfig none;
  return none;
}

std::vector<std::string> Names(const QueueConfig& q) {
  std::vector<std::string> out;
  for (const QueueConfig& c : q.children) out.push_back(c.name);
  return out;
}

TEST(YarnImportTest, CapacitySchedulerDocumentationExample) {
  auto r = ImportYarnConfig({TestData("yarn-site-capacity.xml", "yarn-site.xml"),
                             TestData("capacity-scheduler.xml", "capacity-scheduler.xml"),
                             std::nullopt});
  ASSERT_TRUE(r.ok()) << r.status();
  SchedulerConfig c = Parsed(*r);
  EXPECT_EQ(c.policy, "capacity");
  EXPECT_EQ(c.locality.node_locality_delay, 1);  // 40 opportunities: one missed pass
  EXPECT_TRUE(c.preemption.enabled);
  EXPECT_EQ(c.user_max_apps_default, 20);
  // The documented tree: root.queues a,b,c; a.queues a1,a2; b.queues b1,b2,b3.
  EXPECT_THAT(Names(c.root), ElementsAre("a", "b", "c"));
  const QueueConfig& a = Child(c.root, "a");
  const QueueConfig& b = Child(c.root, "b");
  const QueueConfig& cq = Child(c.root, "c");
  EXPECT_THAT(Names(a), ElementsAre("a1", "a2"));
  EXPECT_THAT(Names(b), ElementsAre("b1", "b2", "b3"));
  EXPECT_TRUE(cq.children.empty());
  EXPECT_DOUBLE_EQ(a.capacity, 12.5);
  EXPECT_DOUBLE_EQ(a.maximum_capacity, 100);  // -1
  EXPECT_DOUBLE_EQ(b.capacity, 50);
  EXPECT_DOUBLE_EQ(b.maximum_capacity, 80);
  EXPECT_DOUBLE_EQ(cq.capacity, 37.5);
  // Weights 3w, 2w, 5w: 30%, 20%, 50%, as the documentation computes.
  EXPECT_DOUBLE_EQ(Child(b, "b1").capacity, 30);
  EXPECT_DOUBLE_EQ(Child(b, "b2").capacity, 20);
  EXPECT_DOUBLE_EQ(Child(b, "b3").capacity, 50);
  EXPECT_EQ(Child(b, "b3").state, scheduler::QueueState::kStopped);
  const QueueConfig& a1 = Child(a, "a1");
  EXPECT_DOUBLE_EQ(a1.capacity, 60);
  EXPECT_DOUBLE_EQ(a1.user_limit_factor, 2);
  EXPECT_EQ(a1.max_running_apps, 50);
  EXPECT_EQ(a1.ordering, scheduler::LeafOrdering::kFair);
  EXPECT_EQ(cq.ordering, scheduler::LeafOrdering::kFifo);
  // maximum-am-resource-percent: a2's own 0.2, the others the global 0.1.
  EXPECT_DOUBLE_EQ(Child(a, "a2").maximum_am_resource_percent, 20);
  EXPECT_DOUBLE_EQ(a1.maximum_am_resource_percent, 10);
  // ACLs: root " " (nobody) and " admins" (a group); a "alice,bob etl"; c "carol".
  ASSERT_TRUE(c.root.acl_submit_applications.has_value());
  EXPECT_EQ(c.root.acl_submit_applications->ToString(), " ");
  EXPECT_EQ(c.root.acl_administer_queue->ToString(), " admins");
  EXPECT_EQ(a.acl_submit_applications->ToString(), "alice,bob etl");
  EXPECT_EQ(cq.acl_administer_queue->ToString(), "carol ");
  EXPECT_TRUE(
      scheduler::QueueAccessAllowed(c, "a1", scheduler::QueueAcl::kSubmitApplications, "bob", {}));
  EXPECT_FALSE(
      scheduler::QueueAccessAllowed(c, "b1", scheduler::QueueAcl::kSubmitApplications, "bob", {}));

  EXPECT_THAT(r->daemon_yaml, HasSubstr("node-resources: \"memory-mb=8192,vcores=8\""));
  EXPECT_THAT(r->daemon_yaml, HasSubstr("port: 8032"));
  EXPECT_THAT(r->daemon_yaml, HasSubstr("rm: \"rm.example.com:8032\""));
  EXPECT_THAT(r->daemon_yaml,
              HasSubstr("resource-limit: [\"memory-mb:1024:8192:1024\", \"vcores:1:4:1\"]"));
  EXPECT_THAT(r->daemon_yaml, HasSubstr("admins: [\"yarn\"]"));

  EXPECT_THAT(
      r->unconverted,
      ElementsAre(
          "yarn-site.xml:21: yarn.resourcemanager.scheduler.address=rm.example.com:8030: Weft's "
          "RM serves clients, AMs, NMs and admins on its one port (rm.port 8032)",
          "yarn-site.xml:61: yarn.admin.acl=yarn admins (groups admins): Weft's cluster admins "
          "(rm.admins) are users only; the users were converted",
          "yarn-site.xml:65: yarn.nodemanager.aux-services=mapreduce_shuffle: Weft's NM runs no "
          "auxiliary services (no MapReduce shuffle service)",
          "capacity-scheduler.xml:15: yarn.scheduler.capacity.maximum-applications=10000: Weft "
          "rejects no submission for a count of apps; max-parallel-apps (max-running-apps) makes "
          "apps wait instead",
          "capacity-scheduler.xml:23: "
          "yarn.scheduler.capacity.resource-calculator=org.apache.hadoop.yarn.util.resource."
          "DefaultResourceCalculator: Weft's capacity policy always compares dominant shares over "
          "every resource type (as DominantResourceCalculator); memory-only accounting is not "
          "available",
          "capacity-scheduler.xml:31: "
          "yarn.scheduler.capacity.queue-mappings=u:user1:queue1,u:user2:queue2: Weft has no "
          "queue placement rules: an app runs in the queue it names, or in 'default'",
          "capacity-scheduler.xml:103: "
          "yarn.scheduler.capacity.root.a.a2.minimum-user-limit-percent=25: Weft's capacity "
          "policy limits users by user-limit-factor only",
          "capacity-scheduler.xml:132: "
          "yarn.scheduler.capacity.root.b.b3.maximum-application-lifetime=3600: Weft has no "
          "application lifetimes"));
}

TEST(YarnImportTest, FairSchedulerDocumentationExample) {
  auto r = ImportYarnConfig({TestData("yarn-site-fair.xml", "yarn-site.xml"), std::nullopt,
                             TestData("fair-scheduler.xml", "fair-scheduler.xml")});
  ASSERT_TRUE(r.ok()) << r.status();
  SchedulerConfig c = Parsed(*r);
  ResourceTypeRegistry reg;
  EXPECT_EQ(c.policy, "fair");
  EXPECT_DOUBLE_EQ(c.queue_max_am_share_default, 0.5);
  EXPECT_EQ(c.user_max_apps_default, 5);
  ASSERT_EQ(c.users.count("sample_user"), 1u);
  EXPECT_EQ(c.users.at("sample_user").max_running_apps, 30);
  EXPECT_TRUE(c.preemption.enabled);
  EXPECT_EQ(c.locality.node_locality_delay, 0);  // -1: never pass up an opportunity
  EXPECT_EQ(c.locality.rack_locality_delay, 1);
  // YARN's FairScheduler always has root.default.
  EXPECT_THAT(Names(c.root), ElementsAre("sample_queue", "secondary_group_queue", "default"));
  const QueueConfig& sample = Child(c.root, "sample_queue");
  EXPECT_THAT(Names(sample), ElementsAre("sample_sub_queue", "sample_reservable_queue"));
  EXPECT_DOUBLE_EQ(sample.weight, 2);
  EXPECT_EQ(sample.min_resources[kMemoryMb], 10000);
  EXPECT_EQ(sample.max_resources[kMemoryMb], 90000);
  EXPECT_EQ(sample.max_resources[kVcores], scheduler::kUnlimited);  // 0vcores is not a cap (listed)
  EXPECT_EQ(sample.max_running_apps, 50);
  EXPECT_FALSE(sample.max_am_share.has_value());  // a parent's: listed
  const QueueConfig& sub = Child(sample, "sample_sub_queue");
  EXPECT_EQ(sub.min_resources[kMemoryMb], 5000);
  EXPECT_EQ(sub.max_resources[kMemoryMb], 40000);  // queueMaxResourcesDefault
  EXPECT_EQ(sub.acl_submit_applications->ToString(), "charlie ");
  const QueueConfig& secondary = Child(c.root, "secondary_group_queue");
  EXPECT_DOUBLE_EQ(secondary.weight, 3);
  EXPECT_TRUE(secondary.children.empty());
  EXPECT_EQ(Child(c.root, "default").max_resources[kMemoryMb], 40000);

  EXPECT_THAT(r->daemon_yaml, HasSubstr("node-resources: \"memory-mb=16384,vcores=16\""));
  EXPECT_THAT(r->daemon_yaml, HasSubstr("resource-limit: [\"memory-mb:1024:8192:512\"]"));

  const std::string zero_cap =
      "vcores=0 not applied: a maximum of 0 would let the queue run nothing in Weft (YARN's "
      "memory-only fair policy ignores it); the rest was converted";
  const std::string placement =
      "Weft has no queue placement rules: an app runs in the queue it names, or in 'default'";
  EXPECT_THAT(
      r->unconverted,
      ElementsAre(
          "yarn-site.xml:16: yarn.scheduler.fair.user-as-default-queue=true: YARN ignores it "
          "too: the allocation file has a queuePlacementPolicy",
          "yarn-site.xml:24: yarn.scheduler.fair.preemption.cluster-utilization-threshold=0.8: "
          "Weft's fair policy has no equivalent of this FairScheduler setting",
          "yarn-site.xml:28: yarn.scheduler.fair.sizebasedweight=false: Weft's fair policy has "
          "no equivalent of this FairScheduler setting",
          "yarn-site.xml:40: yarn.scheduler.fair.allow-undeclared-pools=false: YARN ignores it "
          "too: the allocation file has a queuePlacementPolicy",
          "fair-scheduler.xml:11: <maxResources>90000 mb,0vcores</maxResources> in queue "
          "root.sample_queue: " +
              zero_cap,
          "fair-scheduler.xml:13: <maxAMShare>0.1</maxAMShare> in queue root.sample_queue: "
          "applies to leaf queues only (YARN ignores it on a parent queue)",
          "fair-scheduler.xml:21: <reservation/> in queue "
          "root.sample_queue.sample_reservable_queue: Weft has no reservation system",
          "fair-scheduler.xml:26: <queueMaxResourcesDefault>40000 "
          "mb,0vcores</queueMaxResourcesDefault>: " +
              zero_cap,
          "fair-scheduler.xml:30: <queue name=\"secondary_group_queue\" type=\"parent\">: Weft "
          "creates no queues at submission (no user queues below a parent): it is a leaf queue "
          "in Weft",
          "fair-scheduler.xml:32: <maxChildResources>4096 mb,4vcores</maxChildResources> in "
          "queue root.secondary_group_queue: Weft creates no queues at submission, so there are "
          "no ad hoc child queues to limit",
          "fair-scheduler.xml:41: <rule name=\"specified\"/>: Weft creates no queues at "
          "submission: an app naming an unknown queue is refused",
          "fair-scheduler.xml:42: <rule name=\"primaryGroup\" create=\"false\"/>: " + placement,
          "fair-scheduler.xml:43: <rule name=\"nestedUserQueue\"><rule "
          "name=\"secondaryGroupExistingQueue\" create=\"false\"/></rule>: " +
              placement,
          "fair-scheduler.xml:46: <rule name=\"default\" queue=\"sample_queue\"/>: Weft places "
          "an app that names no queue in 'default', not in 'sample_queue'"));
}

// Nothing is dropped silently: what Weft does not know is listed, whatever it is.
TEST(YarnImportTest, UnknownPropertiesAndElementsAreListed) {
  auto cs = ImportYarnConfig(
      {Site(Prop("yarn.example.unknown", "1")),
       Site(Prop("yarn.scheduler.capacity.root.queues", "x") +
                Prop("yarn.scheduler.capacity.root.x.frobnicate", "7") +
                Prop("yarn.scheduler.capacity.root.ghost.capacity", "5") +
                Prop("yarn.scheduler.capacity.something-new", "on") + Prop("not.capacity", "1"),
            "cs.xml"),
       std::nullopt});
  ASSERT_TRUE(cs.ok()) << cs.status();
  EXPECT_THAT(
      cs->unconverted,
      ElementsAre(
          "yarn-site.xml:2: yarn.example.unknown=1: Weft has no equivalent of this yarn-site.xml "
          "property",
          "cs.xml:3: yarn.scheduler.capacity.root.x.frobnicate=7: Weft has no equivalent of this "
          "queue property",
          "cs.xml:4: yarn.scheduler.capacity.root.ghost.capacity=5: names a queue that no "
          "yarn.scheduler.capacity.<parent>.queues declares (YARN ignores it too)",
          "cs.xml:5: yarn.scheduler.capacity.something-new=on: Weft has no equivalent of this "
          "CapacityScheduler setting",
          "cs.xml:6: not.capacity=1: not a CapacityScheduler property "
          "(yarn.scheduler.capacity.*)"));

  auto fs = ImportYarnConfig({std::nullopt, std::nullopt,
                              XmlFile{"fs.xml",
                                      "<allocations>\n"
                                      "  <queue name=\"q\" color=\"red\">\n"
                                      "    <frob>1</frob>\n"
                                      "  </queue>\n"
                                      "  <newDefault>3</newDefault>\n"
                                      "</allocations>\n"}});
  ASSERT_TRUE(fs.ok()) << fs.status();
  EXPECT_THAT(
      fs->unconverted,
      ElementsAre(
          "fs.xml:2: color=\"red\" in queue root.q: Weft has no equivalent of this queue attribute",
          "fs.xml:3: <frob>1</frob> in queue root.q: Weft has no equivalent of this queue element",
          "fs.xml:5: <newDefault>3</newDefault>: Weft has no equivalent of this allocation file "
          "element"));
}

TEST(YarnImportTest, RepeatedPropertyKeepsTheLastAndListsTheFirst) {
  auto r = ImportYarnConfig({Site(Prop("yarn.nodemanager.resource.memory-mb", "1024") +
                                  Prop("yarn.nodemanager.resource.memory-mb", "2048")),
                             std::nullopt, std::nullopt});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->daemon_yaml, HasSubstr("memory-mb=2048,vcores=8"));
  EXPECT_THAT(r->unconverted,
              ElementsAre("yarn-site.xml:2: yarn.nodemanager.resource.memory-mb=1024: overridden "
                          "by the same property at line 3 (Hadoop keeps the last)"));
}

TEST(YarnImportTest, FairResourceForms) {
  auto r =
      ImportYarnConfig({std::nullopt, std::nullopt,
                        XmlFile{"fs.xml",
                                "<allocations>\n"
                                "<queue name=\"a\"><minResources>memory-mb=2048, vcores=2"
                                "</minResources><maxResources>50%</maxResources>\n"
                                "<schedulingPolicy>fifo</schedulingPolicy></queue>\n"
                                "<queue name=\"b\"><maxResources>4096 MB, 4 vcores</maxResources>"
                                "<weight>0</weight></queue>\n"
                                "</allocations>\n"}});
  ASSERT_TRUE(r.ok()) << r.status();
  SchedulerConfig c = Parsed(*r);
  const QueueConfig& a = Child(c.root, "a");
  EXPECT_EQ(a.min_resources[kMemoryMb], 2048);
  EXPECT_EQ(a.min_resources[kVcores], 2);
  EXPECT_EQ(a.max_resources[kMemoryMb], scheduler::kUnlimited);
  EXPECT_EQ(a.ordering, scheduler::LeafOrdering::kFifo);
  const QueueConfig& b = Child(c.root, "b");
  EXPECT_EQ(b.max_resources[kMemoryMb], 4096);
  EXPECT_EQ(b.max_resources[kVcores], 4);
  EXPECT_DOUBLE_EQ(b.weight, 1);
  EXPECT_THAT(r->unconverted,
              ElementsAre("fs.xml:2: <maxResources>50%</maxResources> in queue root.a: Weft's "
                          "queue resources are absolute amounts, not percentages of the cluster",
                          "fs.xml:4: <weight>0</weight> in queue root.b: Weft's weights are > 0: "
                          "a queue served only after all others is not expressible; left at "
                          "weight 1"));
}

void ExpectError(const YarnImportInput& in, const std::string& message) {
  auto r = ImportYarnConfig(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(message));
}

TEST(YarnImportTest, BadInputNamesFileAndLine) {
  ExpectError({std::nullopt, XmlFile{"cs.xml", "<configuration>\n<property>\n</configuration>"},
               std::nullopt},
              "cs.xml:3: malformed XML");
  ExpectError({std::nullopt, Site("", "cs.xml"), std::nullopt},
              "yarn.scheduler.capacity.root.queues is not set");
  ExpectError({std::nullopt, XmlFile{"cs.xml", "<allocations/>"}, std::nullopt},
              "cs.xml:1: expected the document element <configuration>");
  ExpectError({std::nullopt,
               Site(Prop("yarn.scheduler.capacity.root.queues", "a") +
                        Prop("yarn.scheduler.capacity.root.a.capacity", "lots"),
                    "cs.xml"),
               std::nullopt},
              "cs.xml:3: yarn.scheduler.capacity.root.a.capacity=lots: expected a percentage");
  ExpectError({std::nullopt,
               Site(Prop("yarn.scheduler.capacity.root.queues", "a,b") +
                        Prop("yarn.scheduler.capacity.root.a.capacity", "30") +
                        Prop("yarn.scheduler.capacity.root.b.capacity", "30"),
                    "cs.xml"),
               std::nullopt},
              "cs.xml: the converted configuration is refused: capacity: the capacities of the "
              "children of 'root' sum to 60, not 100");
  ExpectError({std::nullopt, Site(Prop("yarn.scheduler.capacity.root.queues", "a.b"), "cs.xml"),
               std::nullopt},
              "cs.xml:2: yarn.scheduler.capacity.root.queues=a.b: queue name 'a.b'");
  ExpectError(
      {std::nullopt,
       Site(Prop("yarn.scheduler.capacity.root.queues", "a") +
                Prop("yarn.scheduler.capacity.root.a.acl_submit_applications", "al ice,x y"),
            "cs.xml"),
       std::nullopt},
      "cs.xml:3: yarn.scheduler.capacity.root.a.acl_submit_applications");
  ExpectError({std::nullopt, std::nullopt,
               XmlFile{"fs.xml",
                       "<allocations>\n<queue name=\"a\">\n<minResources>1024 mb</minResources>\n"
                       "</queue>\n</allocations>"}},
              "fs.xml:3: <minResources>1024 mb</minResources> in queue root.a: missing the "
              "vcores");
  ExpectError({std::nullopt, std::nullopt,
               XmlFile{"fs.xml",
                       "<allocations>\n<queue name=\"a\"><queue name=\"x\"/></queue>\n"
                       "<queue name=\"b\">\n<queue name=\"x\"/></queue>\n</allocations>"}},
              "fs.xml:4: queue root.b.x: its name is also queue root.a.x's");
  ExpectError({Site(Prop("yarn.resourcemanager.scheduler.class",
                         "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair."
                         "FairScheduler")),
               Site(Prop("yarn.scheduler.capacity.root.queues", "a"), "cs.xml"), std::nullopt},
              "yarn-site.xml:2: yarn.resourcemanager.scheduler.class=");
  ExpectError(
      {std::nullopt, XmlFile{"cs.xml", "<configuration/>"}, XmlFile{"fs.xml", "<allocations/>"}},
      "not both");
}

// The YAML is written by an emitter: values that came from the XML with newlines, control
// characters, quotes or backslashes read back exactly, and no comment (which quotes file names
// and values) spills onto a line of its own.
TEST(YarnImportTest, ValuesWithNewlinesAndControlCharactersRoundTrip) {
  const std::string odd_dir = "/data/a\nb\001c\033[2Jd";
  const std::string odd_bind = "h\"q\\\tz";
  const std::string odd_user = "o'brien:#x\"\\";
  auto r = ImportYarnConfig(
      {Site(Prop("yarn.nodemanager.local-dirs", "/data/a\nb&#1;c&#27;[2Jd") +
                Prop("yarn.resourcemanager.bind-host", "h\"q\\\tz") +
                Prop("yarn.resourcemanager.address", "rm&#13;host:8032"),
            "yarn\nsite\x02.xml"),
       Site(Prop("yarn.scheduler.capacity.root.queues", "a") +
                Prop("yarn.scheduler.capacity.user.o'brien:#x\"\\.max-parallel-apps", "3"),
            "cs.xml"),
       std::nullopt});
  ASSERT_TRUE(r.ok()) << r.status();
  for (const std::string* yaml : {&r->scheduler_yaml, &r->daemon_yaml}) {
    for (char c : *yaml)
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 && c != '\n')
          << "a raw control character in\n"
          << *yaml;
  }
  YAML::Node daemon = YAML::Load(r->daemon_yaml);
  ASSERT_TRUE(daemon.IsMap()) << r->daemon_yaml;
  EXPECT_EQ(daemon.size(), 2u) << r->daemon_yaml;  // rm and nm: no comment spilled
  EXPECT_EQ(daemon["nm"]["work-root"].as<std::string>(), odd_dir);
  EXPECT_EQ(daemon["rm"]["bind"].as<std::string>(), odd_bind);
  EXPECT_EQ(daemon["nm"]["rm"].as<std::string>(), "rm\rhost:8032");
  EXPECT_EQ(daemon["rm"]["port"].as<int>(), 8032);
  EXPECT_THAT(r->daemon_yaml, HasSubstr("# yarn\\nsite\\x02.xml:2 yarn.nodemanager.local-dirs"));
  EXPECT_THAT(r->scheduler_yaml, HasSubstr("# from yarn\\nsite\\x02.xml and cs.xml."));
  SchedulerConfig c = Parsed(*r);
  ASSERT_EQ(c.users.count(odd_user), 1u) << r->scheduler_yaml;
  EXPECT_EQ(c.users.at(odd_user).max_running_apps, 3);
}

// Names Weft cannot take are refused naming the file, the line and the name, before any YAML is
// written: queue names are [A-Za-z0-9_-]+, user names have no whitespace or control character.
TEST(YarnImportTest, NamesWithNewlinesOrControlCharactersAreRefused) {
  ExpectError({std::nullopt, Site(Prop("yarn.scheduler.capacity.root.queues", "a\nb"), "cs.xml"),
               std::nullopt},
              "cs.xml:2: yarn.scheduler.capacity.root.queues=a\nb: queue name 'a\nb'");
  ExpectError({std::nullopt,
               Site(Prop("yarn.scheduler.capacity.root.queues", "a") +
                        Prop("yarn.scheduler.capacity.user.al\nice.max-parallel-apps", "3"),
                    "cs.xml"),
               std::nullopt},
              "cs.xml:3: yarn.scheduler.capacity.user.al\nice.max-parallel-apps=3: user name "
              "'al\nice': Weft's are non-empty, without whitespace or control characters");
  ExpectError({std::nullopt, std::nullopt,
               XmlFile{"fs.xml",
                       "<allocations>\n<user name=\"al&#1;ice\"><maxRunningApps>3"
                       "</maxRunningApps></user>\n</allocations>"}},
              "fs.xml:2: <user name=\"al&#01;ice\"><maxRunningApps>3</maxRunningApps></user>: "
              "user name 'al\x01ice'");
  ExpectError({std::nullopt, std::nullopt,
               XmlFile{"fs.xml", "<allocations>\n<queue name=\"a&#10;b\"/>\n</allocations>"}},
              "fs.xml:2: <queue name=\"a\nb\"/>: queue name 'a\nb'");
  // Bytes that are not UTF-8 could not be written back unchanged.
  ExpectError({std::nullopt,
               Site(Prop("yarn.scheduler.capacity.root.queues", "a") +
                        Prop("yarn.scheduler.capacity.user.b\xff.max-parallel-apps", "3"),
                    "cs.xml"),
               std::nullopt},
              "cs.xml:3: malformed XML: byte 0xff is not well-formed UTF-8");
}

}  // namespace
}  // namespace weft::config

namespace weft::config {
namespace {

// YARN-10475's keys become the RM's --nm-heartbeat-* settings; a bad factor names its line.
TEST(YarnImportTest, NodeManagerHeartbeatScaling) {
  const std::string hb = "yarn.resourcemanager.nodemanagers.heartbeat-interval-";
  auto r = ImportYarnConfig({Site(Prop(hb + "ms", "2000") + Prop(hb + "scaling-enable", "true") +
                                  Prop(hb + "min-ms", "500") + Prop(hb + "max-ms", "8000") +
                                  Prop(hb + "speedup-factor", "1.5") +
                                  Prop(hb + "slowdown-factor", "0.5")),
                             std::nullopt, std::nullopt});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->unconverted.empty()) << r->unconverted.front();
  YAML::Node rm = YAML::Load(r->daemon_yaml)["rm"];
  ASSERT_TRUE(rm.IsMap()) << r->daemon_yaml;
  EXPECT_EQ(rm["nm-heartbeat-ms"].as<int64_t>(), 2000);
  EXPECT_EQ(rm["nm-heartbeat-min-ms"].as<int64_t>(), 500);
  EXPECT_EQ(rm["nm-heartbeat-max-ms"].as<int64_t>(), 8000);
  EXPECT_TRUE(rm["nm-heartbeat-scaling"].as<bool>());
  EXPECT_DOUBLE_EQ(rm["nm-heartbeat-speedup"].as<double>(), 1.5);
  EXPECT_DOUBLE_EQ(rm["nm-heartbeat-slowdown"].as<double>(), 0.5);

  auto off = ImportYarnConfig(
      {Site(Prop(hb + "scaling-enable", "false")), std::nullopt, std::nullopt});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_TRUE(off->unconverted.empty());
  EXPECT_THAT(off->daemon_yaml, ::testing::Not(HasSubstr("nm-heartbeat-scaling")));

  auto bad = ImportYarnConfig(
      {Site(Prop(hb + "speedup-factor", "fast")), std::nullopt, std::nullopt});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("yarn-site.xml:2"));
  EXPECT_THAT(bad.status().message(), HasSubstr("expected a number >= 0"));
}

}  // namespace
}  // namespace weft::config
