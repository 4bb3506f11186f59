// Copyright Weft authors. Issue 30 through the RM's AmService: placement fields of asks,
// resource updates with versioned tokens (decreases sent to the NM until applied), gang
// rejections, and central node attributes.
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/am_asks.h"
#include "rm/rm_test_util.h"
#include "security/tokens.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;

// Registers an AM and returns its token; the app's AM container is on the first node.
v1::Token StartApp(RmHarness& h) {
  h.Submit();
  h.loop.Advance(200);
  return h.RegisterAm();
}

// Sends `req` as the next call (response ids counted by the caller).
v1::AllocateResponse Call(RmHarness& h, const v1::Token& t, v1::AllocateRequest req,
                          int32_t* response_id) {
  req.set_response_id(*response_id);
  auto r = h.rm().Allocate(t, req);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  *response_id = r->response_id();
  return *r;
}

TEST(PlacementRmTest, AskFieldsConvertAndBadConstraintsAreRefused) {
  v1::ResourceRequest ask = AnyAsk(3);
  ask.add_allocation_tags("zk");
  ask.set_placement_constraint("AND(NOTIN,NODE,zk:NOTIN,NODE,app-id/application_1_0002/db)");
  ask.set_node_label_expression("gpu");
  auto lookup = [](const std::string& name) -> std::optional<scheduler::AppId> {
    if (name == "application_1_0002") return 7;
    return std::nullopt;
  };
  auto r = ToSchedulerAsk(ask, Resource::Of(1024, 1), 0, lookup);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->allocation_tags, std::vector<std::string>{"zk"});
  EXPECT_EQ(r->node_label, "gpu");
  ASSERT_TRUE(r->has_constraint);
  EXPECT_EQ(r->constraint.children[1].ns_app, 7u);
  ask.set_placement_constraint("NOTIN,NODE,app-id/application_1_0009/db");
  EXPECT_THAT(ToSchedulerAsk(ask, Resource::Of(1024, 1), 2, lookup).status().message(),
              HasSubstr("ask #2: placement constraint 'NOTIN,NODE,app-id/application_1_0009/db' "
                        "names application application_1_0009, which is not running"));
  ask.set_placement_constraint("NEAR,NODE,zk");
  EXPECT_THAT(ToSchedulerAsk(ask, Resource::Of(1024, 1), 0, lookup).status().message(),
              HasSubstr("is not IN, NOTIN"));
  ask.set_placement_constraint("");
  ask.set_placement_soft(true);
  EXPECT_FALSE(ToSchedulerAsk(ask, Resource::Of(1024, 1), 0, lookup).ok());
}

TEST(PlacementRmTest, AntiAffinityTagsAndGangsReachTheAm) {
  RmHarness h;
  for (const char* n : {"h1:1", "h2:1", "h3:1"}) h.AddNode(n);
  v1::Token t = StartApp(h);
  int32_t rid = 0;
  v1::AllocateRequest req;
  v1::ResourceRequest spread = AnyAsk(4);
  spread.set_allocation_request_id(1);
  spread.add_allocation_tags("w");
  spread.set_placement_constraint("NOTIN,NODE,w");
  *req.add_asks() = spread;
  Call(h, t, req, &rid);
  h.loop.Advance(200);
  v1::AllocateResponse r = Call(h, t, {}, &rid);
  ASSERT_EQ(r.allocated_containers_size(), 3);
  std::set<std::string> nodes;
  for (const v1::Container& c : r.allocated_containers()) {
    nodes.insert(c.node_id());
    EXPECT_THAT(c.allocation_tags(), ::testing::ElementsAre("w"));
  }
  EXPECT_EQ(nodes.size(), 3u);
  // A bad constraint is refused, naming the ask; nothing changes.
  v1::AllocateRequest bad;
  v1::ResourceRequest wrong = AnyAsk(1);
  wrong.set_placement_constraint("IN,SWITCH,w");
  *bad.add_asks() = wrong;
  bad.set_response_id(rid);
  auto refused = h.rm().Allocate(t, bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("scope 'SWITCH'"));
  // A gang that cannot fit (3 nodes of 8 vcores, most taken) and times out: the AM hears.
  v1::AllocateRequest gang;
  v1::ResourceRequest g = AnyAsk(30);
  g.set_allocation_request_id(2);
  g.set_gang(true);
  g.set_gang_timeout_ms(500);
  *gang.add_asks() = g;
  Call(h, t, gang, &rid);
  h.loop.Advance(1500);
  r = Call(h, t, {}, &rid);
  EXPECT_EQ(r.allocated_containers_size(), 0);
  ASSERT_EQ(r.rejected_scheduling_requests_size(), 1);
  EXPECT_THAT(r.rejected_scheduling_requests(0).reason(), HasSubstr("gang of 30"));
  EXPECT_EQ(r.rejected_scheduling_requests(0).request().allocation_request_id(), 2);
}

