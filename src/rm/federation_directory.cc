// Copyright Weft authors. NewFederationDirectory (rm/federation_identity.h): home records from
// the federation store, and what a sub-cluster's RM says about an app, over its ClientService
// with this RM's certificate (the home RM answers an rm/ certificate's reads, PeerAccess::
// kFederationReader).
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/rm_failover.h"
#include "federation/store/federation_store.h"
#include "rm/federation_identity.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft::rm {
namespace {

absl::Status FromGrpc(const grpc::Status& s, absl::string_view what) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

class StoreFederationDirectory final : public FederationDirectory {
 public:
  StoreFederationDirectory(federation::FederationStateStore* store,
                           std::optional<security::TlsFiles> tls, int64_t deadline_ms)
      : store_(store),
        credentials_(tls.has_value() ? security::TlsChannelCredentials(*tls)
                                     : grpc::InsecureChannelCredentials()),
        deadline_ms_(deadline_ms) {}

  absl::StatusOr<v1::ApplicationHomeSubCluster> GetApplicationHome(
      const std::string& app_id) override {
    return store_->GetApplicationHomeSubCluster(app_id);
  }

  absl::StatusOr<HomeAppFacts> AskHome(const std::string& sub_cluster_id,
                                       const std::string& app_id) override {
    absl::StatusOr<v1::SubClusterInfo> info = store_->GetSubCluster(sub_cluster_id);
    if (!info.ok()) return info.status();
    absl::StatusOr<std::vector<std::string>> addresses = ParseRmAddresses(info->rm_address());
    if (!addresses.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("sub-cluster ", sub_cluster_id, ": ", addresses.status().message()));
    grpc::Status last = grpc::Status(grpc::StatusCode::UNAVAILABLE, "no RM address");
    for (const std::string& address : *addresses) {
      auto stub = v1::ClientService::NewStub(ChannelTo(address));
      v1::GetApplicationRequest req;
      req.set_application_id(app_id);
      v1::GetApplicationResponse app;
      grpc::ClientContext c1;
      c1.set_deadline(Deadline());
      last = stub->GetApplication(&c1, req, &app);
      if (IsRmFailoverCode(last)) continue;  // a standby or down: the next RM of the list
      if (!last.ok()) return FromGrpc(last, absl::StrCat("GetApplication at ", address));
      v1::GetApplicationAttemptsRequest areq;
      areq.set_application_id(app_id);
      v1::GetApplicationAttemptsResponse attempts;
      grpc::ClientContext c2;
      c2.set_deadline(Deadline());
      grpc::Status s = stub->GetApplicationAttempts(&c2, areq, &attempts);
      if (!s.ok()) return FromGrpc(s, absl::StrCat("GetApplicationAttempts at ", address));
      const v1::ApplicationReport& r = app.report();
      HomeAppFacts facts;
      facts.user = r.user();
      facts.unmanaged_am = r.unmanaged_am();
      facts.final = r.state() == v1::APP_FINISHED || r.state() == v1::APP_FAILED ||
                    r.state() == v1::APP_KILLED;
      for (const v1::ApplicationAttemptReport& a : attempts.attempts())
        if (a.attempt() == r.current_attempt()) facts.am_node_id = a.am_node_id();
      return facts;
    }
    return FromGrpc(last, absl::StrCat("sub-cluster ", sub_cluster_id, " at ", info->rm_address()));
  }

 private:
  std::chrono::system_clock::time_point Deadline() const {
    return std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms_);
  }
  std::shared_ptr<grpc::Channel> ChannelTo(const std::string& address) {
    absl::MutexLock lock(&mu_);
    std::shared_ptr<grpc::Channel>& channel = channels_[address];
    if (channel == nullptr)
      channel = grpc::CreateCustomChannel(address, credentials_, FastReconnectChannelArgs());
    return channel;
  }

  federation::FederationStateStore* const store_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const int64_t deadline_ms_;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<FederationDirectory> NewFederationDirectory(federation::FederationStateStore* store,
                                                            std::optional<security::TlsFiles> tls,
                                                            int64_t deadline_ms) {
  return std::make_unique<StoreFederationDirectory>(store, std::move(tls), deadline_ms);
}

}  // namespace weft::rm
