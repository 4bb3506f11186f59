// Copyright Weft authors. FOR TESTS: a FederationStateStore that forwards every call to another,
// for tests to override the calls they watch or break (a store that is down, one that checks
// what is already stored when a write arrives).
#ifndef WEFT_FEDERATION_ROUTER_TESTING_FORWARDING_STORE_H_
#define WEFT_FEDERATION_ROUTER_TESTING_FORWARDING_STORE_H_

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "federation/store/federation_store.h"

namespace weft::federation {

class ForwardingStore : public FederationStateStore {
 public:
  // `inner` is not owned and must outlive this store.
  explicit ForwardingStore(FederationStateStore* inner) : inner_(inner) {}

  std::string Describe() const override { return inner_->Describe(); }
  absl::Status RegisterSubCluster(const v1::SubClusterInfo& i) override {
    return inner_->RegisterSubCluster(i);
  }
  absl::Status DeregisterSubCluster(absl::string_view id, v1::SubClusterState s) override {
    return inner_->DeregisterSubCluster(id, s);
  }
  absl::Status SubClusterHeartbeat(const v1::SubClusterInfo& l) override {
    return inner_->SubClusterHeartbeat(l);
  }
  absl::StatusOr<v1::SubClusterInfo> GetSubCluster(absl::string_view id) override {
    return inner_->GetSubCluster(id);
  }
  absl::StatusOr<std::vector<v1::SubClusterInfo>> GetSubClusters(bool a) override {
    return inner_->GetSubClusters(a);
  }
  absl::StatusOr<std::string> AddApplicationHomeSubCluster(
      const v1::ApplicationHomeSubCluster& h) override {
    return inner_->AddApplicationHomeSubCluster(h);
  }
  absl::Status UpdateApplicationHomeSubCluster(const v1::ApplicationHomeSubCluster& h) override {
    return inner_->UpdateApplicationHomeSubCluster(h);
  }
  absl::StatusOr<v1::ApplicationHomeSubCluster> GetApplicationHomeSubCluster(
      absl::string_view id) override {
    return inner_->GetApplicationHomeSubCluster(id);
  }
  absl::StatusOr<std::vector<v1::ApplicationHomeSubCluster>> GetApplicationsHomeSubCluster(
      absl::string_view h) override {
    return inner_->GetApplicationsHomeSubCluster(h);
  }
  absl::Status DeleteApplicationHomeSubCluster(absl::string_view id) override {
    return inner_->DeleteApplicationHomeSubCluster(id);
  }
  absl::StatusOr<std::string> AddReservationHomeSubCluster(
      const v1::ReservationHomeSubCluster& h) override {
    return inner_->AddReservationHomeSubCluster(h);
  }
  absl::Status UpdateReservationHomeSubCluster(const v1::ReservationHomeSubCluster& h) override {
    return inner_->UpdateReservationHomeSubCluster(h);
  }
  absl::StatusOr<v1::ReservationHomeSubCluster> GetReservationHomeSubCluster(
      absl::string_view id) override {
    return inner_->GetReservationHomeSubCluster(id);
  }
  absl::StatusOr<std::vector<v1::ReservationHomeSubCluster>> GetReservationsHomeSubCluster()
      override {
    return inner_->GetReservationsHomeSubCluster();
  }
  absl::Status DeleteReservationHomeSubCluster(absl::string_view id) override {
    return inner_->DeleteReservationHomeSubCluster(id);
  }
  absl::Status SetPolicyConfiguration(const v1::SubClusterPolicyConfiguration& c) override {
    return inner_->SetPolicyConfiguration(c);
  }
  absl::StatusOr<v1::SubClusterPolicyConfiguration> GetPolicyConfiguration(
      absl::string_view q) override {
    return inner_->GetPolicyConfiguration(q);
  }
  absl::StatusOr<std::vector<v1::SubClusterPolicyConfiguration>> GetPoliciesConfigurations()
      override {
    return inner_->GetPoliciesConfigurations();
  }
  absl::Status DeletePolicyConfiguration(absl::string_view q) override {
    return inner_->DeletePolicyConfiguration(q);
  }
  absl::Status StoreMasterKey(const v1::RouterMasterKey& k) override {
    return inner_->StoreMasterKey(k);
  }
  absl::Status RemoveMasterKey(int32_t id) override { return inner_->RemoveMasterKey(id); }
  absl::StatusOr<v1::RouterMasterKey> GetMasterKey(int32_t id) override {
    return inner_->GetMasterKey(id);
  }
  absl::Status StoreToken(const v1::RouterStoredToken& t) override { return inner_->StoreToken(t); }
  absl::Status UpdateToken(const v1::RouterStoredToken& t) override {
    return inner_->UpdateToken(t);
  }
  absl::Status RemoveToken(int64_t n) override { return inner_->RemoveToken(n); }
  absl::StatusOr<v1::RouterStoredToken> GetToken(int64_t n) override { return inner_->GetToken(n); }
  absl::StatusOr<int64_t> ClaimClusterTimestamp(absl::string_view id, int64_t wanted) override {
    return inner_->ClaimClusterTimestamp(id, wanted);
  }
  absl::StatusOr<std::vector<v1::ClusterTimestampClaim>> GetClusterTimestampClaims() override {
    return inner_->GetClusterTimestampClaims();
  }
  absl::StatusOr<int64_t> ClaimContainerEpoch(absl::string_view id, int64_t at_least) override {
    return inner_->ClaimContainerEpoch(id, at_least);
  }
  absl::Status AddIssuedApplicationId(const v1::IssuedApplicationId& i) override {
    return inner_->AddIssuedApplicationId(i);
  }
  absl::StatusOr<v1::IssuedApplicationId> GetIssuedApplicationId(absl::string_view id) override {
    return inner_->GetIssuedApplicationId(id);
  }
  absl::Status DeleteIssuedApplicationId(absl::string_view id) override {
    return inner_->DeleteIssuedApplicationId(id);
  }
  absl::StatusOr<int> DeleteIssuedApplicationIdsBefore(int64_t before_ms) override {
    return inner_->DeleteIssuedApplicationIdsBefore(before_ms);
  }

