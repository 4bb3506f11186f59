// Copyright Weft authors.
#include "federation/router/merge.h"

#include "gtest/gtest.h"

namespace weft::federation {
namespace {

v1::Resource Res(int64_t mb, int64_t vcores) {
  v1::Resource r;
  (*r.mutable_values())["memory-mb"] = mb;
  (*r.mutable_values())["vcores"] = vcores;
  return r;
}

TEST(MergeTest, ClusterMetricsAreSummed) {
  v1::GetClusterMetricsResponse a, b;
  a.set_active_nodes(2);
  a.set_apps_running(1);
  *a.mutable_total() = Res(8192, 8);
  b.set_active_nodes(3);
  b.set_apps_running(4);
  b.set_containers_allocated(7);
  *b.mutable_total() = Res(4096, 4);
  (*b.mutable_total()->mutable_values())["gpu"] = 2;
  v1::GetClusterMetricsResponse sum = SumClusterMetrics({a, b});
  EXPECT_EQ(sum.active_nodes(), 5);
  EXPECT_EQ(sum.apps_running(), 5);
  EXPECT_EQ(sum.containers_allocated(), 7);
  EXPECT_EQ(sum.total().values().at("memory-mb"), 12288);
  EXPECT_EQ(sum.total().values().at("vcores"), 12);
  EXPECT_EQ(sum.total().values().at("gpu"), 2);
}

TEST(MergeTest, AppsAreStampedOrderedLimitedAndTheHomeReportWins) {
  v1::ListApplicationsResponse sc1, sc2;
  sc1.add_applications()->set_application_id("application_2_0001");
  sc1.add_applications()->set_application_id("application_1_0001");
  // application_2_0001 again in sc2 (an unmanaged AM of its secondary), already stamped.
  v1::ApplicationReport* dup = sc2.add_applications();
  dup->set_application_id("application_2_0001");
  dup->set_sub_cluster_id("sc2");
  dup->set_name("secondary");
  v1::ListApplicationsResponse all =
      MergeApplications({{"sc1", sc1}, {"sc2", sc2}}, 0, {{"application_2_0001", "sc2"}});
  ASSERT_EQ(all.applications_size(), 2);
  EXPECT_EQ(all.applications(0).application_id(), "application_1_0001");
  EXPECT_EQ(all.applications(0).sub_cluster_id(), "sc1");
  EXPECT_EQ(all.applications(1).sub_cluster_id(), "sc2");
  EXPECT_EQ(all.applications(1).name(), "secondary");
  EXPECT_EQ(MergeApplications({{"sc1", sc1}, {"sc2", sc2}}, 1).applications_size(), 1);
  // Without the mapping: the secondary's unmanaged AM gives way to the home's report.
  v1::ListApplicationsResponse secondary, home;
  v1::ApplicationReport* uam = secondary.add_applications();
  uam->set_application_id("application_3_0001");
  uam->set_unmanaged_am(true);
  home.add_applications()->set_application_id("application_3_0001");
  all = MergeApplications({{"sc1", secondary}, {"sc2", home}}, 0);
  ASSERT_EQ(all.applications_size(), 1);
  EXPECT_EQ(all.applications(0).sub_cluster_id(), "sc2");
}

TEST(MergeTest, AnAppIsListedOnceWithItsUamsUsageAdded) {
  // The home (sc2) and two secondaries running its unmanaged AMs under the same id.
  v1::ListApplicationsResponse sc1, sc2, sc3;
  v1::ApplicationReport* uam1 = sc1.add_applications();
  uam1->set_application_id("application_5_0001");
  uam1->set_unmanaged_am(true);
  uam1->set_name("uam");
  uam1->set_running_containers(2);
  *uam1->mutable_allocated() = Res(2048, 2);
  v1::ApplicationReport* home = sc2.add_applications();
  home->set_application_id("application_5_0001");
  home->set_name("job");
  home->set_state(v1::APP_RUNNING);
  home->set_running_containers(3);  // its AM's included
  home->set_pending_containers(1);
  *home->mutable_allocated() = Res(3072, 3);
  v1::ApplicationReport* uam3 = sc3.add_applications();
  uam3->set_application_id("application_5_0001");
  uam3->set_unmanaged_am(true);
  uam3->set_running_containers(1);
  uam3->set_pending_containers(4);
  *uam3->mutable_allocated() = Res(1024, 1);
  // Whatever order the sub-clusters answer in, with or without the homes.
  for (const auto& parts : std::vector<std::vector<std::pair<std::string, v1::ListApplicationsResponse>>>{
           {{"sc1", sc1}, {"sc2", sc2}, {"sc3", sc3}},
           {{"sc3", sc3}, {"sc1", sc1}, {"sc2", sc2}}}) {
    for (const auto& homes : std::vector<std::vector<std::pair<std::string, std::string>>>{
             {}, {{"application_5_0001", "sc2"}}}) {
      v1::ListApplicationsResponse all = MergeApplications(parts, 0, homes);
      ASSERT_EQ(all.applications_size(), 1);
      const v1::ApplicationReport& app = all.applications(0);
      EXPECT_EQ(app.sub_cluster_id(), "sc2");
      EXPECT_EQ(app.name(), "job");
      EXPECT_FALSE(app.unmanaged_am());
      EXPECT_EQ(app.state(), v1::APP_RUNNING);
      EXPECT_EQ(app.running_containers(), 6);
      EXPECT_EQ(app.pending_containers(), 5);
      EXPECT_EQ(app.allocated().values().at("memory-mb"), 6144);
      EXPECT_EQ(app.allocated().values().at("vcores"), 6);
    }
  }
  // The home not answering: the app is still listed once, from a UAM (marked unmanaged).
  v1::ListApplicationsResponse partial = MergeApplications({{"sc1", sc1}, {"sc3", sc3}}, 0);
  ASSERT_EQ(partial.applications_size(), 1);
  EXPECT_TRUE(partial.applications(0).unmanaged_am());
  EXPECT_EQ(partial.applications(0).running_containers(), 3);
}

TEST(MergeTest, NodesAreAUnionStampedWithTheirSubCluster) {
  v1::ListNodesResponse a, b;
  a.add_nodes()->set_node_id("h2:1");
  b.add_nodes()->set_node_id("h1:1");
  v1::ListNodesResponse all = MergeNodes({{"sc1", a}, {"sc2", b}});
  ASSERT_EQ(all.nodes_size(), 2);
  EXPECT_EQ(all.nodes(0).node_id(), "h1:1");
  EXPECT_EQ(all.nodes(0).sub_cluster_id(), "sc2");
  EXPECT_EQ(all.nodes(1).sub_cluster_id(), "sc1");
}

TEST(MergeTest, QueuesAreMergedByPath) {
  v1::QueueInfo a, b;
  a.set_path("root");
  *a.mutable_used() = Res(1024, 1);
  a.set_num_applications(1);
  v1::QueueInfo* a_default = a.add_children();
  a_default->set_path("root.default");
  a_default->set_num_applications(1);
  b.set_path("root");
  *b.mutable_used() = Res(2048, 2);
  b.set_num_applications(2);
  b.set_num_running_applications(2);
  v1::QueueInfo* b_default = b.add_children();
  b_default->set_path("root.default");
  b_default->set_num_applications(1);
  b.add_children()->set_path("root.only_b");
  MergeQueue(&a, b);
  EXPECT_EQ(a.used().values().at("memory-mb"), 3072);
  EXPECT_EQ(a.num_applications(), 3);
  EXPECT_EQ(a.num_running_applications(), 2);
  ASSERT_EQ(a.children_size(), 2);
  EXPECT_EQ(a.children(0).num_applications(), 2);
  EXPECT_EQ(a.children(1).path(), "root.only_b");
}

}  // namespace
}  // namespace weft::federation
