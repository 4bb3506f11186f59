// Copyright Weft authors.
#include "federation/router/sub_cluster_client.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::federation {

SubClusterClients::SubClusterClients(std::shared_ptr<grpc::ChannelCredentials> credentials,
                                     int64_t timeout_ms)
    : credentials_(credentials ? std::move(credentials) : grpc::InsecureChannelCredentials()),
      timeout_ms_(timeout_ms) {}

std::shared_ptr<SubClusterClients::Target> SubClusterClients::TargetOf(const v1::SubClusterInfo& sc,
                                                                       absl::Status* error) {
  absl::MutexLock l(&mu_);
  std::shared_ptr<Target>& t = targets_[sc.sub_cluster_id()];
  if (t == nullptr || t->address_list != sc.rm_address()) {
    auto failover = RmFailover::Create(sc.rm_address());
    if (!failover.ok()) {
      *error = absl::FailedPreconditionError(
          absl::StrCat("sub-cluster '", sc.sub_cluster_id(), "' registered a bad RM address '",
                       sc.rm_address(), "': ", failover.status().message()));
      t.reset();
      return nullptr;
    }
    t = std::make_shared<Target>();
    t->address_list = sc.rm_address();
    absl::MutexLock tl(&t->mu);
    t->failover.emplace(*std::move(failover));
  }
  return t;
}

v1::ClientService::Stub& SubClusterClients::StubFor(const std::string& address) {
  absl::MutexLock l(&mu_);
  std::unique_ptr<v1::ClientService::Stub>& stub = stubs_[address];
  if (stub == nullptr) {
    grpc::ChannelArguments args = FastReconnectChannelArgs();
    stub = v1::ClientService::NewStub(grpc::CreateCustomChannel(address, credentials_, args));
  }
  return *stub;  // never erased: the reference outlives the lock
}

absl::Status SubClusterClients::Call(const v1::SubClusterInfo& sc, const std::string& user,
                                     const SubClusterRpc& rpc) {
  absl::Status error;
  std::shared_ptr<Target> target = TargetOf(sc, &error);
  if (target == nullptr) return error;
  size_t tries_left;
  std::string address;
  {
    absl::MutexLock l(&target->mu);
    tries_left = target->failover->addresses().size() + 1;  // +1: a standby's hint
    address = target->failover->current();
  }
  while (true) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
    ctx.AddMetadata(kActAsUserMetadata, user);
    grpc::Status st = rpc(StubFor(address), &ctx);
    if (st.ok()) return absl::OkStatus();
    const absl::Status error_here(static_cast<absl::StatusCode>(st.error_code()),
                                  absl::StrCat("sub-cluster '", sc.sub_cluster_id(), "' (RM ",
                                               address, "): ", st.error_message()));
    if (!IsRmFailoverCode(st) || --tries_left == 0) return error_here;
    absl::MutexLock l(&target->mu);
    if (target->failover->current() == address &&
        target->failover->OnFailure(st, ctx) == RmFailoverAction::kNone)
      return error_here;                    // one RM only: nobody else to ask
    address = target->failover->current();  // moved by us, or by another caller meanwhile
  }
}

}  // namespace weft::federation
