// Copyright Weft authors.
#include "security/master_key.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace weft::security {
namespace {

constexpr int64_t kRollMs = 1000;
constexpr int64_t kLifetimeMs = 5000;

std::vector<int32_t> Ids(const MasterKeyManager& m) {
  std::vector<int32_t> ids;
  for (const MasterKey& k : m.Keys()) ids.push_back(k.id);
  return ids;
}

TEST(MasterKeyManagerTest, StartMakesCurrentAndNext) {
  FakeSecretSource secrets;
  MasterKeyManager m("container", kRollMs, kLifetimeMs, &secrets);
  EXPECT_FALSE(m.started());
  ASSERT_TRUE(m.Start(100).ok());
  ASSERT_TRUE(m.started());
  EXPECT_EQ(m.current().id, 1);
  EXPECT_EQ(m.next().id, 2);
  EXPECT_EQ(m.current().secret.size(), kMasterKeySecretBytes);
  EXPECT_NE(m.current().secret, m.next().secret);
  EXPECT_EQ(m.current().created_ms, 100);
  EXPECT_EQ(m.current().expires_ms, 100 + kLifetimeMs);
  EXPECT_EQ(m.next_roll_ms(), 100 + kRollMs);
  EXPECT_EQ(m.Find(1), &m.current());
  EXPECT_EQ(m.Find(2), &m.next());
  EXPECT_EQ(m.Find(3), nullptr);
  EXPECT_EQ(m.Start(200).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(MasterKeyManagerTest, RejectsIntervalsThatCannotWork) {
  FakeSecretSource secrets;
  MasterKeyManager zero_roll("amrm", 0, kLifetimeMs, &secrets);
  EXPECT_EQ(zero_roll.Start(0).code(), absl::StatusCode::kInvalidArgument);
  // A key is next for one interval and current for one more: lifetime must exceed both.
  MasterKeyManager too_short("amrm", kRollMs, 2 * kRollMs, &secrets);
  absl::Status s = too_short.Start(0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("amrm"), absl::string_view::npos) << s;
  EXPECT_FALSE(too_short.started());
  MasterKeyManager huge("amrm", INT64_MAX, INT64_MAX, &secrets);  // must not overflow
  EXPECT_EQ(huge.Start(0).code(), absl::StatusCode::kInvalidArgument);
  MasterKeyManager just_enough("amrm", kRollMs, 2 * kRollMs + 1, &secrets);
  EXPECT_TRUE(just_enough.Start(0).ok());
}

TEST(MasterKeyManagerTest, RollBeforeStartFails) {
  FakeSecretSource secrets;
  MasterKeyManager m("container", kRollMs, kLifetimeMs, &secrets);
  EXPECT_EQ(m.Roll(0).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(MasterKeyManagerTest, RollsOnlyWhenTheIntervalHasPassed) {
  FakeSecretSource secrets;
  MasterKeyManager m("container", kRollMs, kLifetimeMs, &secrets);
  ASSERT_TRUE(m.Start(0).ok());
  const MasterKey old_next = m.next();
  EXPECT_FALSE(*m.Roll(kRollMs - 1));
  EXPECT_EQ(m.current().id, 1);
  ASSERT_TRUE(*m.Roll(kRollMs));
  EXPECT_EQ(m.current(), old_next);  // next becomes current, secret and all
  EXPECT_EQ(m.next().id, 3);
  EXPECT_EQ(m.next().created_ms, kRollMs);
  EXPECT_EQ(m.next_roll_ms(), 2 * kRollMs);
  EXPECT_FALSE(*m.Roll(2 * kRollMs - 1));  // measured from the roll, not from key 2's creation
  EXPECT_TRUE(*m.Roll(2 * kRollMs));
  EXPECT_EQ(m.current().id, 3);
}

TEST(MasterKeyManagerTest, RetiredKeyIsFoundUntilItExpires) {
  FakeSecretSource secrets;
  MasterKeyManager m("container", kRollMs, kLifetimeMs, &secrets);
  ASSERT_TRUE(m.Start(0).ok());  // keys 1 and 2 expire at 5000
  const MasterKey key1 = m.current();
  ASSERT_TRUE(*m.Roll(1000));
  ASSERT_TRUE(*m.Roll(2000));
  ASSERT_TRUE(*m.Roll(3000));
  ASSERT_TRUE(*m.Roll(4000));
  EXPECT_EQ(Ids(m), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  ASSERT_NE(m.Find(1), nullptr);
  EXPECT_EQ(*m.Find(1), key1);
  EXPECT_FALSE(*m.Roll(4999));
  EXPECT_NE(m.Find(1), nullptr);
  ASSERT_TRUE(*m.Roll(5000));  // keys 1 and 2 expire now
  EXPECT_EQ(m.Find(1), nullptr);
  EXPECT_EQ(m.Find(2), nullptr);
  EXPECT_EQ(Ids(m), (std::vector<int32_t>{3, 4, 5, 6, 7}));
}

TEST(MasterKeyManagerTest, IdsStrictlyIncreaseAndSecretsDiffer) {
  FakeSecretSource secrets;
  MasterKeyManager m("container", kRollMs, kLifetimeMs, &secrets);
  ASSERT_TRUE(m.Start(0).ok());
  std::set<std::string> secrets_seen = {m.current().secret, m.next().secret};
  int32_t last_id = m.next().id;
  for (int64_t t = kRollMs; t <= 100 * kRollMs; t += kRollMs) {
    ASSERT_TRUE(*m.Roll(t));
    EXPECT_GT(m.next().id, last_id);
    last_id = m.next().id;
    EXPECT_TRUE(secrets_seen.insert(m.next().secret).second);
    EXPECT_LE(m.Keys().size(), 7u);  // bounded: lifetime / interval + 2
  }
}

TEST(MasterKeyManagerTest, LongPauseNeverLeavesAnExpiredCurrentKey) {
  FakeSecretSource secrets;
  MasterKeyManager m("container", kRollMs, kLifetimeMs, &secrets);
  ASSERT_TRUE(m.Start(0).ok());
  ASSERT_TRUE(*m.Roll(100000));
  EXPECT_GT(m.current().expires_ms, 100000);
  EXPECT_GT(m.next().expires_ms, 100000);
  EXPECT_EQ(Ids(m), (std::vector<int32_t>{3, 4}));  // 1 and 2 had expired long ago
}

TEST(MasterKeyManagerTest, SecretSourceFailureLeavesKeysUnchanged) {
  FakeSecretSource secrets;
  MasterKeyManager m("container", kRollMs, kLifetimeMs, &secrets);
  secrets.FailNext(absl::UnavailableError("entropy pool empty"));
  absl::Status s = m.Start(0);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("entropy pool empty"), absl::string_view::npos) << s;
  EXPECT_FALSE(m.started());

  ASSERT_TRUE(m.Start(0).ok());
  const std::vector<MasterKey> before = m.Keys();
  secrets.FailNext(absl::UnavailableError("entropy pool empty"));
  EXPECT_EQ(m.Roll(kRollMs).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(m.Keys(), before);
  ASSERT_TRUE(*m.Roll(kRollMs));
  EXPECT_GT(m.next().id, before.back().id);
}

TEST(MasterKeyManagerTest, RestoreKeepsKeysAndNeverReusesIds) {
  FakeSecretSource secrets(1);
  MasterKeyManager before("container", kRollMs, kLifetimeMs, &secrets);
  ASSERT_TRUE(before.Start(0).ok());
  ASSERT_TRUE(*before.Roll(1000));
  ASSERT_TRUE(*before.Roll(2000));
  const std::vector<MasterKey> saved = before.Keys();  // ids 1..4

  // The RM restarts at 2500 with a fresh random source.
  FakeSecretSource other_secrets(99);
  MasterKeyManager after("container", kRollMs, kLifetimeMs, &other_secrets);
  ASSERT_TRUE(after.Restore(saved, 2500).ok());
  EXPECT_EQ(after.Keys(), saved);
  EXPECT_EQ(after.current(), before.current());
  EXPECT_EQ(after.next(), before.next());
  EXPECT_EQ(*after.Find(1), *before.Find(1));
  EXPECT_EQ(after.next_roll_ms(), 3000);

  ASSERT_TRUE(*after.Roll(3000));
  EXPECT_EQ(after.next().id, 5);  // above every restored id
  EXPECT_NE(after.next().secret, before.Find(4)->secret);
}

TEST(MasterKeyManagerTest, RestoreDropsExpiredKeysAndRollsIfDue) {
  FakeSecretSource secrets;
  MasterKeyManager before("container", kRollMs, kLifetimeMs, &secrets);
  ASSERT_TRUE(before.Start(0).ok());
  ASSERT_TRUE(*before.Roll(1000));
  ASSERT_TRUE(*before.Roll(2000));
  std::vector<MasterKey> saved = before.Keys();
  std::reverse(saved.begin(), saved.end());  // order does not matter

  // Down from 2000 to 5500: keys 1 and 2 expired at 5000, and two rolls were missed.
  MasterKeyManager after("container", kRollMs, kLifetimeMs, &secrets);
  ASSERT_TRUE(after.Restore(saved, 5500).ok());
  EXPECT_EQ(Ids(after), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(after.current().id, 4);
  EXPECT_EQ(after.next().created_ms, 5500);
}

TEST(MasterKeyManagerTest, RestoreRejectsBadKeysAndChangesNothing) {
  FakeSecretSource secrets;
  MasterKeyManager source("amrm", kRollMs, kLifetimeMs, &secrets);
  ASSERT_TRUE(source.Start(0).ok());
  const std::vector<MasterKey> good = source.Keys();

  MasterKeyManager m("amrm", kRollMs, kLifetimeMs, &secrets);
  ASSERT_TRUE(m.Start(0).ok());
  ASSERT_TRUE(*m.Roll(1000));
  const std::vector<MasterKey> state = m.Keys();

  auto expect_rejected = [&](std::vector<MasterKey> keys, absl::string_view what) {
    absl::Status s = m.Restore(std::move(keys), 1500);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << what << ": " << s;
    EXPECT_NE(s.message().find(what), absl::string_view::npos) << s;
    EXPECT_EQ(m.Keys(), state);
  };
  expect_rejected({}, "at least");
  expect_rejected({good[0]}, "at least");
  expect_rejected({good[0], good[0]}, "twice");
  std::vector<MasterKey> bad = good;
  bad[1].secret = "short";
  expect_rejected(bad, "5-byte secret");
  bad = good;
  bad[0].id = 0;
  expect_rejected(bad, "not positive");
  bad = good;
  bad[1].expires_ms = bad[1].created_ms - 1;
  expect_rejected(bad, "before its creation");
}

}  // namespace
}  // namespace weft::security
