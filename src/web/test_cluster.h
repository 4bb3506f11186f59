// Copyright Weft authors. Test helper: a real ResourceManager on a manual loop with two nodes
// and a few applications, and the snapshot built from it.
#ifndef WEFT_WEB_TEST_CLUSTER_H_
#define WEFT_WEB_TEST_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "gtest/gtest.h"
#include "rm/resource_manager.h"
#include "security/secret_source.h"
#include "store/memory_store.h"
#include "web/rest_api.h"
#include "web/snapshot.h"

namespace weft::web {

class NoLauncher : public rm::AmLauncher {
 public:
  void Launch(const std::string&, const v1::StartContainerRequest&,
              std::function<void(absl::Status)> done) override {
    done(absl::OkStatus());
  }
};

// Nodes h1:1 (8192 MB, 8 vcores, 1000 Mbit/s) and h2:1 (4096 MB, 4 vcores) with web addresses;
// apps: one RUNNING-capable (AM allocated) by alice in "default", one KILLED by bob.
class TestCluster {
 public:
  TestCluster() {
    store_ = store::NewMemoryStore();
    rm::RmOptions o;
    auto rm = rm::ResourceManager::Create(o, &loop_, store_.get(), &launcher_, &secrets_);
    EXPECT_TRUE(rm.ok()) << rm.status();
    rm_ = std::move(*rm);
    AddNode("h1:1", 8192, 8, 1000);
    AddNode("h2:1", 4096, 4, 0);
    running_ = Submit("alice", "sleepy");
    loop_.Advance(200);
    killed_ = Submit("bob", "doomed");
    loop_.Advance(200);
    EXPECT_TRUE(rm_->KillApplication(killed_, "").ok());
    Publish();
  }

  void AddNode(const std::string& id, int64_t mb, int64_t vcores, int64_t mbps) {
    v1::RegisterNodeManagerRequest req;
    req.set_node_id(id);
    req.set_http_address(id.substr(0, id.find(':')) + ":8042");
    (*req.mutable_capability()->mutable_values())["memory-mb"] = mb;
    (*req.mutable_capability()->mutable_values())["vcores"] = vcores;
    if (mbps > 0) (*req.mutable_capability()->mutable_values())["network-mbps"] = mbps;
    EXPECT_TRUE(rm_->RegisterNode(req).ok());
  }

  std::string Submit(const std::string& user, const std::string& name) {
    auto id = rm_->NewApplication();
    EXPECT_TRUE(id.ok());
    v1::ApplicationSubmissionContext ctx;
    ctx.set_application_id(id->application_id());
    ctx.set_name(name);
    ctx.set_queue("default");
    ctx.mutable_am_container_spec()->add_command("sleep 100");
    EXPECT_TRUE(rm_->SubmitApplication(ctx, user).ok());
    return id->application_id();
  }

  void Publish() {
    auto previous = snapshots_.Get();
    snapshots_.Set(BuildSnapshot(*rm_, loop_.NowMs(), previous.get()));
  }

  ManualEventLoop loop_;
  std::unique_ptr<store::StateStore> store_;
  NoLauncher launcher_;
  security::FakeSecretSource secrets_;
  std::unique_ptr<rm::ResourceManager> rm_;
  SnapshotHolder snapshots_;
  std::string running_, killed_;
};

// Writes straight into the TestCluster's RM (the test thread is its loop).
class DirectWriter : public RmWriter {
 public:
  explicit DirectWriter(TestCluster* c) : c_(c) {}
  absl::StatusOr<v1::NewApplicationResponse> NewApplication(const rm::Caller&) override {
    return c_->rm_->NewApplication();
  }
  absl::Status SubmitApplication(const v1::ApplicationSubmissionContext& ctx,
                                 const rm::Caller& caller) override {
    absl::Status s = c_->rm_->SubmitApplication(ctx, caller);
    c_->Publish();
    return s;
  }
  absl::StatusOr<v1::ApplicationReport> KillApplication(const std::string& id,
                                                        const std::string& diag,
                                                        const rm::Caller& caller) override {
    if (absl::Status s = c_->rm_->KillApplication(id, diag, caller); !s.ok()) return s;
    c_->Publish();
    return c_->rm_->GetApplication(id);
  }

 private:
  TestCluster* c_;
};

inline HttpRequest Req(const std::string& method, const std::string& path,
                       std::multimap<std::string, std::string> params = {}, std::string body = "") {
  HttpRequest r;
  r.method = method;
  r.path = path;
  r.params = std::move(params);
  r.body = std::move(body);
  r.headers["host"] = "rm.example:8088";
  return r;
}

}  // namespace weft::web

#endif  // WEFT_WEB_TEST_CLUSTER_H_
