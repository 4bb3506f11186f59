// Copyright Weft authors. RmServer's part in high availability (docs/cluster.md): joining the
// election, the transitions between active and standby, and a standby's answer to calls.
#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "rm/rm_server.h"
#include "store/zk_store.h"

namespace weft::rm {

absl::Status RmServer::JoinElection(const std::string& http_address) {
  if (!options_.ha.has_value())
    return absl::FailedPreconditionError("this ResourceManager runs without HA");
  if (elector_) return absl::FailedPreconditionError("this ResourceManager has already joined");
  LeaderInfo self{options_.ha->rm_id, address(), http_address};
  LeaderElector::Callbacks callbacks;
  callbacks.become_active = [this] { return BecomeActive(); };
  callbacks.become_standby = [this](const std::string& reason) { BecomeStandby(reason); };
  auto elector = LeaderElector::Start(*options_.ha, std::move(self), std::move(callbacks));
  if (!elector.ok()) return elector.status();
  elector_ = *std::move(elector);
  return absl::OkStatus();
}

absl::Status RmServer::BecomeActive() {
  const HaOptions& ha = *options_.ha;
  store::ZkStoreOptions zo;
  zo.connect = ha.zk_connect;
  zo.auth = ha.zk_auth;
  zo.root = absl::StrCat(ha.zk_root, "/rm-state");
  zo.identity = absl::StrCat(ha.rm_id, "@", address());
  zo.fence = true;  // from here on, an earlier active can no longer write
  zo.session_timeout_ms = std::max(ha.session_timeout_ms, 4000);
  absl::Status result;
  WaitOnLoop([&] {
    auto opened = store::OpenZooKeeperStore(zo);
    if (!opened.ok()) {
      result = opened.status();
    } else {
      store_ = *std::move(opened);
      result = CreateRm();
      if (!result.ok()) {
        log::WarnIfError(store_->Close(), "state_store_close_failed",
                         {{"during", "becoming active"}});
        store_.reset();
      }
    }
  });
  if (result.ok()) {
    log::Info("ha_active", {{"rm_id", ha.rm_id}, {"address", address()},
                            {"store", absl::StrCat(ha.zk_connect, zo.root)}});
  }
  return result;
}

void RmServer::BecomeStandby(const std::string& reason) {
  WaitOnLoop([&] {
    SetViews({});
    rm_.reset();
    if (store_)
      log::WarnIfError(store_->Close(), "state_store_close_failed",
                       {{"during", "becoming standby"}});
    store_.reset();
    absl::MutexLock l(&ha_mu_);
    active_ = false;
  });
  log::Info("ha_standby", {{"rm_id", options_.ha->rm_id}, {"reason", reason}});
}

HaStatus RmServer::ha_status() const {
  HaStatus out;
  out.enabled = options_.ha.has_value();
  {
    absl::MutexLock l(&ha_mu_);
    out.active = active_;
  }
  if (!out.enabled) return out;
  out.rm_id = options_.ha->rm_id;
  if (elector_) out.leader = elector_->leader();
  return out;
}

grpc::Status RmServer::StandbyStatus(grpc::CallbackServerContext* ctx) const {
  if (!options_.ha.has_value())
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the ResourceManager is stopping");
  HaStatus ha = ha_status();
  std::string message = absl::StrCat("ResourceManager ", ha.rm_id, " is standby");
  if (ha.leader.has_value() && ha.leader->rm_id != ha.rm_id) {
    absl::StrAppend(&message, "; the active is ", ha.leader->rm_id, " at ", ha.leader->address);
    ctx->AddTrailingMetadata("weft-active-rm", ha.leader->address);
  } else {
    absl::StrAppend(&message, "; no active ResourceManager is known yet (an election is under way)");
  }
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, message);
}

}  // namespace weft::rm