TEST(PlacementRmTest, UpdatesCarryVersionedTokensAndDecreasesReachTheNmUntilApplied) {
  RmHarness h;
  h.AddNode("h1:1", 8192, 8);
  v1::Token t = StartApp(h);
  int32_t rid = 0;
  v1::AllocateRequest req;
  *req.add_asks() = AnyAsk(1);
  Call(h, t, req, &rid);
  h.loop.Advance(200);
  v1::AllocateResponse r = Call(h, t, {}, &rid);
  ASSERT_EQ(r.allocated_containers_size(), 1);
  const v1::Container c = r.allocated_containers(0);
  EXPECT_EQ(c.version(), 0);
  // Grow it: granted in the next pass, with a token for version 1.
  v1::AllocateRequest grow;
  v1::UpdateContainerRequest* u = grow.add_update_requests();
  u->set_container_id(c.container_id());
  u->set_container_version(0);
  (*u->mutable_capability()->mutable_values())["memory-mb"] = 2048;
  (*u->mutable_capability()->mutable_values())["vcores"] = 2;
  Call(h, t, grow, &rid);
  h.loop.Advance(200);
  r = Call(h, t, {}, &rid);
  ASSERT_EQ(r.updated_containers_size(), 1);
  EXPECT_EQ(r.updated_containers(0).update_type(), v1::INCREASE_RESOURCE);
  const v1::Container grown = r.updated_containers(0).container();
  EXPECT_EQ(grown.version(), 1);
  auto td = security::DecodeContainerToken(grown.container_token().identifier());
  ASSERT_TRUE(td.ok());
  EXPECT_EQ(td->version, 1);
  EXPECT_THAT(td->resource, HasSubstr("memory-mb=2048"));
  // A stale version is refused.
  v1::AllocateRequest stale = grow;
  stale.set_response_id(rid);
  auto refused = h.rm().Allocate(t, stale);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("is at version 1, not 0"));
  // Shrink it: applied at once, its token sent to the NM in every heartbeat until the NM
  // reports version 2 applied.
  v1::AllocateRequest shrink;
  u = shrink.add_update_requests();
  u->set_container_id(c.container_id());
  u->set_container_version(1);
  (*u->mutable_capability()->mutable_values())["memory-mb"] = 512;
  (*u->mutable_capability()->mutable_values())["vcores"] = 1;
  Call(h, t, shrink, &rid);
  h.loop.Advance(200);
  r = Call(h, t, {}, &rid);
  ASSERT_EQ(r.updated_containers_size(), 1);
  EXPECT_EQ(r.updated_containers(0).update_type(), v1::DECREASE_RESOURCE);
  EXPECT_EQ(r.updated_containers(0).container().version(), 2);
  auto heartbeat = [&](int32_t applied) {
    v1::NodeHeartbeatRequest hb;
    hb.set_node_id("h1:1");
    v1::ContainerStatus* st = hb.add_container_statuses();
    st->set_container_id(c.container_id());
    st->set_state(v1::CONTAINER_RUNNING);
    if (applied > 0) (*hb.mutable_container_versions())[c.container_id()] = applied;
    auto resp = h.rm().NodeHeartbeat(hb);
    EXPECT_TRUE(resp.ok());
    return *resp;
  };
  EXPECT_EQ(heartbeat(1).containers_to_update_size(), 1);
  EXPECT_EQ(heartbeat(1).containers_to_update_size(), 1);  // a lost reply: sent again
  EXPECT_EQ(heartbeat(2).containers_to_update_size(), 0);
  EXPECT_EQ(heartbeat(2).containers_to_update_size(), 0);
}

