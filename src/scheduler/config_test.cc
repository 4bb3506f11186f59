#include "scheduler/config.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/registry.h"

namespace weft::scheduler {
namespace {

using ::testing::HasSubstr;

absl::Status Parse(const char* yaml) {
  ResourceTypeRegistry reg;
  return ParseSchedulerConfig(yaml, reg, "q.yaml").status();
}

TEST(SchedulerConfigTest, DefaultsAndFullExample) {
  ResourceTypeRegistry reg;
  auto c = ParseSchedulerConfig("", reg);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->policy, "fair");
  ASSERT_EQ(c->root.children.size(), 1u);
  EXPECT_EQ(c->root.children[0].name, "default");

  c = ParseSchedulerConfig(R"(
policy: capacity
locality: {node-locality-delay: 5, rack-locality-delay: 1, max-locality-probes: 4}
preemption: {enabled: true, starvation-timeout-ms: 100, grace-period-ms: 50, threshold: 0.5}
queues:
  root:
    children:
      prod:
        capacity: 70
        maximum-capacity: 90
        user-limit-factor: 1.5
        maximum-am-resource-percent: 20
        ordering: fair
        weight: 2
        min-resources: "memory-mb=1024,vcores=1"
        max-resources: "memory-mb=8192"
        max-running-apps: 10
      dev: {capacity: 30, state: STOPPED}
)",
                           reg);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->policy, "capacity");
  EXPECT_EQ(c->locality.node_locality_delay, 5);
  EXPECT_TRUE(c->preemption.enabled);
  EXPECT_EQ(c->preemption.grace_period_ms, 50);
  const QueueConfig& prod = c->root.children[0];
  EXPECT_EQ(prod.name, "prod");
  EXPECT_EQ(prod.capacity, 70);
  EXPECT_EQ(prod.ordering, LeafOrdering::kFair);
  EXPECT_EQ(prod.max_resources[kMemoryMb], 8192);
  EXPECT_EQ(prod.max_resources[kVcores], kUnlimited);  // not named: unlimited
  EXPECT_EQ(prod.max_running_apps, 10);
  EXPECT_EQ(c->root.children[1].state, QueueState::kStopped);
}

TEST(SchedulerConfigTest, ErrorsNameTheKeyPath) {
  EXPECT_THAT(Parse("queues: {root: {children: {a: {wieght: 2}}}}").message(),
              HasSubstr("q.yaml: queues.root.children.a: unknown key 'wieght'"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {weight: -1}}}}").message(),
              HasSubstr("queues.root.children.a.weight: -1 must be > 0"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {weight: heavy}}}}").message(),
              HasSubstr("'heavy' is not a valid value"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {capacity: 150}}}}").message(),
              HasSubstr("must be a percentage"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {max-resources: 'gpus=1'}}}}").message(),
              HasSubstr("unknown resource type 'gpus'"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {}, b: {children: {a: {}}}}}}").message(),
              HasSubstr("'a' is used twice"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {state: PAUSED}}}}").message(),
              HasSubstr("not RUNNING or STOPPED"));
  EXPECT_THAT(Parse("queues: {top: {}}").message(), HasSubstr("single key 'root'"));
  EXPECT_THAT(Parse("queues: {root: {}}").message(), HasSubstr("at least one child"));
  EXPECT_THAT(Parse("policy: [a, b]").message(), HasSubstr("policy"));
  EXPECT_THAT(Parse("preemption: {threshold: 2}").message(), HasSubstr("(0, 1]"));
  EXPECT_THAT(Parse("locality: {node-locality-delay: -1}").message(), HasSubstr(">= 0"));
  EXPECT_THAT(Parse("a: [").message(), HasSubstr("not valid YAML"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {min-resources: 'memory-mb=2048', "
                    "max-resources: 'memory-mb=1024'}}}}")
                  .message(),
              HasSubstr("min-resources is above max-resources"));
}

