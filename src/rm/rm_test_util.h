// Copyright Weft authors. Test support for the RM's services: a fake AM launcher, a state
// store whose writes can be made to fail, request builders, and an RM on a manual loop.
#ifndef WEFT_RM_RM_TEST_UTIL_H_
#define WEFT_RM_RM_TEST_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "rm/resource_manager.h"
#include "security/secret_source.h"
#include "store/memory_store.h"

namespace weft::rm {

// A caller authenticated as `name` and acting as itself (no proxy, not an admin).
inline Caller CallerFor(const std::string& name, std::vector<std::string> groups = {}) {
  Caller c;
  c.user = name;
  c.real_user = name;
  c.groups = std::move(groups);
  return c;
}

class FakeLauncher : public AmLauncher {
 public:
  void Launch(const std::string& node_id, const v1::StartContainerRequest& request,
              std::function<void(absl::Status)> done) override {
    launches.push_back({node_id, request});
    done(fail ? absl::UnavailableError("node unreachable") : absl::OkStatus());
  }
  std::vector<std::pair<std::string, v1::StartContainerRequest>> launches;
  bool fail = false;
};

// A store over another whose mutating calls fail with Unavailable while `fail_writes` is set
// (a full disk, a lost ZooKeeper session), changing nothing.
class FaultyStore : public store::StateStore {
 public:
  explicit FaultyStore(std::unique_ptr<store::StateStore> inner) : inner_(std::move(inner)) {}
  absl::StatusOr<store::RmState> Load() override { return inner_->Load(); }
  absl::StatusOr<int64_t> BumpEpoch() override {
    if (fail_writes) return Fail();
    return inner_->BumpEpoch();
  }
  absl::Status PutApplication(const store::ApplicationRecord& a) override {
    return fail_writes ? Fail() : inner_->PutApplication(a);
  }
  absl::Status PutAttempt(const store::AttemptRecord& a) override {
    return fail_writes ? Fail() : inner_->PutAttempt(a);
  }
  absl::Status PutApplicationAndAttempt(const store::ApplicationRecord& a,
                                        const store::AttemptRecord& t) override {
    return fail_writes ? Fail() : inner_->PutApplicationAndAttempt(a, t);
  }
  absl::Status RemoveApplication(absl::string_view id) override {
    return fail_writes ? Fail() : inner_->RemoveApplication(id);
  }
  absl::Status PutMasterKey(const store::MasterKeyRecord& k) override {
    return fail_writes ? Fail() : inner_->PutMasterKey(k);
  }
  absl::Status RemoveMasterKey(absl::string_view purpose, int32_t id) override {
    return fail_writes ? Fail() : inner_->RemoveMasterKey(purpose, id);
  }
  absl::Status UpdateNodeAdmin(const std::vector<store::NodeAdminRecord>& put,
                               const std::vector<std::string>& remove) override {
    return fail_writes ? Fail() : inner_->UpdateNodeAdmin(put, remove);
  }
  absl::Status Close() override { return inner_->Close(); }

  bool fail_writes = false;
  int failed = 0;  // writes refused so far