TEST(PlacementRmTest, AdminNodeAttributesAreAllOrNothingAndShowInNodeReports) {
  RmHarness h;
  h.AddNode("h1:1");
  h.AddNode("h2:1");
  v1::NodeAttributesRequest req;
  req.set_operation(v1::NodeAttributesRequest::REPLACE);
  v1::NodeAttributesMapping* m = req.add_mappings();
  m->set_node("h1:1");
  (*m->mutable_attributes())["os"] = "linux";
  m = req.add_mappings();
  m->set_node("h9:1");
  (*m->mutable_attributes())["os"] = "linux";
  EXPECT_EQ(h.rm().SetNodeAttributes(req).code(), absl::StatusCode::kNotFound);
  req.mutable_mappings()->RemoveLast();
  m = req.add_mappings();
  m->set_node("h2");
  (*m->mutable_attributes())["os"] = "bad value";
  EXPECT_EQ(h.rm().SetNodeAttributes(req).code(), absl::StatusCode::kInvalidArgument);
  auto nodes = h.rm().ListNodes({});
  for (const v1::NodeReport& n : nodes.nodes()) EXPECT_TRUE(n.attributes().empty());
  (*m->mutable_attributes())["os"] = "windows";
  ASSERT_TRUE(h.rm().SetNodeAttributes(req).ok());
  nodes = h.rm().ListNodes({});
  for (const v1::NodeReport& n : nodes.nodes())
    EXPECT_EQ(n.attributes().at("os"), n.node_id() == "h1:1" ? "linux" : "windows");
  ASSERT_TRUE(h.rm()
                  .SetNodeAttributes(
                      NodeAttributesOf(v1::NodeAttributesRequest::REMOVE, "h1:1", "os", ""))
                  .ok());
  const v1::ListNodesResponse after = h.rm().ListNodes({});
  for (const v1::NodeReport& n : after.nodes())
    EXPECT_EQ(n.attributes().contains("os"), n.node_id() == "h2:1");
}

// Issue 30, NM -> RM: the node label and attributes an NM reports at registration.
TEST(PlacementRmTest, NodeLabelsAndAttributesFromTheNmShowInNodeReportsAndUnknownLabelsAreRefused) {
  RmOptions options = RmHarness::DefaultOptions();
  options.scheduler.node_labels["gpu"] = scheduler::NodeLabelConfig{/*exclusive=*/true};
  RmHarness h(options);
  auto report = [&h](const std::string& id) -> std::optional<v1::NodeReport> {
    const v1::ListNodesResponse nodes = h.rm().ListNodes({});
    for (const v1::NodeReport& n : nodes.nodes())
      if (n.node_id() == id) return n;
    return std::nullopt;
  };
  v1::RegisterNodeManagerRequest gpu = NodeRequest("h1:1");
  gpu.set_node_label("gpu");
  (*gpu.mutable_node_attributes())["zone"] = "z1";
  (*gpu.mutable_node_attributes())["example.com/os"] = "linux";
  ASSERT_TRUE(h.rm().RegisterNode(gpu).ok());
  std::optional<v1::NodeReport> n = report("h1:1");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->node_label(), "gpu");
  EXPECT_EQ(n->attributes().size(), 2u);
  EXPECT_EQ(n->attributes().at("zone"), "z1");
  EXPECT_EQ(n->attributes().at("example.com/os"), "linux");

  // A label the scheduler does not know: refused, naming it; the RM holds no such node.
  v1::RegisterNodeManagerRequest unknown = NodeRequest("h2:1");
  unknown.set_node_label("fpga");
  auto refused = h.rm().RegisterNode(unknown);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("node label 'fpga'"));
  EXPECT_FALSE(report("h2:1").has_value());
  EXPECT_LT(h.rm().scheduler().FindNode("h2:1"), 0);
  // A bad attribute value: refused, naming it.
  v1::RegisterNodeManagerRequest bad = NodeRequest("h2:1");
  (*bad.mutable_node_attributes())["zone"] = "z 1";
  refused = h.rm().RegisterNode(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("zone=z 1"));
  EXPECT_FALSE(report("h2:1").has_value());

  // Registering again with other attributes updates the scheduler's (same label: in place).
  (*gpu.mutable_node_attributes())["zone"] = "z2";
  gpu.mutable_node_attributes()->erase("example.com/os");
  ASSERT_TRUE(h.rm().RegisterNode(gpu).ok());
  n = report("h1:1");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->node_label(), "gpu");
  EXPECT_EQ(n->attributes().size(), 1u);
  EXPECT_EQ(n->attributes().at("zone"), "z2");
  const scheduler::NodeState* in_scheduler =
      h.rm().scheduler().node(h.rm().scheduler().FindNode("h1:1"));
  ASSERT_NE(in_scheduler, nullptr);
  EXPECT_EQ(in_scheduler->attributes, (scheduler::NodeAttributes{{"zone", "z2"}}));
  // An unknown label for a live node changes nothing.
  gpu.set_node_label("fpga");
  EXPECT_EQ(h.rm().RegisterNode(gpu).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(report("h1:1")->node_label(), "gpu");
  // A relabel of a live node: taken as a new node in the default partition.
  gpu.set_node_label("");
  ASSERT_TRUE(h.rm().RegisterNode(gpu).ok());
  n = report("h1:1");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->node_label(), "");
  EXPECT_EQ(n->attributes().at("zone"), "z2");
  EXPECT_EQ(h.rm().scheduler().num_nodes(), 1);
}