TEST(SchedulerConfigTest, AmShareAndUserLimits) {
  ResourceTypeRegistry reg;
  SchedulerConfig d = DefaultSchedulerConfig();
  EXPECT_EQ(d.queue_max_am_share_default, 0.5);  // YARN's queueMaxAMShareDefault
  EXPECT_EQ(d.user_max_apps_default, -1);        // no per-user limit
  EXPECT_TRUE(d.users.empty());
  EXPECT_FALSE(d.root.children[0].max_am_share.has_value());

  auto c = ParseSchedulerConfig(R"(
queue-max-am-share-default: 0.3
user-max-apps-default: 5
users:
  alice: {max-running-apps: 2}
  etl-batch: {max-running-apps: -1}
  bob:
queues:
  root:
    children:
      a: {max-am-share: 0.8}
      b: {max-am-share: -1}
      c: {}
)",
                                reg, "q.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->queue_max_am_share_default, 0.3);
  EXPECT_EQ(c->user_max_apps_default, 5);
  ASSERT_EQ(c->users.size(), 3u);
  EXPECT_EQ(c->users.at("alice").max_running_apps, 2);
  EXPECT_EQ(c->users.at("etl-batch").max_running_apps, -1);
  EXPECT_FALSE(c->users.at("bob").max_running_apps.has_value());  // the default applies
  EXPECT_EQ(c->root.children[0].max_am_share, 0.8);
  EXPECT_EQ(c->root.children[1].max_am_share, -1);
  EXPECT_FALSE(c->root.children[2].max_am_share.has_value());
}

TEST(SchedulerConfigTest, AmShareAndUserLimitErrorsNameTheKey) {
  EXPECT_THAT(Parse("queues: {root: {children: {a: {max-am-share: 1.5}}}}").message(),
              HasSubstr("q.yaml: queues.root.children.a.max-am-share: 1.5 must be a share in "
                        "[0, 1], or -1 for no limit"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {max-am-share: -0.5}}}}").message(),
              HasSubstr("queues.root.children.a.max-am-share: -0.5 must be a share"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {max-am-share: half}}}}").message(),
              HasSubstr("queues.root.children.a.max-am-share: 'half' is not a valid value"));
  EXPECT_THAT(
      Parse("queues: {root: {children: {p: {max-am-share: 0.5, children: {x: {}}}}}}").message(),
      HasSubstr("queues.root.children.p.max-am-share: applies to leaf queues only"));
  EXPECT_THAT(Parse("queue-max-am-share-default: 2").message(),
              HasSubstr("q.yaml: queue-max-am-share-default: 2 must be a share in [0, 1]"));
  EXPECT_THAT(Parse("user-max-apps-default: -2").message(),
              HasSubstr("q.yaml: user-max-apps-default: -2 must be >= 0, or -1 for no limit"));
  EXPECT_THAT(Parse("user-max-apps-default: many").message(),
              HasSubstr("user-max-apps-default: 'many' is not a valid value"));
  EXPECT_THAT(Parse("users: {alice: {max-running-apps: -3}}").message(),
              HasSubstr("q.yaml: users.alice.max-running-apps: -3 must be >= 0, or -1"));
  EXPECT_THAT(Parse("users: {alice: {max-apps: 3}}").message(),
              HasSubstr("q.yaml: users.alice: unknown key 'max-apps'"));
  EXPECT_THAT(Parse("users: [alice]").message(),
              HasSubstr("q.yaml: users: expected a mapping of user name"));
  EXPECT_THAT(Parse("users: {'al ice': {max-running-apps: 1}}").message(),
              HasSubstr("users.al ice: user name 'al ice' must be non-empty, without spaces"));
  EXPECT_THAT(Parse("user-max-apps: 3").message(), HasSubstr("unknown key 'user-max-apps'"));
}

// root
// ├── prod           submit: alice, group etl; admin: group prod-admins
// │   └── etl        submit: bob
// │       └── nightly
// └── dev            (no ACLs)
constexpr char kAclYaml[] = R"(
queues:
  root:
    acl_submit_applications: " "
    acl_administer_queue: " ops"
    children:
      prod:
        acl_submit_applications: "alice etl"
        acl_administer_queue: " prod-admins"
        children:
          etl:
            acl_submit_applications: "bob"
            children: {nightly: {}}
      dev: {}
)";

SchedulerConfig MustParse(const char* yaml) {
  ResourceTypeRegistry reg;
  auto c = ParseSchedulerConfig(yaml, reg, "q.yaml");
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : SchedulerConfig{};
}

bool CanSubmit(const SchedulerConfig& c, absl::string_view queue, absl::string_view user,
               const std::vector<std::string>& groups = {}) {
  return QueueAccessAllowed(c, queue, QueueAcl::kSubmitApplications, user, groups);
}

bool CanAdminister(const SchedulerConfig& c, absl::string_view queue, absl::string_view user,
                   const std::vector<std::string>& groups = {}) {
  return QueueAccessAllowed(c, queue, QueueAcl::kAdministerQueue, user, groups);
}

