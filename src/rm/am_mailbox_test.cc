// Copyright Weft authors.
#include "rm/am_mailbox.h"

#include <gtest/gtest.h>

namespace weft::rm {
namespace {

v1::Container Container(const std::string& id) {
  v1::Container c;
  c.set_container_id(id);
  return c;
}

RmCompletion Done(const std::string& id, const std::string& node) {
  RmCompletion done;
  done.status.set_container_id(id);
  done.status.set_state(v1::CONTAINER_COMPLETE);
  done.node = node;
  return done;
}

TEST(AmMailboxTest, AReplyTakesWhatWaitsAndTheNextCallAcknowledgesItsCompletions) {
  AmMailbox box;
  EXPECT_FALSE(box.HasNews());
  box.AddAllocated(Container("c1"));
  box.AddCompleted(Done("c0", "n1:1"));
  box.AddRecovered(Container("c9"));
  EXPECT_TRUE(box.HasNews());
  ASSERT_EQ(box.Classify(0), AmMailbox::Call::kNext);

  v1::AllocateResponse first;
  EXPECT_TRUE(box.Fill(&first).empty());  // nothing was sent before
  box.Remember(first);
  EXPECT_EQ(first.response_id(), 1);
  ASSERT_EQ(first.allocated_containers_size(), 1);
  EXPECT_EQ(first.allocated_containers(0).container_id(), "c1");
  ASSERT_EQ(first.completed_containers_size(), 1);
  EXPECT_EQ(first.containers_from_previous_attempts(0).container_id(), "c9");
  EXPECT_FALSE(box.HasNews());

  // The same call again (its reply was lost): the same reply; an older id: resync.
  EXPECT_EQ(box.Classify(0), AmMailbox::Call::kRetry);
  EXPECT_EQ(box.last_response().response_id(), 1);
  EXPECT_EQ(box.Classify(7), AmMailbox::Call::kOutOfOrder);

  ASSERT_EQ(box.Classify(1), AmMailbox::Call::kNext);
  v1::AllocateResponse second;
  std::vector<RmCompletion> acked = box.Fill(&second);
  ASSERT_EQ(acked.size(), 1u);
  EXPECT_EQ(acked[0].status.container_id(), "c0");
  EXPECT_EQ(acked[0].node, "n1:1");
  EXPECT_EQ(second.response_id(), 2);
  EXPECT_EQ(second.completed_containers_size(), 0);
}

TEST(AmMailboxTest, RegisteringAgainSendsUnacknowledgedCompletionsAgainFromResponseZero) {
  AmMailbox box;
  box.AddCompleted(Done("c1", "n1:1"));
  v1::AllocateResponse r;
  box.Fill(&r);
  box.Remember(r);
  box.AddCompleted(Done("c2", "n1:1"));
  box.AddAllocated(Container("c3"));  // listed in the registration reply instead

  box.Registered();
  EXPECT_EQ(box.last_response_id(), 0);
  EXPECT_EQ(box.Classify(0), AmMailbox::Call::kNext);
  v1::AllocateResponse again;
  EXPECT_TRUE(box.Fill(&again).empty());
  EXPECT_EQ(again.response_id(), 1);
  EXPECT_EQ(again.allocated_containers_size(), 0);
  ASSERT_EQ(again.completed_containers_size(), 2);
  EXPECT_EQ(again.completed_containers(0).container_id(), "c1");  // the missed one first
  EXPECT_EQ(again.completed_containers(1).container_id(), "c2");
}

TEST(AmMailboxTest, AnEndedAttemptsCompletionsAreTakenWhetherSentOrNot) {
  AmMailbox box;
  box.AddCompleted(Done("c1", "n1:1"));
  v1::AllocateResponse r;
  box.Fill(&r);
  box.AddCompleted(Done("c2", "n2:1"));
  std::vector<RmCompletion> all = box.TakeCompletions();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].status.container_id(), "c2");
  EXPECT_EQ(all[1].status.container_id(), "c1");
  EXPECT_TRUE(box.TakeCompletions().empty());
  EXPECT_FALSE(box.HasNews());
}

}  // namespace
}  // namespace weft::rm
