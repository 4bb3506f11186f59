// Copyright Weft authors. RmKeys: master keys are stored, rolled, pruned, and survive a
// restart; a roll whose write fails is retried.
#include "rm/rm_keys.h"

#include <set>

#include "gtest/gtest.h"
#include "rm/rm_test_util.h"

namespace weft::rm {
namespace {

std::set<int32_t> StoredIds(FaultyStore& store, const std::string& purpose) {
  std::set<int32_t> ids;
  auto state = store.Load();
  EXPECT_TRUE(state.ok());
  for (const auto& k : state->keys) {
    if (k.purpose == purpose) ids.insert(k.key_id);
  }
  return ids;
}

RmOptions QuickRolls() {
  RmOptions o = RmHarness::DefaultOptions();
  o.key_roll_interval_ms = 10000;
  o.container_token_lifetime_ms = 1000;
  return o;
}

TEST(RmKeysTest, BothKeySetsAreStoredAtStart) {
  RmHarness h;
  const auto& keys = h.rm().container_keys();
  std::set<int32_t> stored = StoredIds(h.store(), "container");
  EXPECT_TRUE(stored.contains(keys.current().id));
  EXPECT_TRUE(stored.contains(keys.next().id));
  EXPECT_EQ(StoredIds(h.store(), "amrm").size(), 2u);
}

TEST(RmKeysTest, ARollStoresTheNewKeyAndExpiredOnesLeaveTheStore) {
  RmHarness h(QuickRolls());
  const int32_t first = h.rm().container_keys().current().id;
  for (int i = 0; i < 60; ++i) h.loop.Advance(1000);  // several roll intervals
  const auto& keys = h.rm().container_keys();
  EXPECT_NE(keys.current().id, first);
  std::set<int32_t> stored = StoredIds(h.store(), "container");
  EXPECT_TRUE(stored.contains(keys.current().id));
  EXPECT_TRUE(stored.contains(keys.next().id));
  EXPECT_FALSE(stored.contains(first));  // expired and pruned
  std::set<int32_t> live;
  for (const auto& k : keys.Keys()) live.insert(k.id);
  EXPECT_EQ(stored, live);
}

TEST(RmKeysTest, ARollWhoseWriteFailsIsStoredByALaterRoll) {
  RmHarness h(QuickRolls());
  h.store().fail_writes = true;
  for (int i = 0; i < 11; ++i) h.loop.Advance(1000);  // one roll, its write refused
  const int32_t next = h.rm().container_keys().next().id;
  EXPECT_FALSE(StoredIds(h.store(), "container").contains(next));
  h.store().fail_writes = false;
  h.loop.Advance(1000);  // the next roll check writes what is missing
  EXPECT_TRUE(StoredIds(h.store(), "container").contains(next));
}

}  // namespace
}  // namespace weft::rm
