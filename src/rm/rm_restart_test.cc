// Copyright Weft authors. Work-preserving RM restart (YARN-556): an RM restarted over the same
// store keeps its apps' attempts, rebuilds its scheduler state from what the NMs report when
// they register again, and resyncs the AMs; a restart never uses up an attempt, unknown
// containers are stopped, and nothing is counted twice.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_test_util.h"
#include "security/tokens.h"

namespace weft::rm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAreArray;

constexpr char kNode[] = "h1:1";

// One app whose AM runs on kNode with three task containers of <1 GB, 1 vcore>, as its NM
// sees them: every container's name and what its token granted.
class RmRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h_.AddNode(kNode);
    app_ = h_.Submit();
    h_.loop.Advance(200);
    ASSERT_EQ(h_.launcher.launches.size(), 1u);
    const v1::Token& am_token = h_.launcher.launches[0].second.container_token();
    am_container_ = security::DecodeContainerToken(am_token.identifier())->container_id;
    v1::Resource am;
    (*am.mutable_values())["memory-mb"] = 1024;
    (*am.mutable_values())["vcores"] = 1;
    resources_[am_container_] = am;
    amrm_ = h_.RegisterAm();
    v1::AllocateRequest ask;
    *ask.add_asks() = AnyAsk(3);
    auto reply = h_.rm().Allocate(amrm_, ask);
    ASSERT_TRUE(reply.ok()) << reply.status();
    h_.loop.Advance(200);
    v1::AllocateRequest poll;
    poll.set_response_id(reply->response_id());
    reply = h_.rm().Allocate(amrm_, poll);
    ASSERT_TRUE(reply.ok()) << reply.status();
    response_id_ = reply->response_id();
    for (const v1::Container& c : reply->allocated_containers()) {
      tasks_.push_back(c.container_id());
      resources_[c.container_id()] = c.resource();
    }
    ASSERT_EQ(tasks_.size(), 3u);
    ASSERT_EQ(Allocated(), Resource::Of(4096, 4));
  }

  // The NM's registration after the restart: `running` with their resources, and `completed`.
  v1::RegisterNodeManagerRequest Registration(
      const std::vector<std::string>& running,
      const std::vector<std::pair<std::string, int>>& completed = {}) {
    v1::RegisterNodeManagerRequest req = NodeRequest(kNode);
    for (const std::string& name : running) {
      v1::ContainerStatus* st = req.add_running_containers();
      st->set_container_id(name);
      st->set_state(v1::CONTAINER_RUNNING);
      if (resources_.contains(name))
        (*req.mutable_container_resources())[name] = resources_.at(name);
    }
    for (const auto& [name, exit] : completed) {
      v1::ContainerStatus* st = req.add_completed_containers();
      st->set_container_id(name);
      st->set_state(v1::CONTAINER_COMPLETE);
      st->set_exit_status(exit);
    }
    return req;
  }
  void Reregister(const std::vector<std::string>& running,
                  const std::vector<std::pair<std::string, int>>& completed = {}) {
    auto r = h_.rm().RegisterNode(Registration(running, completed));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->action(), v1::NODE_ACTION_NORMAL);
  }
  std::vector<std::string> All() const {
    std::vector<std::string> all = {am_container_};
    all.insert(all.end(), tasks_.begin(), tasks_.end());
    return all;
  }
  Resource Allocated() {
    const scheduler::Scheduler& s = h_.rm().scheduler();
    scheduler::NodeId n = s.FindNode(kNode);
    return n < 0 ? Resource() : s.node(n)->allocated;
  }
  // A heartbeat of kNode reporting `running` running and `completed` complete.
  v1::NodeHeartbeatResponse Heartbeat(const std::vector<std::string>& running,
                                      const std::vector<std::pair<std::string, int>>& completed) {
    v1::NodeHeartbeatRequest req;
    req.set_node_id(kNode);
    for (const std::string& name : running) {
      v1::ContainerStatus* st = req.add_container_statuses();
      st->set_container_id(name);
      st->set_state(v1::CONTAINER_RUNNING);
    }
    for (const auto& [name, exit] : completed) {
      v1::ContainerStatus* st = req.add_container_statuses();
      st->set_container_id(name);
      st->set_state(v1::CONTAINER_COMPLETE);
      st->set_exit_status(exit);
    }
    auto r = h_.rm().NodeHeartbeat(req);
    EXPECT_TRUE(r.ok()) << r.status();
    return *r;
  }
  // The AM's resync after a restart: its Allocate gets AM_RESYNC, it registers again.
  v1::RegisterApplicationMasterResponse Resync() {
    v1::AllocateRequest stale;
    stale.set_response_id(response_id_);
    auto resync = h_.rm().Allocate(amrm_, stale);
    EXPECT_TRUE(resync.ok()) << resync.status();
    EXPECT_EQ(resync->am_command(), v1::AM_RESYNC);
    auto again = h_.rm().RegisterApplicationMaster(amrm_, {});
    EXPECT_TRUE(again.ok()) << again.status();
    response_id_ = 0;
    return again.ok() ? *again : v1::RegisterApplicationMasterResponse();
  }
  v1::AllocateResponse Poll() {
    v1::AllocateRequest req;
    req.set_response_id(response_id_);
    auto r = h_.rm().Allocate(amrm_, req);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    response_id_ = r->response_id();
    if (r->has_amrm_token()) amrm_ = r->amrm_token();
    return *r;
  }
  // Moves time on by `ms` in steps of a second, kNode heartbeating with `running`.
  void AdvanceWithHeartbeats(int64_t ms, const std::vector<std::string>& running) {
    for (int64_t t = 0; t < ms; t += 1000) {
      h_.loop.Advance(1000);
      Heartbeat(running, {});
    }
  }
  static std::vector<std::string> Names(
      const google::protobuf::RepeatedPtrField<v1::Container>& cs) {
    std::vector<std::string> out;
    for (const v1::Container& c : cs) out.push_back(c.container_id());
    return out;
  }
  static std::vector<std::string> Names(
      const google::protobuf::RepeatedPtrField<v1::ContainerStatus>& cs) {
    std::vector<std::string> out;
    for (const v1::ContainerStatus& c : cs) out.push_back(c.container_id());
    return out;
  }

  RmHarness h_;
  std::string app_;
  std::string am_container_;
  std::vector<std::string> tasks_;
  std::map<std::string, v1::Resource> resources_;
  v1::Token amrm_;
  int32_t response_id_ = 0;
};

