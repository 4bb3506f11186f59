// Copyright Weft authors. A fake of the RM's TrackerService for the NodeManager's tests
// (node_manager_test.cc, nm_recovery_test.cc): it records what NMs send and answers with master
// keys from a real MasterKeyManager. Test-only.
#ifndef WEFT_NM_FAKE_RM_TEST_UTIL_H_
#define WEFT_NM_FAKE_RM_TEST_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "security/master_key.h"
#include "security/secret_source.h"
#include "security/tokens.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::nm::testing {

inline constexpr int64_t kHeartbeatMs = 20;
inline constexpr int64_t kHourMs = 3'600'000;
inline const absl::Duration kWait = absl::Seconds(30);

// Serves `service` (a FakeRm, or one in front of it) on 127.0.0.1, on a port the kernel picks
// (stored in *port); null when it could not be started.
inline std::unique_ptr<grpc::Server> ServeOnLoopback(grpc::Service* service, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

inline const v1::ContainerStatus* FindStatus(const v1::NodeHeartbeatRequest& heartbeat,
                                             absl::string_view container_id,
                                             v1::ContainerState state) {
  for (const v1::ContainerStatus& status : heartbeat.container_statuses()) {
    if (status.container_id() == container_id && status.state() == state) return &status;
  }
  return nullptr;
}

// A TrackerService that records what NMs send and answers with master keys from a real
// MasterKeyManager. Thread-safe: gRPC threads serve it while the test thread inspects it.
class FakeRm final : public v1::TrackerService::CallbackService {
 public:
  explicit FakeRm(int64_t now_ms) : keys_("container", kHourMs, 3 * kHourMs, &secrets_) {
    absl::Status started = keys_.Start(now_ms);
    EXPECT_TRUE(started.ok()) << started;
  }

  grpc::ServerUnaryReactor* RegisterNodeManager(
      grpc::CallbackServerContext* context, const v1::RegisterNodeManagerRequest* request,
      v1::RegisterNodeManagerResponse* response) override {
    {
      absl::MutexLock lock(&mu_);
      registrations_.push_back(*request);
      response->set_rm_epoch(rm_epoch_);
      response->set_heartbeat_interval_ms(kHeartbeatMs);
      FillKeys(response->mutable_container_key(), response->mutable_next_container_key());
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* NodeHeartbeat(grpc::CallbackServerContext* context,
                                          const v1::NodeHeartbeatRequest* request,
                                          v1::NodeHeartbeatResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    absl::MutexLock lock(&mu_);
    bool has_completed = false;
    for (const v1::ContainerStatus& status : request->container_statuses()) {
      has_completed |= status.state() == v1::CONTAINER_COMPLETE;
    }
    if (has_completed && fail_heartbeats_with_completed_ > 0) {
      --fail_heartbeats_with_completed_;
      failed_heartbeats_.push_back(*request);
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "fake RM: heartbeat lost"));
      return reactor;
    }
    if (has_completed && resync_heartbeats_with_completed_) {
      resync_heartbeats_with_completed_ = false;
      next_action_ = v1::NODE_ACTION_RESYNC;
    }
    if (next_action_ == v1::NODE_ACTION_RESYNC) {
      // As the RM answers a node it does not know: no response id, so nothing is acknowledged.
      resynced_heartbeats_.push_back(*request);
      response->set_action(next_action_);
      next_action_ = v1::NODE_ACTION_NORMAL;
      reactor->Finish(grpc::Status::OK);
      return reactor;
    }
    heartbeats_.push_back(*request);
    response->set_response_id(request->response_id() + 1);
    response->set_next_heartbeat_interval_ms(kHeartbeatMs);
    FillKeys(response->mutable_container_key(), response->mutable_next_container_key());
    response->set_action(next_action_);
    next_action_ = v1::NODE_ACTION_NORMAL;
    for (const std::string& id : containers_to_cleanup_) response->add_containers_to_cleanup(id);
    for (const std::string& id : apps_to_cleanup_) response->add_applications_to_cleanup(id);
    for (const v1::Token& token : containers_to_update_)
      *response->add_containers_to_update() = token;
    containers_to_update_.clear();
    containers_to_cleanup_.clear();
    apps_to_cleanup_.clear();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  // A container token signed with the RM's current key, or with `key` when given.
  v1::Token IssueToken(const security::ContainerTokenData& data,
                       std::optional<security::MasterKey> key = std::nullopt) {
    absl::MutexLock lock(&mu_);
    security::Token token = security::IssueContainerToken(data, key ? *key : keys_.current());
    v1::Token out;
    out.set_identifier(token.identifier);
    out.set_password(token.password);
    out.set_kind("ContainerToken");
    return out;
  }
  security::MasterKey current_key() {
    absl::MutexLock lock(&mu_);
    return keys_.current();
  }

  // Waits (up to kWait) until `pred(*this)` holds; it runs with the lock held.
  bool WaitUntil(const std::function<bool(FakeRm&)>& pred) {
    absl::MutexLock lock(&mu_);
    auto cond = [&]() { return pred(*this); };
    return mu_.AwaitWithTimeout(absl::Condition(&cond), kWait);
  }
  // Runs `fn` with the lock held.
  template <typename Fn>
  auto With(Fn fn) {
    absl::MutexLock lock(&mu_);
    return fn(*this);
  }

  // Index of the first acknowledged heartbeat at or after `from` that reports `container_id`
  // as completed, or -1.
  int CompletedIndex(absl::string_view container_id, size_t from = 0)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (size_t i = from; i < heartbeats_.size(); ++i) {
      if (FindStatus(heartbeats_[i], container_id, v1::CONTAINER_COMPLETE) != nullptr) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  // Waits (kWait at most) until an acknowledged heartbeat reports the container completed;
  // returns that status (nullopt, with a test failure, when none came).
  std::optional<v1::ContainerStatus> WaitCompleted(const std::string& container_id) {
    std::optional<v1::ContainerStatus> result;
    bool ok = WaitUntil([&](FakeRm& rm) {
      int i = rm.CompletedIndex(container_id);
      if (i < 0) return false;
      result = *FindStatus(rm.heartbeats_[i], container_id, v1::CONTAINER_COMPLETE);
      return true;
    });
    EXPECT_TRUE(ok) << "no completed status of " << container_id << " reached the RM";
    return result;
  }

  // Fields below are guarded by mu_ (use With/WaitUntil).
  std::vector<v1::RegisterNodeManagerRequest> registrations_;
  std::vector<v1::NodeHeartbeatRequest> heartbeats_;
  std::vector<v1::NodeHeartbeatRequest> failed_heartbeats_;
  std::vector<v1::NodeHeartbeatRequest> resynced_heartbeats_;  // answered RESYNC
  int fail_heartbeats_with_completed_ = 0;
  v1::NodeAction next_action_ = v1::NODE_ACTION_NORMAL;
  int64_t rm_epoch_ = 1;  // what registrations are answered with
  // The next heartbeat carrying a completed status is answered RESYNC (unacknowledged).
  bool resync_heartbeats_with_completed_ = false;
  std::vector<std::string> containers_to_cleanup_;
  std::vector<std::string> apps_to_cleanup_;
  // Container resource updates for the next heartbeat reply (containers_to_update).
  std::vector<v1::Token> containers_to_update_;

 private:
  void FillKeys(v1::MasterKey* current, v1::MasterKey* next) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto convert = [](const security::MasterKey& key, v1::MasterKey* out) {
      out->set_key_id(key.id);
      out->set_secret(key.secret);
      out->set_expires_ms(key.expires_ms);
    };
    convert(keys_.current(), current);
    convert(keys_.next(), next);
  }

  absl::Mutex mu_;
  security::FakeSecretSource secrets_{42};
  security::MasterKeyManager keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::nm::testing

#endif  // WEFT_NM_FAKE_RM_TEST_UTIL_H_