// Issue 30: after an RM restart, a container's allocation tags come back from its NM's
// registration (container_tags), so that anti-affinity on them still holds.
TEST(PlacementRmTest, AnRmRestartRecoversContainerTagsForNotInNodeConstraints) {
  RmHarness h;
  h.AddNode("h1:1");
  h.AddNode("h2:1");
  v1::Token t = StartApp(h);
  ASSERT_EQ(h.launcher.launches.size(), 1u);
  const std::string am_node = h.launcher.launches[0].first;
  const std::string am_container =
      security::DecodeContainerToken(h.launcher.launches[0].second.container_token().identifier())
          ->container_id;
  int32_t rid = 0;
  v1::AllocateRequest req;
  v1::ResourceRequest rs = AnyAsk(1);
  rs.set_allocation_request_id(1);
  rs.add_allocation_tags("rs");
  rs.set_placement_constraint("NOTIN,NODE,rs");
  *req.add_asks() = rs;
  Call(h, t, req, &rid);
  h.loop.Advance(200);
  v1::AllocateResponse r = Call(h, t, {}, &rid);
  ASSERT_EQ(r.allocated_containers_size(), 1);
  const v1::Container tagged = r.allocated_containers(0);
  EXPECT_THAT(tagged.allocation_tags(), ::testing::ElementsAre("rs"));
  // Its container token carries the tags, for the NM to record.
  auto token = security::DecodeContainerToken(tagged.container_token().identifier());
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->allocation_tags, std::vector<std::string>{"rs"});

  h.Restart();
  // Each NM registers again with what it runs, the tagged container with its tags.
  for (const std::string node : {"h1:1", "h2:1"}) {
    v1::RegisterNodeManagerRequest back = NodeRequest(node);
    auto add = [&back](const std::string& name) {
      v1::ContainerStatus* st = back.add_running_containers();
      st->set_container_id(name);
      st->set_state(v1::CONTAINER_RUNNING);
      v1::Resource one;
      (*one.mutable_values())["memory-mb"] = 1024;
      (*one.mutable_values())["vcores"] = 1;
      (*back.mutable_container_resources())[name] = one;
    };
    if (node == am_node) add(am_container);
    if (node == tagged.node_id()) {
      add(tagged.container_id());
      (*back.mutable_container_tags())[tagged.container_id()].add_tags("rs");
    }
    auto registered = h.rm().RegisterNode(back);
    ASSERT_TRUE(registered.ok()) << registered.status();
  }
  EXPECT_EQ(h.rm().recovery_counts().recovered, 2);
  // The AM resyncs and gets the container back, with its tags.
  v1::AllocateRequest stale;
  stale.set_response_id(rid);
  auto resync = h.rm().Allocate(t, stale);
  ASSERT_TRUE(resync.ok()) << resync.status();
  EXPECT_EQ(resync->am_command(), v1::AM_RESYNC);
  auto again = h.rm().RegisterApplicationMaster(t, {});
  ASSERT_TRUE(again.ok()) << again.status();
  bool found = false;
  for (const v1::Container& c : again->containers_from_previous_attempts()) {
    if (c.container_id() != tagged.container_id()) continue;
    found = true;
    EXPECT_THAT(c.allocation_tags(), ::testing::ElementsAre("rs"));
    EXPECT_EQ(security::DecodeContainerToken(c.container_token().identifier())->allocation_tags,
              std::vector<std::string>{"rs"});
  }
  EXPECT_TRUE(found);
  // Two more "rs" containers that must not share a node with any "rs" container: only the
  // other node can take one (were the recovered tags lost, both nodes would).
  rid = 0;
  v1::AllocateRequest more;
  rs.set_allocation_request_id(2);
  rs.set_num_containers(2);
  *more.add_asks() = rs;
  Call(h, t, more, &rid);
  h.loop.Advance(200);
  r = Call(h, t, {}, &rid);
  h.loop.Advance(1000);
  v1::AllocateResponse later = Call(h, t, {}, &rid);
  std::vector<std::string> nodes;
  for (const v1::Container& c : r.allocated_containers()) nodes.push_back(c.node_id());
  for (const v1::Container& c : later.allocated_containers()) nodes.push_back(c.node_id());
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_NE(nodes[0], tagged.node_id());
}

}  // namespace
}  // namespace weft::rm