TEST_F(RmRestartTest, TheAttemptCarriesOnAndTheAmGetsItsRunningContainersBack) {
  h_.Restart();
  EXPECT_EQ(h_.rm().epoch(), 2);
  auto report = h_.rm().GetApplication(app_);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->state(), v1::APP_RUNNING);
  EXPECT_EQ(report->current_attempt(), 1);
  // Nothing is charged before the node reports; the AM container is not asked for again.
  EXPECT_EQ(h_.rm().scheduler().cluster_allocated(), Resource());
  EXPECT_EQ(h_.rm().scheduler().FindQueue("root")->pending, Resource());

  Reregister(All());
  EXPECT_EQ(Allocated(), Resource::Of(4096, 4));
  EXPECT_EQ(h_.rm().GetApplication(app_)->running_containers(), 4);
  EXPECT_EQ(h_.rm().GetApplication(app_)->allocated().values().at("memory-mb"), 4096);
  EXPECT_EQ(h_.rm().recovery_counts().recovered, 4);
  EXPECT_EQ(h_.rm().recovery_counts().refused, 0);
  h_.loop.Advance(1000);  // passes: no AM container launched again, nothing allocated
  EXPECT_EQ(h_.launcher.launches.size(), 1u);
  EXPECT_EQ(h_.rm().scheduler().stats().allocations, 0);

  v1::RegisterApplicationMasterResponse again = Resync();
  EXPECT_THAT(Names(again.containers_from_previous_attempts()), UnorderedElementsAreArray(tasks_));
  for (const v1::Container& c : again.containers_from_previous_attempts()) {
    EXPECT_EQ(c.node_id(), kNode);
    EXPECT_EQ(c.resource().values().at("memory-mb"), 1024);
    auto token = security::DecodeContainerToken(c.container_token().identifier());
    ASSERT_TRUE(token.ok());
    EXPECT_EQ(token->container_id, c.container_id());
  }
  v1::AllocateResponse first = Poll();
  EXPECT_EQ(first.response_id(), 1);
  EXPECT_THAT(first.containers_from_previous_attempts(), IsEmpty());  // told once, above
  EXPECT_TRUE(first.has_amrm_token());  // under the new RM's current key
  auto attempts = h_.rm().GetApplicationAttempts(app_);
  ASSERT_EQ(attempts->attempts_size(), 1);
  EXPECT_EQ(attempts->attempts(0).state(), "RUNNING");
  EXPECT_THAT(Heartbeat(All(), {}).containers_to_cleanup(), IsEmpty());
}

