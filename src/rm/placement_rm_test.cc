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
  v1::NodeAttributesRequest remove;
  remove.set_operation(v1::NodeAttributesRequest::REMOVE);
  m = remove.add_mappings();
  m->set_node("h1:1");
  (*m->mutable_attributes())["os"] = "";
  ASSERT_TRUE(h.rm().SetNodeAttributes(remove).ok());
  const v1::ListNodesResponse after = h.rm().ListNodes({});
  for (const v1::NodeReport& n : after.nodes())
    EXPECT_EQ(n.attributes().contains("os"), n.node_id() == "h2:1");
}

}  // namespace
}  // namespace weft::rm
