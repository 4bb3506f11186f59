// Network bandwidth as a scheduled resource (seed 000, issue 4): DRF takes `network-mbps` into
// dominant shares, and no policy over-allocates it.
#include "gtest/gtest.h"
#include "scheduler/test_util.h"

namespace weft::scheduler {
namespace {

using namespace ::weft::scheduler::testing;  // NOLINT

// One node of 100 GB, 100 vcores and 1000 Mbit/s. App 1 asks network-heavy containers (10% of
// the node's network, 1% of its memory); app 2 memory-heavy ones (10% of its memory, no
// network).
const Resource kNode = Resource::Of(100 * 1024, 100, 1000);
const Resource kNetworkHeavy = Resource::Of(1024, 1, 100);
const Resource kMemoryHeavy = Resource::Of(10 * 1024, 1, 0);

std::unique_ptr<Scheduler> RunTwoApps(const std::string& policy) {
  auto s = MakeScheduler("", policy);
  EXPECT_TRUE(s->AddNode({"n1", "/r1", kNode}).ok());
  EXPECT_TRUE(s->AddApp(App(1), 0).ok());
  EXPECT_TRUE(s->AddApp(App(2), 0).ok());
  EXPECT_TRUE(s->UpdateRequests(1, Asks({Ask(50, kNetworkHeavy)})).ok());
  EXPECT_TRUE(s->UpdateRequests(2, Asks({Ask(50, kMemoryHeavy)})).ok());
  s->Schedule(0);
  return s;
}

// The type in which `usage` is the largest share of the cluster.
int DominantType(const Scheduler& s, const Resource& usage) {
  int best = 0;
  double best_share = -1;
  for (int t = 0; t < kMaxResourceTypes; ++t) {
    if (s.cluster_total()[t] <= 0) continue;
    double share = static_cast<double>(usage[t]) / static_cast<double>(s.cluster_total()[t]);
    if (share > best_share) {
      best = t;
      best_share = share;
    }
  }
  return best;
}

TEST(NetworkDrfTest, NetworkIsADominantResourceAndSharesEqualise) {
  auto s = RunTwoApps("fair");
  const AppState* net = s->app(1);
  const AppState* mem = s->app(2);
  EXPECT_EQ(DominantType(*s, net->usage), kNetworkMbps);
  EXPECT_EQ(DominantType(*s, mem->usage), kMemoryMb);
  const double net_share = s->view().Share(net->usage);
  const double mem_share = s->view().Share(mem->usage);
  // Both made progress, the node's network is the binding limit of app 1 (10 x 100 Mbit/s
  // at most), and their dominant shares are equal within one container (10%).
  EXPECT_GE(net->num_containers, 9);
  EXPECT_GE(mem->num_containers, 9);
  EXPECT_LE(net->usage[kNetworkMbps], 1000);
  EXPECT_NEAR(net_share, mem_share, 0.1 + 1e-9);
  // A network-blind DRF would count app 1 at 1% per container and let it take ~50 of them.
  EXPECT_LE(net->num_containers, 10);
}

TEST(NetworkDrfTest, NoPolicyOverAllocatesNetwork) {
  for (const char* policy : {"fifo", "capacity", "fair", "ras"}) {
    SCOPED_TRACE(policy);
    auto s = RunTwoApps(policy);
    const NodeState* n = s->node(0);
    EXPECT_LE(n->allocated[kNetworkMbps], kNode[kNetworkMbps]);
    EXPECT_TRUE(n->allocated.FitsIn(n->capacity)) << n->allocated.DebugString();
    EXPECT_LE(s->app(1)->num_containers, 10);
    // Work-conserving within the network limit: app 1 holds all it can once it is served.
    if (std::string(policy) == "fifo") {
      EXPECT_EQ(s->app(1)->num_containers, 10);
    }
  }
}

}  // namespace
}  // namespace weft::scheduler