TEST_F(RmRestartTest, AContainerReportedAgainIsCountedOnce) {
  h_.Restart();
  Reregister(All());
  Reregister(All());  // the first reply was lost: the NM registers again
  EXPECT_EQ(Allocated(), Resource::Of(4096, 4));
  EXPECT_EQ(h_.rm().recovery_counts().recovered, 4);
  EXPECT_THAT(Heartbeat(All(), {}).containers_to_cleanup(), IsEmpty());
  EXPECT_EQ(Allocated(), Resource::Of(4096, 4));
  EXPECT_EQ(h_.rm().GetApplication(app_)->running_containers(), 4);
  // A second registration without one of them: it is gone (and its AM told, once).
  Reregister({am_container_, tasks_[0], tasks_[1]});
  EXPECT_EQ(Allocated(), Resource::Of(3072, 3));
  Resync();
  v1::AllocateResponse r = Poll();
  ASSERT_EQ(r.completed_containers_size(), 1);
  EXPECT_EQ(r.completed_containers(0).container_id(), tasks_[2]);
  EXPECT_EQ(r.completed_containers(0).exit_status(), v1::CONTAINER_EXIT_LOST_NODE);
}

TEST_F(RmRestartTest, ContainersTheRmCannotTakeBackAreStopped) {
  // An app that ends before the restart leaves a container running on the node.
  std::string ended = h_.Submit("bob");
  h_.loop.Advance(200);
  ASSERT_EQ(h_.launcher.launches.size(), 2u);
  const std::string ended_am =
      security::DecodeContainerToken(h_.launcher.launches[1].second.container_token().identifier())
          ->container_id;
  ASSERT_TRUE(h_.rm().KillApplication(ended, "").ok());
  h_.Restart();
  const std::string unsized = tasks_[2];  // its NM does not say what it was granted
  resources_.erase(unsized);
  const std::string unknown_app = "container_e1_1_9999_01_000001";
  const std::string this_epoch = "container_e2_1_0001_01_000077";
  Reregister({am_container_, tasks_[0], tasks_[1], unsized, ended_am, unknown_app, this_epoch});
  EXPECT_EQ(h_.rm().recovery_counts().recovered, 3);
  EXPECT_EQ(h_.rm().recovery_counts().refused, 3);
  EXPECT_EQ(Allocated(), Resource::Of(3072, 3));
  EXPECT_THAT(Heartbeat({am_container_, tasks_[0], tasks_[1]}, {}).containers_to_cleanup(),
              UnorderedElementsAreArray({unsized, ended_am, unknown_app, this_epoch}));
  // Told once: reported again, they are not stopped again.
  EXPECT_THAT(Heartbeat({unsized, ended_am}, {}).containers_to_cleanup(), IsEmpty());
  // The stopped task's end reaches its AM once; it counts nowhere.
  Resync();
  Heartbeat({}, {{unsized, v1::CONTAINER_EXIT_KILLED_BY_RM}});
  Heartbeat({}, {{unsized, v1::CONTAINER_EXIT_KILLED_BY_RM}});
  v1::AllocateResponse r = Poll();
  EXPECT_THAT(Names(r.completed_containers()), ElementsAre(unsized));
  EXPECT_THAT(Poll().completed_containers(), IsEmpty());
  EXPECT_EQ(Allocated(), Resource::Of(3072, 3));
}