 protected:
  FederationStateStore* inner_;
};

// Counts every write of membership, homes and policies that reaches the store (tokens and
// master keys are the router's own bookkeeping) and calls `on_add`, if set, with each new app
// -> home mapping before storing it. For tests that show a call writes nothing, or watch what
// the routers record.
class CountingStore : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  absl::Status RegisterSubCluster(const v1::SubClusterInfo& i) override {
    ++writes;
    return inner_->RegisterSubCluster(i);
  }
  absl::Status DeregisterSubCluster(absl::string_view id, v1::SubClusterState s) override {
    ++writes;
    return inner_->DeregisterSubCluster(id, s);
  }
  absl::Status SubClusterHeartbeat(const v1::SubClusterInfo& l) override {
    ++writes;
    return inner_->SubClusterHeartbeat(l);
  }
  absl::StatusOr<std::string> AddApplicationHomeSubCluster(
      const v1::ApplicationHomeSubCluster& h) override {
    ++writes;
    if (on_add) on_add(h);
    return inner_->AddApplicationHomeSubCluster(h);
  }
  absl::Status UpdateApplicationHomeSubCluster(const v1::ApplicationHomeSubCluster& h) override {
    ++writes;
    return inner_->UpdateApplicationHomeSubCluster(h);
  }
  absl::Status DeleteApplicationHomeSubCluster(absl::string_view id) override {
    ++writes;
    return inner_->DeleteApplicationHomeSubCluster(id);
  }
  absl::StatusOr<std::string> AddReservationHomeSubCluster(
      const v1::ReservationHomeSubCluster& h) override {
    ++writes;
    return inner_->AddReservationHomeSubCluster(h);
  }
  absl::Status UpdateReservationHomeSubCluster(const v1::ReservationHomeSubCluster& h) override {
    ++writes;
    return inner_->UpdateReservationHomeSubCluster(h);
  }
  absl::Status DeleteReservationHomeSubCluster(absl::string_view id) override {
    ++writes;
    return inner_->DeleteReservationHomeSubCluster(id);
  }
  absl::Status SetPolicyConfiguration(const v1::SubClusterPolicyConfiguration& c) override {
    ++writes;
    return inner_->SetPolicyConfiguration(c);
  }
  absl::Status DeletePolicyConfiguration(absl::string_view q) override {
    ++writes;
    return inner_->DeletePolicyConfiguration(q);
  }
  std::function<void(const v1::ApplicationHomeSubCluster&)> on_add;
  std::atomic<int> writes{0};
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_ROUTER_TESTING_FORWARDING_STORE_H_