 private:
  absl::Status Fail() {
    ++failed;
    return absl::UnavailableError("disk full");
  }
  std::unique_ptr<store::StateStore> inner_;
};

// A node registration offering `mb` MiB and `vcores` vcores.
inline v1::RegisterNodeManagerRequest NodeRequest(const std::string& id, int64_t mb = 8192,
                                                  int64_t vcores = 8) {
  v1::RegisterNodeManagerRequest req;
  req.set_node_id(id);
  (*req.mutable_capability()->mutable_values())["memory-mb"] = mb;
  (*req.mutable_capability()->mutable_values())["vcores"] = vcores;
  return req;
}

// An admin's node attributes request (`weft admin node-attributes`) with one mapping: `node`
// gets `key`=`value` under `op` (REMOVE ignores the value).
inline v1::NodeAttributesRequest NodeAttributesOf(v1::NodeAttributesRequest::Operation op,
                                                  const std::string& node, const std::string& key,
                                                  const std::string& value) {
  v1::NodeAttributesRequest req;
  req.set_operation(op);
  v1::NodeAttributesMapping* m = req.add_mappings();
  m->set_node(node);
  (*m->mutable_attributes())[key] = value;
  return req;
}

// An off-switch ask for `n` containers of <1 GB, 1 vcore> at priority 1.
inline v1::ResourceRequest AnyAsk(int32_t n) {
  v1::ResourceRequest ask;
  ask.set_priority(1);
  ask.set_resource_name("*");
  (*ask.mutable_capability()->mutable_values())["memory-mb"] = 1024;
  (*ask.mutable_capability()->mutable_values())["vcores"] = 1;
  ask.set_num_containers(n);
  ask.set_relax_locality(true);
  return ask;
}

// An RM on a manual loop over a FaultyStore (memory store underneath) and a fake launcher.
class RmHarness {
 public:
  explicit RmHarness(RmOptions options = DefaultOptions())
      : store_(std::make_unique<FaultyStore>(store::NewMemoryStore())) {
    auto rm = ResourceManager::Create(std::move(options), &loop, store_.get(), &launcher, &secrets);
    EXPECT_TRUE(rm.ok()) << rm.status();
    if (rm.ok()) rm_ = std::move(*rm);
  }
  static RmOptions DefaultOptions() {
    RmOptions o;
    o.nm_expiry_ms = 10000;
    o.am_expiry_ms = 60000;
    return o;
  }

  ResourceManager& rm() { return *rm_; }
  FaultyStore& store() { return *store_; }

  // The RM dies and a new one starts over the same store (and loop, launcher and secrets), as
  // after a kill -9: the old RM writes nothing more; what it stored is all the new one has.
  void Restart(RmOptions options = DefaultOptions()) {
    loop.RunPending();
    rm_.reset();
    auto rm = ResourceManager::Create(std::move(options), &loop, store_.get(), &launcher, &secrets);
    EXPECT_TRUE(rm.ok()) << rm.status();
    if (rm.ok()) rm_ = std::move(*rm);
  }

  void AddNode(const std::string& id, int64_t mb = 8192, int64_t vcores = 8) {
    auto r = rm_->RegisterNode(NodeRequest(id, mb, vcores));
    EXPECT_TRUE(r.ok()) << r.status();
  }

  // Submits a `sleep` app for `user`; "" when it was refused (the status in `status`).
  std::string Submit(const std::string& user = "alice", absl::Status* status = nullptr) {
    auto id = rm_->NewApplication();
    EXPECT_TRUE(id.ok());
    v1::ApplicationSubmissionContext ctx;
    ctx.set_application_id(id->application_id());
    ctx.mutable_am_container_spec()->add_command("sleep 100");
    absl::Status s = rm_->SubmitApplication(ctx, user);
    if (status != nullptr) *status = s;
    if (!s.ok()) return "";
    return id->application_id();
  }

  // The AMRM token handed to the `launch`-th AM container.
  v1::Token AmToken(size_t launch = 0) {
    v1::Token t;
    EXPECT_TRUE(
        t.ParseFromString(launcher.launches.at(launch).second.launch_context().tokens().at("amrm")));
    return t;
  }

  // Registers the `launch`-th AM; returns its token.
  v1::Token RegisterAm(size_t launch = 0) {
    v1::Token t = AmToken(launch);
    auto r = rm_->RegisterApplicationMaster(t, {});
    EXPECT_TRUE(r.ok()) << r.status();
    return t;
  }

  v1::NodeHeartbeatResponse Heartbeat(const std::string& node,
                                      std::vector<std::pair<std::string, int>> done = {}) {
    v1::NodeHeartbeatRequest req;
    req.set_node_id(node);
    for (auto& [id, exit] : done) {
      v1::ContainerStatus* s = req.add_container_statuses();
      s->set_container_id(id);
      s->set_state(v1::CONTAINER_COMPLETE);
      s->set_exit_status(exit);
    }
    auto r = rm_->NodeHeartbeat(req);
    EXPECT_TRUE(r.ok());
    return *r;
  }

  ManualEventLoop loop;
  FakeLauncher launcher;
  security::FakeSecretSource secrets;

 private:
  std::unique_ptr<FaultyStore> store_;
  std::unique_ptr<ResourceManager> rm_;
};

}  // namespace weft::rm

#endif  // WEFT_RM_RM_TEST_UTIL_H_