TEST_F(RmRestartTest, AResourceThatDoesNotParseOrFitRecoversNothing) {
  h_.Restart();
  (*resources_[tasks_[0]].mutable_values())["qubits"] = 1;
  (*resources_[tasks_[1]].mutable_values())["memory-mb"] = 64 * 1024;  // more than the node
  Reregister(All());
  EXPECT_EQ(h_.rm().recovery_counts().recovered, 2);  // the AM and tasks_[2]
  EXPECT_EQ(h_.rm().recovery_counts().refused, 2);
  EXPECT_EQ(h_.rm().recovery_counts().refused_without_resource, 0);
  EXPECT_EQ(Allocated(), Resource::Of(2048, 2));
  EXPECT_THAT(Heartbeat(All(), {}).containers_to_cleanup(),
              UnorderedElementsAreArray({tasks_[0], tasks_[1]}));
}

// An NM that reports no resources at all: the AM container is recovered from the app's AM
// resource; task containers cannot be charged, so they are stopped (and their AM told).
TEST_F(RmRestartTest, WithoutReportedResourcesOnlyTheAmContainerIsRecovered) {
  h_.Restart();
  resources_.clear();
  Reregister(All());
  EXPECT_EQ(h_.rm().recovery_counts().recovered, 1);
  EXPECT_EQ(h_.rm().recovery_counts().refused_without_resource, 3);
  EXPECT_EQ(Allocated(), Resource::Of(1024, 1));
  EXPECT_THAT(Heartbeat(All(), {}).containers_to_cleanup(), UnorderedElementsAreArray(tasks_));
  EXPECT_EQ(h_.rm().GetApplicationAttempts(app_)->attempts_size(), 1);
}

// An NM that lists completed containers among running_containers (COMPLETE statuses) is read
// the same way as one that uses completed_containers.
TEST_F(RmRestartTest, CompleteStatusesAmongRunningContainersAreCompletions) {
  h_.Restart();
  v1::RegisterNodeManagerRequest req = Registration({am_container_, tasks_[1], tasks_[2]});
  v1::ContainerStatus* done = req.add_running_containers();
  done->set_container_id(tasks_[0]);
  done->set_state(v1::CONTAINER_COMPLETE);
  done->set_exit_status(0);
  ASSERT_TRUE(h_.rm().RegisterNode(req).ok());
  EXPECT_EQ(h_.rm().recovery_counts().recovered, 3);
  EXPECT_EQ(h_.rm().recovery_counts().refused, 0);
  EXPECT_EQ(Allocated(), Resource::Of(3072, 3));
  Resync();
  EXPECT_THAT(Names(Poll().completed_containers()), ElementsAre(tasks_[0]));
}

TEST_F(RmRestartTest, CompletionsDuringTheOutageReachTheAmOnce) {
  h_.Restart();
  // tasks_[0] ended while no RM ran: reported in the registration (and resent in heartbeats
  // until acknowledged); tasks_[1] ended too, and only a heartbeat says so.
  Reregister({am_container_, tasks_[2]}, {{tasks_[0], 0}});
  EXPECT_EQ(Allocated(), Resource::Of(2048, 2));
  v1::RegisterApplicationMasterResponse again = Resync();
  EXPECT_THAT(Names(again.containers_from_previous_attempts()), ElementsAre(tasks_[2]));
  Heartbeat({am_container_, tasks_[2]}, {{tasks_[0], 0}, {tasks_[1], 3}});
  Heartbeat({am_container_, tasks_[2]}, {{tasks_[0], 0}, {tasks_[1], 3}});
  v1::AllocateResponse r = Poll();
  std::map<std::string, int> ends;
  for (const v1::ContainerStatus& st : r.completed_containers()) ends[st.container_id()] += 1;
  EXPECT_EQ(ends, (std::map<std::string, int>{{tasks_[0], 1}, {tasks_[1], 1}}));
  EXPECT_THAT(Poll().completed_containers(), IsEmpty());
  // A recovered container's end is told once too.
  Heartbeat({am_container_}, {{tasks_[2], 0}});
  Heartbeat({am_container_}, {{tasks_[2], 0}});
  EXPECT_THAT(Names(Poll().completed_containers()), ElementsAre(tasks_[2]));
  EXPECT_THAT(Poll().completed_containers(), IsEmpty());
  EXPECT_EQ(Allocated(), Resource::Of(1024, 1));
}

