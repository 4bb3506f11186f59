#include "rm/cluster_history.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_test_util.h"

namespace weft::rm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

HistorySample At(int64_t t, int64_t running = 0) {
  HistorySample s;
  s.time_ms = t;
  s.containers_running = running;
  return s;
}

std::vector<int64_t> Times(const ClusterHistory::Slice& slice) {
  std::vector<int64_t> out;
  for (const HistorySample& s : slice.samples) out.push_back(s.time_ms);
  return out;
}

TEST(HistoryOptionsTest, DefaultsAreValidAndBadValuesAreRefusedByFlagName) {
  EXPECT_TRUE(ValidateHistoryOptions({}).ok());
  EXPECT_EQ(ClusterHistory({}, {}).capacity(), 8640);  // a day of 10 s samples
  EXPECT_THAT(ValidateHistoryOptions({0, 60}).message(), HasSubstr("--history-sample-ms 0"));
  EXPECT_THAT(ValidateHistoryOptions({1000, -1}).message(), HasSubstr("--history-retention-s -1"));
  EXPECT_THAT(ValidateHistoryOptions({10'000, 5}).message(), HasSubstr("no sample would be kept"));
  // 86,400 s of 200 ms samples is 432,000 samples: over the bound.
  EXPECT_THAT(ValidateHistoryOptions({200, 86'400}).message(), HasSubstr("432000 samples"));
  EXPECT_TRUE(ValidateHistoryOptions({200, 600}).ok());
}

TEST(ClusterHistoryTest, RingKeepsTheNewestSamplesUpToItsCapacityOldestFirst) {
  ClusterHistory h({200, 1}, {"memory-mb", "vcores"});  // 1 s of 200 ms samples
  ASSERT_EQ(h.capacity(), 5);
  EXPECT_TRUE(h.Since(0).samples.empty());
  for (int64_t i = 1; i <= 12; ++i) h.Add(At(i * 200, i), {});
  EXPECT_EQ(h.size(), 5u);
  ClusterHistory::Slice all = h.Since(0);
  EXPECT_THAT(Times(all), ElementsAre(1600, 1800, 2000, 2200, 2400));
  EXPECT_EQ(all.samples.back().containers_running, 12);
  // `since` is exclusive: a client passing its newest time gets only what is newer.
  EXPECT_THAT(Times(h.Since(2000)), ElementsAre(2200, 2400));
  EXPECT_TRUE(h.Since(2400).samples.empty());
}

TEST(ClusterHistoryTest, SamplesOlderThanTheRetentionAreNotServed) {
  ClusterHistory h({200, 1}, {});
  h.Add(At(1000), {});
  h.Add(At(1200), {});
  h.Add(At(5000), {});  // the loop was busy: a gap longer than the retention
  EXPECT_THAT(Times(h.Since(0)), ElementsAre(5000));
}

TEST(ClusterHistoryTest, QueueNamesAreKeptOnceAndSamplesReferToThem) {
  ClusterHistory h({1000, 60}, {});
  HistorySample s = At(1000);
  s.num_queues = 2;
  s.queues[0].used_pct = 25;
  s.queues[1].used_pct = 75;
  h.Add(s, {"root.a", "root.b"});
  s.time_ms = 2000;
  s.num_queues = 1;
  s.queues[0].used_pct = 50;
  h.Add(s, {"root.b"});
  // More queues claimed than paths given: only the named ones are kept.
  s.time_ms = 3000;
  s.num_queues = 3;
  h.Add(s, {"root.c"});
  ClusterHistory::Slice all = h.Since(0);
  EXPECT_THAT(all.queue_names, ElementsAre("root.a", "root.b", "root.c"));
  ASSERT_EQ(all.samples.size(), 3u);
  EXPECT_EQ(all.samples[0].num_queues, 2);
  EXPECT_EQ(all.samples[0].queues[1].name, 1);
  EXPECT_EQ(all.samples[1].num_queues, 1);
  EXPECT_EQ(all.samples[1].queues[0].name, 1);
  EXPECT_FLOAT_EQ(all.samples[1].queues[0].used_pct, 50);
  EXPECT_EQ(all.samples[2].num_queues, 1);
  EXPECT_EQ(all.samples[2].queues[0].name, 2);
}

TEST(HistorySamplerTest, SamplesOnTheLoopEveryIntervalUntilDestroyed) {
  ManualEventLoop loop(10'000);
  auto history =
      std::make_shared<ClusterHistory>(HistoryOptions{100, 60}, std::vector<std::string>{});
  int calls = 0;
  auto sampler = std::make_unique<HistorySampler>(
      &loop, history, [&](int64_t now_ms, std::vector<std::string>* paths) {
        ++calls;
        paths->push_back("root.default");
        HistorySample s = At(now_ms, calls);
        s.num_queues = 1;
        return s;
      });
  loop.RunPending();
  EXPECT_EQ(history->size(), 0u);  // the first sample comes one interval after the start
  loop.Advance(1000);
  EXPECT_EQ(calls, 10);
  EXPECT_THAT(Times(history->Since(10'700)), ElementsAre(10'800, 10'900, 11'000));
  sampler.reset();
  loop.Advance(1000);
  EXPECT_EQ(calls, 10);
  EXPECT_EQ(history->size(), 10u);  // readers keep what was sampled
}

TEST(ClusterHistoryRmTest, TheRmSamplesItsClusterAppsAndQueues) {
  RmOptions o = RmHarness::DefaultOptions();
  o.history_sample_ms = 1000;
  o.history_retention_s = 60;
  RmHarness h(o);
  ASSERT_NE(h.rm().history(), nullptr);
  h.AddNode("h1:1", 8192, 8);
  const std::string app = h.Submit();
  ASSERT_FALSE(app.empty());
  h.loop.Advance(3000);
  ClusterHistory::Slice slice = h.rm().history()->Since(0);
  ASSERT_EQ(slice.samples.size(), 3u);
  const HistorySample& last = slice.samples.back();
  EXPECT_EQ(last.time_ms, h.rm().NowMs());
  EXPECT_EQ(last.total[kMemoryMb], 8192);
  EXPECT_EQ(last.total[kVcores], 8);
  EXPECT_GT(last.used[kMemoryMb], 0);  // the AM container
  EXPECT_EQ(last.containers_running, 1);
  EXPECT_EQ(last.apps_running + last.apps_pending, 1);
  ASSERT_EQ(last.num_queues, 1);  // the default configuration's one leaf
  EXPECT_EQ(slice.queue_names.at(static_cast<size_t>(last.queues[0].name)), "root.default");
  EXPECT_GT(last.queues[0].used_pct, 0);
  EXPECT_THAT(h.rm().history()->resource_names(), ::testing::Contains("network-mbps"));
}

TEST(ClusterHistoryRmTest, InvalidHistoryOptionsFailTheRmStart) {
  ManualEventLoop loop;
  FakeLauncher launcher;
  security::FakeSecretSource secrets;
  std::unique_ptr<store::StateStore> store = store::NewMemoryStore();
  RmOptions o = RmHarness::DefaultOptions();
  o.history_sample_ms = 0;
  auto rm = ResourceManager::Create(o, &loop, store.get(), &launcher, &secrets);
  ASSERT_FALSE(rm.ok());
  EXPECT_THAT(rm.status().message(), HasSubstr("--history-sample-ms"));
}

}  // namespace
}  // namespace weft::rm
