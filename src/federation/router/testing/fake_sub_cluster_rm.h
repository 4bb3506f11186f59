// Copyright Weft authors. A fake sub-cluster RM for the router's tests and benchmark: a
// ClientService server on a free loopback port (plaintext) that hands out ids of its own
// cluster timestamp and keeps what is submitted.
#ifndef WEFT_FEDERATION_ROUTER_TESTING_FAKE_SUB_CLUSTER_RM_H_
#define WEFT_FEDERATION_ROUTER_TESTING_FAKE_SUB_CLUSTER_RM_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "federation/store/federation_store.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft::federation::testing_util {

// A sub-cluster RM: hands out ids with its own cluster timestamp, keeps what is submitted
// (with the home `store` held for it then, when a store is given), and fails submissions with
// `submit_error` when set.
class FakeSubClusterRm final : public v1::ClientService::Service {
 public:
  FakeSubClusterRm(std::string id, int64_t cluster_ts, FederationStateStore* store)
      : id_(std::move(id)), cluster_ts_(cluster_ts), store_(store) {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(this);
    server_ = b.BuildAndStart();
  }
  ~FakeSubClusterRm() override { Stop(); }
  void Stop() {
    if (server_) server_->Shutdown();
    server_.reset();
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  // As after a restart with the same cluster timestamp: its first ids are handed out again.
  void RestartIds() {
    absl::MutexLock l(&mu_);
    seq_ = 0;
  }

  grpc::Status NewApplication(grpc::ServerContext*, const v1::NewApplicationRequest*,
                              v1::NewApplicationResponse* resp) override {
    absl::MutexLock l(&mu_);
    resp->set_application_id(absl::StrCat("application_", cluster_ts_, "_000", ++seq_));
    return grpc::Status::OK;
  }
  grpc::Status SubmitApplication(grpc::ServerContext* ctx, const v1::SubmitApplicationRequest* req,
                                 v1::SubmitApplicationResponse*) override {
    const std::string& app = req->context().application_id();
    if (on_submit) on_submit(app);
    // What the store says about the app when its submission reaches the RM.
    absl::StatusOr<v1::ApplicationHomeSubCluster> home =
        store_ != nullptr ? store_->GetApplicationHomeSubCluster(app)
                          : absl::NotFoundError("no store given");
    absl::MutexLock l(&mu_);
    ++submit_calls;
    if (submit_error.has_value()) return *submit_error;
    if (check_home && (!home.ok() || home->home_sub_cluster_id() != id_))
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          absl::StrCat("application ", app, " is homed elsewhere now"));
    mapped_before_submit[app] = home.ok() ? home->home_sub_cluster_id() : "";
    v1::ApplicationReport r;
    r.set_application_id(app);
    r.set_queue(req->context().queue().empty() ? "default" : req->context().queue());
    r.set_user(UserOf(*ctx));
    r.set_state(v1::APP_ACCEPTED);
    apps_[app] = r;
    return grpc::Status::OK;
  }
  grpc::Status GetApplication(grpc::ServerContext*, const v1::GetApplicationRequest* req,
                              v1::GetApplicationResponse* resp) override {
    absl::MutexLock l(&mu_);
    auto it = apps_.find(req->application_id());
    if (it == apps_.end())
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("application '", req->application_id(), "' not found"));
    *resp->mutable_report() = it->second;
    return grpc::Status::OK;
  }
  grpc::Status KillApplication(grpc::ServerContext*, const v1::KillApplicationRequest* req,
                               v1::KillApplicationResponse* resp) override {
    absl::MutexLock l(&mu_);
    if (kill_error.has_value()) return *kill_error;
    auto it = apps_.find(req->application_id());
    if (it == apps_.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such app");
    it->second.set_state(v1::APP_KILLED);
    resp->set_kill_completed(true);
    return grpc::Status::OK;
  }
  grpc::Status ListApplications(grpc::ServerContext*, const v1::ListApplicationsRequest*,
                                v1::ListApplicationsResponse* resp) override {
    absl::MutexLock l(&mu_);
    for (const auto& [id, r] : apps_) *resp->add_applications() = r;
    return grpc::Status::OK;
  }
  grpc::Status GetClusterMetrics(grpc::ServerContext*, const v1::GetClusterMetricsRequest*,
                                 v1::GetClusterMetricsResponse* resp) override {
    resp->set_active_nodes(1);
    (*resp->mutable_total()->mutable_values())["memory-mb"] = 4096;
    return grpc::Status::OK;
  }
  grpc::Status ListNodes(grpc::ServerContext*, const v1::ListNodesRequest*,
                         v1::ListNodesResponse* resp) override {
    v1::NodeReport* n = resp->add_nodes();
    n->set_node_id(absl::StrCat(id_, "-host:1"));
    n->set_state(v1::NODE_RUNNING);
    return grpc::Status::OK;
  }
  grpc::Status GetQueue(grpc::ServerContext*, const v1::GetQueueRequest* req,
                        v1::GetQueueResponse* resp) override {
    if (req->queue() == "nosuch") return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown queue");
    resp->mutable_queue()->set_path("root");
    resp->mutable_queue()->set_num_applications(1);
    return grpc::Status::OK;
  }

  size_t num_apps() {
    absl::MutexLock l(&mu_);
    return apps_.size();
  }
  bool has_app(const std::string& id) {
    absl::MutexLock l(&mu_);
    return apps_.contains(id);
  }
  // The app's state here; APPLICATION_STATE_UNSPECIFIED when it has none.
  v1::ApplicationState state_of(const std::string& id) {
    absl::MutexLock l(&mu_);
    auto it = apps_.find(id);
    return it == apps_.end() ? v1::ApplicationState{} : it->second.state();
  }

  // Holds `report` as one of its apps (a copy of another sub-cluster's app, a UAM).
  void PutApp(const v1::ApplicationReport& report) {
    absl::MutexLock l(&mu_);
    apps_[report.application_id()] = report;
  }

  absl::Mutex mu_;
  std::optional<grpc::Status> submit_error ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> kill_error ABSL_GUARDED_BY(mu_);
  int submit_calls ABSL_GUARDED_BY(mu_) = 0;
  // As a sub-cluster RM (rm/federation_fencing.h): a submission is refused unless the store
  // homes the app here. Set before submissions.
  bool check_home = false;
  // Called with each submitted app id as its submission arrives. Set before submissions.
  std::function<void(const std::string&)> on_submit;
  std::map<std::string, std::string> mapped_before_submit ABSL_GUARDED_BY(mu_);

 private:
  static std::string UserOf(const grpc::ServerContext& ctx) {
    auto it = ctx.client_metadata().find("weft-user");
    return it == ctx.client_metadata().end() ? ""
                                             : std::string(it->second.data(), it->second.size());
  }

  std::string id_;
  int64_t cluster_ts_;
  FederationStateStore* store_;
  int seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, v1::ApplicationReport> apps_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace weft::federation::testing_util

#endif  // WEFT_FEDERATION_ROUTER_TESTING_FAKE_SUB_CLUSTER_RM_H_