// YARN-1372: an NM keeps a completed container's status until the RM says its AM has it, so a
// completion the old RM took in just before it died still reaches the AM.
TEST_F(RmRestartTest, ACompletionTheOldRmTookInReachesTheAmThroughTheNewOne) {
  EXPECT_THAT(Heartbeat(All(), {{tasks_[0], 0}}).containers_to_be_removed_from_nm(), IsEmpty());
  h_.Restart();  // before the AM's next Allocate
  Reregister({am_container_, tasks_[1], tasks_[2]}, {{tasks_[0], 0}});
  Resync();
  EXPECT_THAT(Names(Poll().completed_containers()), ElementsAre(tasks_[0]));
  // Not yet acknowledged: the NM keeps it.
  EXPECT_THAT(
      Heartbeat({am_container_, tasks_[1], tasks_[2]}, {}).containers_to_be_removed_from_nm(),
      IsEmpty());
  EXPECT_THAT(Poll().completed_containers(), IsEmpty());  // the AM calls again: acknowledged
  EXPECT_THAT(
      Heartbeat({am_container_, tasks_[1], tasks_[2]}, {}).containers_to_be_removed_from_nm(),
      ElementsAre(tasks_[0]));
  // Reported again after that, it is forgotten again (in that very reply), told to no one.
  EXPECT_THAT(Heartbeat({am_container_, tasks_[1], tasks_[2]}, {{tasks_[0], 0}})
                  .containers_to_be_removed_from_nm(),
              ElementsAre(tasks_[0]));
  EXPECT_THAT(Poll().completed_containers(), IsEmpty());
}

// Without a restart too: a status is released once the AM acknowledged it, and at once when no
// AM will read it (the app ended); an AM that registers again gets unacknowledged ones again.
TEST_F(RmRestartTest, CompletedStatusesAreReleasedOnceTheAmHasThem) {
  Heartbeat(All(), {{tasks_[0], 0}});
  EXPECT_THAT(Names(Poll().completed_containers()), ElementsAre(tasks_[0]));
  // The reply was lost and the AM registers again: it hears of it again.
  ASSERT_TRUE(h_.rm().RegisterApplicationMaster(amrm_, {}).ok());
  response_id_ = 0;
  EXPECT_THAT(Names(Poll().completed_containers()), ElementsAre(tasks_[0]));
  EXPECT_THAT(Heartbeat(All(), {}).containers_to_be_removed_from_nm(), IsEmpty());
  Poll();
  EXPECT_THAT(Heartbeat(All(), {}).containers_to_be_removed_from_nm(), ElementsAre(tasks_[0]));
  v1::FinishApplicationMasterRequest fin;
  fin.set_final_status(v1::FINAL_SUCCEEDED);
  ASSERT_TRUE(h_.rm().FinishApplicationMaster(amrm_, fin).ok());
  EXPECT_THAT(Heartbeat({}, {{am_container_, 0}, {tasks_[1], 143}, {tasks_[2], 143}})
                  .containers_to_be_removed_from_nm(),
              UnorderedElementsAreArray({am_container_, tasks_[1], tasks_[2]}));
}

TEST_F(RmRestartTest, ContainersFoundAfterTheAmRegisteredAgainComeWithAllocate) {
  h_.Restart();
  v1::RegisterApplicationMasterResponse again = Resync();
  EXPECT_THAT(again.containers_from_previous_attempts(), IsEmpty());
  EXPECT_EQ(h_.rm().GetApplication(app_)->state(), v1::APP_RUNNING);
  Reregister(All());
  v1::AllocateResponse r = Poll();
  EXPECT_THAT(Names(r.containers_from_previous_attempts()), UnorderedElementsAreArray(tasks_));
  EXPECT_THAT(r.allocated_containers(), IsEmpty());
  EXPECT_THAT(Poll().containers_from_previous_attempts(), IsEmpty());
  // Its outstanding asks, sent again, are served on top of what runs.
  v1::AllocateRequest ask;
  ask.set_response_id(response_id_);
  *ask.add_asks() = AnyAsk(2);
  auto reply = h_.rm().Allocate(amrm_, ask);
  ASSERT_TRUE(reply.ok());
  response_id_ = reply->response_id();
  h_.loop.Advance(200);
  v1::AllocateResponse next = Poll();
  ASSERT_EQ(next.allocated_containers_size(), 2);
  EXPECT_THAT(next.allocated_containers(0).container_id(), HasSubstr("container_e2_"));
  EXPECT_EQ(Allocated(), Resource::Of(6144, 6));
}

