// Copyright Weft authors.
#include "rm/rm_keys.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace weft::rm {

RmKeys::RmKeys(RmContext* ctx, security::SecretSource* secrets)
    : ctx_(ctx),
      container_("container", ctx->options->key_roll_interval_ms,
                 3 * ctx->options->key_roll_interval_ms + ctx->options->container_token_lifetime_ms,
                 secrets),
      amrm_("amrm", ctx->options->key_roll_interval_ms,
            3 * ctx->options->key_roll_interval_ms + ctx->options->am_expiry_ms, secrets) {}

RmKeys::~RmKeys() { ctx_->loop->Cancel(roll_timer_); }

v1::MasterKey RmKeys::ToProto(const security::MasterKey& k) {
  v1::MasterKey p;
  p.set_key_id(k.id);
  p.set_secret(k.secret);
  p.set_expires_ms(k.expires_ms);
  return p;
}

v1::Token RmKeys::IssueAmRmToken(const std::string& attempt_id, int32_t* key_id) const {
  // AMRM tokens live as long as an app may run.
  constexpr int64_t kAmRmTokenLifetimeMs = 30LL * 24 * 3600 * 1000;
  security::AmRmTokenData data;
  data.app_attempt_id = attempt_id;
  data.expiry_ms = ctx_->NowMs() + kAmRmTokenLifetimeMs;
  security::Token t = security::IssueAmRmToken(data, amrm_.current());
  *key_id = amrm_.current().id;
  v1::Token p;
  p.set_identifier(t.identifier);
  p.set_password(t.password);
  p.set_kind("AMRMToken");
  return p;
}

v1::Token RmKeys::IssueContainerToken(const security::ContainerTokenData& data) const {
  security::Token t = security::IssueContainerToken(data, container_.current());
  v1::Token p;
  p.set_identifier(t.identifier);
  p.set_password(t.password);
  p.set_kind("ContainerToken");
  return p;
}

absl::Status RmKeys::Recover(const std::vector<store::MasterKeyRecord>& stored) {
  const int64_t now = ctx_->NowMs();
  for (security::MasterKeyManager* keys : {&container_, &amrm_}) {
    std::vector<security::MasterKey> restored;
    for (const store::MasterKeyRecord& k : stored) {
      if (k.purpose == keys->purpose())
        restored.push_back({k.key_id, k.secret, k.created_ms, k.expires_ms});
    }
    for (const auto& k : restored) stored_[keys->purpose()].insert(k.id);
    absl::Status s = restored.empty() ? keys->Start(now) : keys->Restore(restored, now);
    if (!s.ok()) return s;
    if (absl::Status p = PersistKeys(*keys); !p.ok()) return p;
  }
  amrm_verifier_->Publish(amrm_.Keys());
  ScheduleRoll();
  return absl::OkStatus();
}

absl::Status RmKeys::PersistKeys(const security::MasterKeyManager& keys) {
  std::set<int32_t>& stored = stored_[keys.purpose()];
  std::set<int32_t> live;
  for (const security::MasterKey& k : keys.Keys()) {
    live.insert(k.id);
    if (stored.contains(k.id)) continue;
    store::MasterKeyRecord rec{keys.purpose(), k.id, k.secret, k.created_ms, k.expires_ms};
    if (absl::Status s = ctx_->store->PutMasterKey(rec); !s.ok()) return s;
    stored.insert(k.id);
  }
  for (auto it = stored.begin(); it != stored.end();) {
    if (live.contains(*it)) {
      ++it;
      continue;
    }
    absl::Status s = ctx_->store->RemoveMasterKey(keys.purpose(), *it);
    // NotFound: someone (an earlier, interrupted run) already removed it.
    if (!s.ok() && !absl::IsNotFound(s)) return s;
    it = stored.erase(it);
  }
  return absl::OkStatus();
}

void RmKeys::RollKeys() {
  roll_timer_ = 0;
  const int64_t now = ctx_->NowMs();
  for (security::MasterKeyManager* keys : {&container_, &amrm_}) {
    auto rolled = keys->Roll(now);
    if (!rolled.ok()) {
      log::Error("master_key_roll_failed",
                 {{"purpose", keys->purpose()}, {"error", rolled.status()}});
      continue;
    }
    // Also after a roll that changed nothing: a write that failed last time is retried.
    if (absl::Status s = PersistKeys(*keys); !s.ok()) {
      log::Error("master_key_store_failed", {{"purpose", keys->purpose()}, {"error", s}});
    } else if (*rolled) {
      log::Info("master_key_rolled",
                {{"purpose", keys->purpose()}, {"current", keys->current().id}});
    }
  }
  // Every call: a roll adds a key, and any call may drop expired ones.
  amrm_verifier_->Publish(amrm_.Keys());
  ScheduleRoll();
}

void RmKeys::ScheduleRoll() {
  roll_timer_ = ctx_->loop->Schedule(
      std::max<int64_t>(1000, ctx_->options->key_roll_interval_ms / 10), [this] { RollKeys(); });
}

}  // namespace weft::rm