TEST(SchedulerConfigAclTest, ParsesAclsAndLeavesUnsetOnesUnset) {
  SchedulerConfig c = MustParse(kAclYaml);
  ASSERT_TRUE(c.root.acl_submit_applications.has_value());
  EXPECT_EQ(*c.root.acl_submit_applications, AccessControlList::Nobody());
  EXPECT_EQ(c.root.acl_administer_queue->ToString(), " ops");
  const QueueConfig& prod = c.root.children[0];
  EXPECT_EQ(prod.acl_submit_applications->ToString(), "alice etl");
  EXPECT_EQ(prod.acl_administer_queue->ToString(), " prod-admins");
  EXPECT_EQ(prod.children[0].acl_submit_applications->ToString(), "bob ");
  EXPECT_FALSE(prod.children[0].acl_administer_queue.has_value());
  EXPECT_FALSE(c.root.children[1].acl_submit_applications.has_value());
  EXPECT_FALSE(DefaultSchedulerConfig().root.acl_submit_applications.has_value());
}

TEST(SchedulerConfigAclTest, RootDefaultsToEveryoneSubmittingAndNoQueueAdmins) {
  // As YARN, root's submit ACL defaults to "*", and every queue inherits it; unlike YARN, its
  // administer ACL defaults to nobody, so that no user may kill another's app by default.
  SchedulerConfig c = DefaultSchedulerConfig();
  EXPECT_TRUE(CanSubmit(c, "default", "anyone"));
  EXPECT_FALSE(CanAdminister(c, "root.default", "anyone"));
  c = MustParse("queues: {root: {children: {a: {acl_submit_applications: 'alice'}}}}");
  EXPECT_TRUE(CanSubmit(c, "a", "mallory"));  // root's "*" still lets everyone in
  c = MustParse("queues: {root: {acl_submit_applications: '*', children: {a: {}}}}");
  EXPECT_TRUE(CanSubmit(c, "a", "mallory"));
}

TEST(SchedulerConfigAclTest, SubmitIsInheritedDownTheTree) {
  SchedulerConfig c = MustParse(kAclYaml);
  EXPECT_TRUE(CanSubmit(c, "nightly", "bob"));    // through etl
  EXPECT_TRUE(CanSubmit(c, "nightly", "alice"));  // through prod
  EXPECT_TRUE(CanSubmit(c, "etl", "alice"));
  EXPECT_TRUE(CanSubmit(c, "prod", "alice"));
  EXPECT_FALSE(CanSubmit(c, "prod", "bob"));   // bob's ACL is below prod
  EXPECT_FALSE(CanSubmit(c, "dev", "alice"));  // root is " " and dev allows nobody
  EXPECT_FALSE(CanSubmit(c, "nightly", "mallory"));
  EXPECT_FALSE(CanSubmit(c, "root", "alice"));
  // Submitting does not make one an administrator.
  EXPECT_FALSE(CanAdminister(c, "nightly", "alice"));
  EXPECT_FALSE(CanAdminister(c, "etl", "bob"));
}

TEST(SchedulerConfigAclTest, GroupForm) {
  SchedulerConfig c = MustParse(kAclYaml);
  EXPECT_TRUE(CanSubmit(c, "nightly", "carol", {"staff", "etl"}));
  EXPECT_FALSE(CanSubmit(c, "nightly", "carol", {"staff"}));
  EXPECT_FALSE(CanSubmit(c, "nightly", "etl"));  // a user named like the group is not in it
}

TEST(SchedulerConfigAclTest, AdministerImpliesSubmitAndIsInherited) {
  SchedulerConfig c = MustParse(kAclYaml);
  const std::vector<std::string> prod_admins = {"prod-admins"};
  EXPECT_TRUE(CanAdminister(c, "nightly", "pat", prod_admins));
  EXPECT_TRUE(CanSubmit(c, "nightly", "pat", prod_admins));
  EXPECT_TRUE(CanSubmit(c, "prod", "pat", prod_admins));
  EXPECT_FALSE(CanAdminister(c, "dev", "pat", prod_admins));
  EXPECT_FALSE(CanSubmit(c, "dev", "pat", prod_admins));
  EXPECT_FALSE(CanAdminister(c, "root", "pat", prod_admins));
  // root's administrators administer, and may submit to, every queue.
  for (const char* q : {"root", "prod", "etl", "nightly", "dev"}) {
    EXPECT_TRUE(CanAdminister(c, q, "olga", {"ops"})) << q;
    EXPECT_TRUE(CanSubmit(c, q, "olga", {"ops"})) << q;
  }
}