TEST_F(RmRestartTest, RestartsNeverUseUpAnAttempt) {
  // SetUp's app may make 2 attempts; three restarts leave it on its first.
  for (int i = 0; i < 3; ++i) {
    h_.Restart();
    Reregister(All());
    Resync();
    Poll();
  }
  EXPECT_EQ(h_.rm().epoch(), 4);
  EXPECT_EQ(h_.rm().GetApplicationAttempts(app_)->attempts_size(), 1);
  EXPECT_EQ(Allocated(), Resource::Of(4096, 4));
  v1::FinishApplicationMasterRequest fin;
  fin.set_final_status(v1::FINAL_SUCCEEDED);
  ASSERT_TRUE(h_.rm().FinishApplicationMaster(amrm_, fin).ok());
  auto report = h_.rm().GetApplication(app_);
  EXPECT_EQ(report->state(), v1::APP_FINISHED);
  EXPECT_EQ(report->current_attempt(), 1);
  // Its containers are released and their NM told to stop them.
  EXPECT_EQ(Allocated(), Resource());
  EXPECT_THAT(Heartbeat(All(), {}).containers_to_cleanup(), UnorderedElementsAreArray(All()));
}

TEST_F(RmRestartTest, TheAmGetsAFullExpiryFromTheRestart) {
  // The AM was silent for 50 of its 60 s before the RM died.
  AdvanceWithHeartbeats(50000, All());
  h_.Restart();
  Reregister(All());
  AdvanceWithHeartbeats(50000, All());
  EXPECT_EQ(h_.rm().GetApplicationAttempts(app_)->attempts(0).state(), "RUNNING");
  AdvanceWithHeartbeats(15000, All());  // 65 s after the restart, never registered again
  auto attempts = h_.rm().GetApplicationAttempts(app_);
  ASSERT_EQ(attempts->attempts_size(), 2);
  EXPECT_EQ(attempts->attempts(0).state(), "FAILED");
  EXPECT_THAT(attempts->attempts(0).diagnostics(), HasSubstr("did not call Allocate"));
}

TEST_F(RmRestartTest, AnAmContainerItsNodeNoLongerHasFailsTheAttempt) {
  h_.Restart();
  Reregister(tasks_);  // the AM exited while no RM ran (an NM that does not say so)
  auto attempts = h_.rm().GetApplicationAttempts(app_);
  ASSERT_EQ(attempts->attempts_size(), 2);
  EXPECT_THAT(attempts->attempts(0).diagnostics(),
              HasSubstr(absl::StrCat("AM container ", am_container_, " is not on node")));
  // Its task containers went with the attempt; the new attempt asks for its AM.
  EXPECT_EQ(h_.rm().GetApplication(app_)->state(), v1::APP_ACCEPTED);
  h_.loop.Advance(200);
  EXPECT_EQ(h_.launcher.launches.size(), 2u);
  EXPECT_EQ(Allocated(), Resource::Of(1024, 1));
}

TEST_F(RmRestartTest, AnAmContainerThatExitedDuringTheOutageFailsTheAttempt) {
  h_.Restart();
  Reregister(tasks_, {{am_container_, 1}});
  auto attempts = h_.rm().GetApplicationAttempts(app_);
  ASSERT_EQ(attempts->attempts_size(), 2);
  EXPECT_THAT(attempts->attempts(0).diagnostics(),
              HasSubstr(absl::StrCat("AM container ", am_container_, " exited with status 1")));
}

TEST_F(RmRestartTest, AContainerStartedAfterTheRestartIsStoppedAndItsEndTold) {
  // The old RM allocated it and the AM started it only after the new RM took over: no NM
  // registration named it, so nothing charges it.
  const std::string late = tasks_[2];
  h_.Restart();
  Reregister({am_container_, tasks_[0], tasks_[1]});
  Resync();
  EXPECT_THAT(Heartbeat(All(), {}).containers_to_cleanup(), ElementsAre(late));
  EXPECT_THAT(Heartbeat(All(), {}).containers_to_cleanup(), IsEmpty());
  Heartbeat({am_container_, tasks_[0], tasks_[1]}, {{late, v1::CONTAINER_EXIT_KILLED_BY_RM}});
  v1::AllocateResponse r = Poll();
  ASSERT_EQ(r.completed_containers_size(), 1);
  EXPECT_EQ(r.completed_containers(0).exit_status(), v1::CONTAINER_EXIT_KILLED_BY_RM);
  EXPECT_EQ(Allocated(), Resource::Of(3072, 3));
}

