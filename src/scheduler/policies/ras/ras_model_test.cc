#include "scheduler/policies/ras/ras_model.h"

#include <cmath>

#include "gtest/gtest.h"

namespace weft::scheduler::ras {
namespace {

// Seed 003's Fig. 2: s_req = 20, s_pend = 35, r_pend = 10.
TEST(RasUtilityTest, Fig2Shape) {
  auto u = [](int64_t s, int64_t r) { return JobUtility(s, 20, 35, r, 10); };
  // All reduces running: U = u_M. Zero at s_req, one at s_pend, log below, linear above.
  EXPECT_DOUBLE_EQ(u(20, 10), 0.0);
  EXPECT_DOUBLE_EQ(u(35, 10), 1.0);
  EXPECT_NEAR(u(10, 10), std::log(10.0) / std::log(20.0) - 1, 1e-12);
  EXPECT_NEAR(u(1, 10), -1.0, 1e-12);
  EXPECT_NEAR(u(27, 10), 7.0 / 15.0, 1e-12);
  EXPECT_EQ(u(0, 10), kMinusInfinity);  // no map slot at all: no progress
  // Reduce part: -1 with none running, log-shaped, 0 once all run.
  EXPECT_DOUBLE_EQ(u(35, 0), 0.0);
  EXPECT_NEAR(u(35, 5), std::log(5.0) / std::log(10.0), 1e-12);
  EXPECT_NEAR(u(20, 1), -1.0, 1e-12);
  EXPECT_NEAR(u(20, 5), std::log(5.0) / std::log(10.0) - 1, 1e-12);
  // Monotone in both arguments over the whole grid, and never above 1.
  for (int64_t s = 1; s <= 35; ++s) {
    for (int64_t r = 0; r <= 10; ++r) {
      EXPECT_LE(u(s, r), 1.0);
      if (s > 1) {
        EXPECT_GT(u(s, r), u(s - 1, r)) << s << "," << r;
      }
      // u_R(0) = u_R(1) = -1 (the formula's range is [-1, 0]); strictly rising after.
      if (r > 1) {
        EXPECT_GT(u(s, r), u(s, r - 1)) << s << "," << r;
      } else if (r == 1) {
        EXPECT_EQ(u(s, r), u(s, r - 1)) << s;
      }
    }
  }
  // The map part rises from below -1 to 0 on [1, s_req) and linearly to 1 on [s_req, s_pend].
  EXPECT_LT(MapUtility(19, 20, 35), 0.0);
  EXPECT_GT(MapUtility(19, 20, 35), -0.1);
  EXPECT_NEAR(MapUtility(21, 20, 35) - MapUtility(20, 20, 35), 1.0 / 15, 1e-12);
  EXPECT_NEAR(MapUtility(35, 20, 35) - MapUtility(34, 20, 35), 1.0 / 15, 1e-12);
}

TEST(RasUtilityTest, EdgeCases) {
  // Capped at 1: more slots than tasks left changes nothing.
  EXPECT_DOUBLE_EQ(JobUtility(50, 20, 35, 10, 10), 1.0);
  // No map work left: U = 1 + u_R.
  EXPECT_DOUBLE_EQ(JobUtility(0, 0, 0, 0, 4), 0.0);
  EXPECT_DOUBLE_EQ(JobUtility(0, 0, 0, 4, 4), 1.0);
  // s_req >= s_pend: the log part spans the whole range, then 1 with every task placed.
  EXPECT_NEAR(MapUtility(5, 40, 10), std::log(5.0) / std::log(10.0) - 1, 1e-12);
  EXPECT_DOUBLE_EQ(MapUtility(10, 40, 10), 1.0);
  // s_req <= 1: no log part; one task gives 0.
  EXPECT_DOUBLE_EQ(MapUtility(1, 1, 11), 0.0);
  EXPECT_DOUBLE_EQ(MapUtility(6, 0, 11), 0.5);
  EXPECT_EQ(MapUtility(0, 1, 11), kMinusInfinity);
  // A one-task job.
  EXPECT_DOUBLE_EQ(MapUtility(1, 1, 1), 1.0);
  EXPECT_DOUBLE_EQ(ReduceUtility(0, 1), -1.0);
  EXPECT_DOUBLE_EQ(ReduceUtility(1, 1), 0.0);
  EXPECT_DOUBLE_EQ(ReduceUtility(0, 0), 0.0);
}

TEST(RasEstimatorTest, RequiredSlots) {
  // 100 tasks of 10 s, goal 100 s away: 10 waves -> 10 concurrent tasks.
  EXPECT_EQ(RequiredMapSlots(100, 10000, 150000, 50000), 10);
  // 95 s away: 9 whole waves -> ceil(100 / 9) = 12.
  EXPECT_EQ(RequiredMapSlots(100, 10000, 145000, 50000), 12);
  // A relaxed goal: one at a time suffices.
  EXPECT_EQ(RequiredMapSlots(100, 10000, 1000LL * 1000 * 1000, 0), 1);
  // Cold start, no goal, too late: everything at once.
  EXPECT_EQ(RequiredMapSlots(100, -1, 150000, 50000), 100);
  EXPECT_EQ(RequiredMapSlots(100, 10000, -1, 0), 100);
  EXPECT_EQ(RequiredMapSlots(100, 10000, 55000, 50000), 100);
  EXPECT_EQ(RequiredMapSlots(100, 10000, 40000, 50000), 100);
  EXPECT_EQ(RequiredMapSlots(0, 10000, 40000, 50000), 0);
}

TEST(RasLoadTest, ProfileOrRequest) {
  Resource cap = Resource::Of(2048, 2);
  Load l = TaskLoad(true, {0.25, 0.1, 0.2}, Resource::Of(128, 1), cap);
  EXPECT_DOUBLE_EQ(l[kCpu], 0.25);
  EXPECT_DOUBLE_EQ(l[kDisk], 0.1);
  EXPECT_DOUBLE_EQ(l[kNet], 0.1);
  EXPECT_DOUBLE_EQ(l[kMem], 0.2);
  l = TaskLoad(false, {}, Resource::Of(512, 1), cap);
  EXPECT_DOUBLE_EQ(l[kCpu], 0.5);
  EXPECT_DOUBLE_EQ(l[kMem], 0.25);
  // A network request on a node without network capacity never fits.
  l = TaskLoad(false, {}, Resource::Of(512, 1, 10), cap);
  EXPECT_FALSE(LoadFits(Load{}, l));
}

// A model of `nodes` identical nodes (loads as shares, requests never binding).
PlacementModel Cluster(int nodes) {
  PlacementModel m;
  m.nodes.resize(static_cast<size_t>(nodes));
  for (NodeModel& n : m.nodes) {
    n.capacity = Resource::Of(100 * 1024, 100);
    n.free = n.capacity;
  }
  return m;
}

int32_t AddJob(PlacementModel* m, int64_t s_req, int64_t s_pend, int64_t r_pend = 0) {
  JobModel j;
  j.s_req = s_req;
  j.s_pend = s_pend;
  j.r_pend = r_pend;
  m->jobs.push_back(j);
  return static_cast<int32_t>(m->jobs.size() - 1);
}

size_t AddPhase(PlacementModel* m, int32_t job, PhaseKind kind, TaskUsage usage, int64_t pending,
                std::vector<int32_t> running = {}) {
  PhaseModel p;
  p.job = job;
  p.priority = kind == PhaseKind::kMapLike ? 20 : 10;
  p.kind = kind;
  p.has_usage = true;
  p.usage = usage;
  p.request = Resource::Of(128, 1);
  p.pending = pending;
  p.running = running;
  p.running.resize(m->nodes.size(), 0);
  p.allowed.assign(m->nodes.size(), 1);
  m->phases.push_back(p);
  return m->phases.size() - 1;
}

int64_t Total(const std::vector<int32_t>& v) {
  int64_t t = 0;
  for (int32_t x : v) t += x;
  return t;
}

// Every node's planned usage stays within capacity, in every dimension.
// `used` counts the running tasks, which the slots include too.
void ExpectNoOverload(const PlacementModel& m, const Placement& p) {
  for (size_t n = 0; n < m.nodes.size(); ++n) {
    Load used = m.nodes[n].used;
    for (size_t ph = 0; ph < m.phases.size(); ++ph) {
      Load l = TaskLoad(true, m.phases[ph].usage, m.phases[ph].request, m.nodes[n].capacity);
      for (int d = 0; d < kNumDims; ++d)
        used[d] += l[d] * (p.slots[ph][n] - m.phases[ph].running[n]);
    }
    for (int d = 0; d < kNumDims; ++d) EXPECT_LE(used[d], 1.0 + 1e-9) << "node " << n;
  }
}

TEST(RasPlacementTest, ComplementaryTasksShareNodes) {
  // A CPU-heavy and an I/O-heavy job on 2 nodes: each node takes 2 + 2, none is overloaded,
  // where a profile-blind 4-slot scheduler could put 4 I/O-heavy tasks on one node.
  PlacementModel m = Cluster(2);
  size_t cpu = AddPhase(&m, AddJob(&m, 1, 10), PhaseKind::kMapLike, {0.45, 0.05, 0.1}, 10);
  size_t io = AddPhase(&m, AddJob(&m, 1, 10), PhaseKind::kMapLike, {0.05, 0.45, 0.1}, 10);
  Placement p = ComputePlacement(m, 100);
  ExpectNoOverload(m, p);
  for (size_t n = 0; n < 2; ++n) {
    EXPECT_EQ(p.slots[cpu][n], 2);
    EXPECT_EQ(p.slots[io][n], 2);
  }
}

TEST(RasPlacementTest, ReducesSpreadFirst) {
  PlacementModel m = Cluster(4);
  int32_t a = AddJob(&m, 1, 8, 2), b = AddJob(&m, 1, 8, 2);
  AddPhase(&m, a, PhaseKind::kMapLike, {0.3, 0.1, 0.1}, 8);
  size_t ra = AddPhase(&m, a, PhaseKind::kReduceLike, {0.1, 0.1, 0.25}, 2);
  AddPhase(&m, b, PhaseKind::kMapLike, {0.3, 0.1, 0.1}, 8);
  size_t rb = AddPhase(&m, b, PhaseKind::kReduceLike, {0.1, 0.1, 0.25}, 2);
  Placement p = ComputePlacement(m, 100);
  ExpectNoOverload(m, p);
  for (size_t n = 0; n < 4; ++n) EXPECT_EQ(p.slots[ra][n] + p.slots[rb][n], 1) << n;
}

TEST(RasPlacementTest, MaxMinRoundsMoveSlotsToTheLowestJob) {
  // One node of capacity for 4 tasks, all held by job A's running tasks. Job B (tight goal,
  // nothing running) cannot be placed: rounds move A's slots to B while A stays above B.
  PlacementModel m = Cluster(1);
  int32_t a = AddJob(&m, 1, 20);  // relaxed: U_A = (4 - 1) / (20 - 1)
  int32_t b = AddJob(&m, 3, 10);  // needs 3 concurrently
  size_t pa = AddPhase(&m, a, PhaseKind::kMapLike, {0.25, 0.1, 0.1}, 16, {4});
  size_t pb = AddPhase(&m, b, PhaseKind::kMapLike, {0.25, 0.1, 0.1}, 10);
  m.nodes[0].used = Load{1.0, 0.4, 0.4, 0.4};  // A's four running tasks
  Placement p = ComputePlacement(m, 100);
  ExpectNoOverload(m, p);
  // Round by round: B (-inf) takes from A while A stays above B: A 3 / B 1 (U_B = -1),
  // A 2 / B 2 (U_A = 1/19, U_B = -0.37), A 1 / B 3 (both 0). A fourth move would leave A at
  // -inf, below B, so the rounds stop with both jobs balanced at their goal.
  EXPECT_EQ(p.slots[pb][0], 3);
  EXPECT_EQ(p.slots[pa][0], 1);
  EXPECT_EQ(p.rounds, 3);
  EXPECT_DOUBLE_EQ(p.utility[a], 0.0);
  EXPECT_DOUBLE_EQ(p.utility[b], 0.0);
  // With no rounds allowed, B stays empty.
  Placement none = ComputePlacement(m, 0);
  EXPECT_EQ(none.slots[pb][0], 0);
  EXPECT_EQ(none.rounds, 0);
}

TEST(RasPlacementTest, MaxMinRaisesTheLowestUtility) {
  // Three jobs, 3 nodes x 4 tasks: the lowest utility after placement is at least what any
  // job would get with an equal split, and every job gets a slot.
  PlacementModel m = Cluster(3);
  int32_t j0 = AddJob(&m, 12, 12), j1 = AddJob(&m, 2, 30), j2 = AddJob(&m, 1, 5);
  size_t p0 = AddPhase(&m, j0, PhaseKind::kMapLike, {0.25, 0.25, 0.1}, 12);
  size_t p1 = AddPhase(&m, j1, PhaseKind::kMapLike, {0.25, 0.25, 0.1}, 30);
  size_t p2 = AddPhase(&m, j2, PhaseKind::kMapLike, {0.25, 0.25, 0.1}, 5);
  Placement p = ComputePlacement(m, 100);
  ExpectNoOverload(m, p);
  EXPECT_EQ(Total(p.slots[p0]) + Total(p.slots[p1]) + Total(p.slots[p2]), 12);  // full
  double lowest = std::min({p.utility[j0], p.utility[j1], p.utility[j2]});
  EXPECT_GE(lowest, std::min({MapUtility(4, 12, 12), MapUtility(4, 2, 30), MapUtility(4, 1, 5)}));
  // Greedy always serves the lowest: the tight job (s_req = 12) holds the most slots.
  EXPECT_GT(Total(p.slots[p0]), Total(p.slots[p2]));
}

TEST(RasPlacementTest, RespectsRequestsAndBlacklists) {
  PlacementModel m = Cluster(2);
  m.nodes[0].free = Resource::Of(256, 100);  // room for two 128 MB containers only
  size_t ph = AddPhase(&m, AddJob(&m, 1, 10), PhaseKind::kMapLike, {0.01, 0.01, 0.01}, 10);
  m.phases[ph].allowed[1] = 0;
  Placement p = ComputePlacement(m, 100);
  EXPECT_EQ(p.slots[ph][0], 2);
  EXPECT_EQ(p.slots[ph][1], 0);
}

}  // namespace
}  // namespace weft::scheduler::ras