TEST(SchedulerConfigAclTest, QueueNamesAndPaths) {
  SchedulerConfig c = MustParse(kAclYaml);
  for (const char* q : {"nightly", "root.prod.etl.nightly", "prod.etl.nightly", "etl",
                        "root.prod.etl", "prod.etl"}) {
    EXPECT_TRUE(CanSubmit(c, q, "bob")) << q;
  }
  for (const char* q : {"", "nope", "root.nightly", "etl.nightly", "root.prod.nightly", "root.",
                        ".nightly", "ROOT.prod", "Prod"}) {
    EXPECT_FALSE(CanSubmit(c, q, "olga", {"ops"})) << q;  // unknown: false even for admins
    EXPECT_FALSE(CanAdminister(c, q, "olga", {"ops"})) << q;
  }
  // Unknown queues are refused even when root is open to everyone.
  EXPECT_FALSE(CanSubmit(DefaultSchedulerConfig(), "nope", "anyone"));
}

TEST(SchedulerConfigAclTest, BadAclsAreRefusedNamingTheQueue) {
  EXPECT_THAT(
      Parse("queues: {root: {children: {a: {acl_submit_applications: 'alice,b@d ops'}}}}")
          .message(),
      HasSubstr("q.yaml: queues.root.children.a.acl_submit_applications: user entry 'b@d' is "
                "not a valid name"));
  EXPECT_THAT(
      Parse("queues: {root: {acl_administer_queue: 'alice, bob', children: {a: {}}}}").message(),
      HasSubstr("q.yaml: queues.root.acl_administer_queue: empty user entry"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {children: {b: "
                    "{acl_administer_queue: ' ops,*'}}}}}}")
                  .message(),
              HasSubstr("queues.root.children.a.children.b.acl_administer_queue: '*' must "
                        "stand alone"));
  EXPECT_THAT(
      Parse("queues: {root: {children: {a: {acl_submit_applications: [alice]}}}}").message(),
      HasSubstr("queues.root.children.a.acl_submit_applications: expected a single value"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {acl_submit_applications: }}}}").message(),
              HasSubstr("queues.root.children.a.acl_submit_applications: expected an ACL"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {acl_submit: alice}}}}").message(),
              HasSubstr("unknown key 'acl_submit'"));
}

TEST(SchedulerConfigTest, NodeLabelsGangModeAndQueueLabelKeys) {
  ResourceTypeRegistry reg;
  auto c = ParseSchedulerConfig(R"(
node-labels: {gpu: {exclusive: true}, ssd: {exclusive: false}, fpga: }
gang-mode: hold-and-wait
queues:
  root:
    children:
      ml: {accessible-node-labels: "gpu, ssd", node-label-maximum-capacity: {gpu: 40}}
      etl: {accessible-node-labels: [ssd]}
)",
                                reg, "q.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->node_labels.at("gpu").exclusive);
  EXPECT_FALSE(c->node_labels.at("ssd").exclusive);
  EXPECT_TRUE(c->node_labels.at("fpga").exclusive);  // YARN's default
  EXPECT_EQ(c->gang_mode, "hold-and-wait");
  const QueueConfig& ml = c->root.children[0];
  EXPECT_EQ(*ml.accessible_node_labels, (std::vector<std::string>{"gpu", "ssd"}));
  EXPECT_EQ(ml.node_label_maximum_capacity.at("gpu"), 40);
  EXPECT_EQ(*c->root.children[1].accessible_node_labels, std::vector<std::string>{"ssd"});
  EXPECT_FALSE(c->root.accessible_node_labels.has_value());

  auto parse = [&](const std::string& yaml) { return ParseSchedulerConfig(yaml, reg, "q.yaml").status(); };
  EXPECT_THAT(parse("node-labels: {'bad label': {}}").message(),
              HasSubstr("node-labels.bad label: a node label is 1-255 characters"));
  EXPECT_THAT(parse("node-labels: {gpu: {shared: true}}").message(), HasSubstr("unknown key 'shared'"));
  EXPECT_THAT(parse("gang-mode: greedy").message(),
              HasSubstr("gang-mode: 'greedy' is not reserve or hold-and-wait"));
  EXPECT_THAT(parse("queues: {root: {children: {a: {node-label-maximum-capacity: {gpu: 140}}}}}")
                  .message(),
              HasSubstr("node-label-maximum-capacity.gpu: 140 must be a percentage"));
  // Labels a queue names must exist: checked when the scheduler is built.
  auto unknown = ParseSchedulerConfig(
      "queues: {root: {children: {a: {accessible-node-labels: [tpu]}}}}", reg, "q.yaml");
  ASSERT_TRUE(unknown.ok());
  auto s = CreateScheduler(*unknown, SchedulerOptions{reg});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("accessible node label 'tpu' is not a cluster node label"));
}

}  // namespace
}  // namespace weft::scheduler