// The old RM allocated the AM container and died before it started: its node does not have
// it, and the same attempt asks for one again (the restart uses up no attempt).
TEST(RmRestartWaitingTest, AnAmContainerThatNeverStartedIsAskedForAgainInTheSameAttempt) {
  RmHarness h;
  h.AddNode(kNode);
  std::string app = h.Submit();
  h.loop.Advance(200);
  ASSERT_EQ(h.launcher.launches.size(), 1u);  // allocated; its start never happened
  h.Restart();
  ASSERT_TRUE(h.rm().RegisterNode(NodeRequest(kNode)).ok());
  auto attempts = h.rm().GetApplicationAttempts(app);
  ASSERT_EQ(attempts->attempts_size(), 1);
  EXPECT_EQ(attempts->attempts(0).state(), "SCHEDULED");
  EXPECT_EQ(attempts->attempts(0).am_container_id(), "");
  h.loop.Advance(200);
  ASSERT_EQ(h.launcher.launches.size(), 2u);
  EXPECT_EQ(h.launcher.launches[1].second.launch_context().environment().at("WEFT_APP_ATTEMPT_ID"),
            attempts->attempts(0).attempt_id());
  EXPECT_THAT(
      security::DecodeContainerToken(h.launcher.launches[1].second.container_token().identifier())
          ->container_id,
      HasSubstr("container_e2_"));
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts_size(), 1);
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts(0).state(), "LAUNCHED");
  h.RegisterAm(1);
  EXPECT_EQ(h.rm().GetApplication(app)->state(), v1::APP_RUNNING);
}

TEST(RmRestartWaitingTest, AnAttemptWaitingForItsAmContainerAsksForItAgain) {
  RmHarness h;
  std::string app = h.Submit();  // no node yet: its AM container waits
  h.Restart();
  auto attempts = h.rm().GetApplicationAttempts(app);
  ASSERT_EQ(attempts->attempts_size(), 1);
  EXPECT_EQ(attempts->attempts(0).state(), "SCHEDULED");
  h.AddNode(kNode);
  h.loop.Advance(200);
  ASSERT_EQ(h.launcher.launches.size(), 1u);
  auto am =
      security::DecodeContainerToken(h.launcher.launches[0].second.container_token().identifier());
  EXPECT_THAT(am->container_id, HasSubstr("container_e2_"));
  EXPECT_EQ(h.launcher.launches[0].second.launch_context().environment().at("WEFT_APP_ATTEMPT_ID"),
            attempts->attempts(0).attempt_id());
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts_size(), 1);
}

// A node the RM declared LOST kills, when it returns, what it still runs: nothing of it is
// this RM's any more (no restart involved).
TEST(RmRestartLostNodeTest, ALostNodeThatReturnsIsToldToStopItsContainers) {
  RmHarness h;
  h.AddNode(kNode);
  h.AddNode("h2:1");
  h.Submit();
  h.loop.Advance(200);
  const std::string am =
      security::DecodeContainerToken(h.launcher.launches[0].second.container_token().identifier())
          ->container_id;
  const std::string am_node = h.launcher.launches[0].first;
  const std::string other = am_node == kNode ? "h2:1" : kNode;
  for (int i = 0; i < 12; ++i) {
    h.loop.Advance(1000);
    h.Heartbeat(other);
  }
  EXPECT_EQ(h.rm().GetClusterMetrics().lost_nodes(), 1);
  v1::RegisterNodeManagerRequest back = NodeRequest(am_node);
  v1::ContainerStatus* st = back.add_running_containers();
  st->set_container_id(am);
  st->set_state(v1::CONTAINER_RUNNING);
  ASSERT_TRUE(h.rm().RegisterNode(back).ok());
  EXPECT_THAT(h.Heartbeat(am_node).containers_to_cleanup(), ElementsAre(am));
  EXPECT_EQ(h.rm().scheduler().node(h.rm().scheduler().FindNode(am_node))->allocated, Resource());
}

}  // namespace
}  // namespace weft::rm
