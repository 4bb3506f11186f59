// Copyright Weft authors.
#include "store/memory_store.h"

#include <map>
#include <string>
#include <utility>

#include "store/state_backend.h"

namespace weft::store {
namespace {

// The primitives over three maps. A commit checks every precondition before it changes
// anything, so a failed one leaves the maps as they were.
class MemoryBackend final : public StateBackend {
 public:
  MemoryBackend() : StateBackend("state store (memory)") {}

  absl::StatusOr<RmState> ReadAll() override {
    RmState state;
    state.epoch = epoch_;
    for (const auto& [id, app] : apps_) state.apps.push_back(app);
    for (const auto& [key, attempt] : attempts_) state.attempts.push_back(attempt);
    for (const auto& [key, master_key] : keys_) state.keys.push_back(master_key);
    for (const auto& [node, record] : node_admin_) state.node_admin.push_back(record);
    return state;
  }

  absl::StatusOr<int64_t> BumpEpoch() override { return ++epoch_; }

  absl::StatusOr<bool> Commit(absl::string_view, const std::vector<StateOp>& ops) override {
    for (const StateOp& op : ops) {
      if (!Holds(op)) return false;
    }
    for (const StateOp& op : ops) Apply(op);
    return true;
  }

  absl::Status Close() override { return absl::OkStatus(); }

 private:
  using AttemptKey = std::pair<std::string, int32_t>;

  // Whether the precondition of `op` holds now.
  bool Holds(const StateOp& op) const {
    if (const auto* put = std::get_if<PutAttemptOp>(&op)) {
      return !put->require_application || apps_.contains(put->attempt.app_id);
    }
    if (const auto* remove = std::get_if<RemoveApplicationOp>(&op)) {
      return apps_.contains(remove->app_id);
    }
    if (const auto* remove = std::get_if<RemoveMasterKeyOp>(&op)) {
      return keys_.contains({remove->purpose, remove->key_id});
    }
    return true;
  }

  void Apply(const StateOp& op) {
    if (const auto* put = std::get_if<PutApplicationOp>(&op)) {
      apps_[put->app.app_id] = put->app;
    } else if (const auto* put = std::get_if<PutAttemptOp>(&op)) {
      attempts_[{put->attempt.app_id, put->attempt.attempt_id}] = put->attempt;
    } else if (const auto* remove = std::get_if<RemoveApplicationOp>(&op)) {
      apps_.erase(remove->app_id);
      attempts_.erase(attempts_.lower_bound({remove->app_id, INT32_MIN}),
                      attempts_.upper_bound({remove->app_id, INT32_MAX}));
    } else if (const auto* put = std::get_if<PutMasterKeyOp>(&op)) {
      keys_[{put->key.purpose, put->key.key_id}] = put->key;
    } else if (const auto* remove = std::get_if<RemoveMasterKeyOp>(&op)) {
      keys_.erase({remove->purpose, remove->key_id});
    } else if (const auto* put = std::get_if<PutNodeAdminOp>(&op)) {
      node_admin_[put->node.node] = put->node;
    } else if (const auto* remove = std::get_if<RemoveNodeAdminOp>(&op)) {
      node_admin_.erase(remove->node);
    }
  }

  int64_t epoch_ = 0;
  std::map<std::string, ApplicationRecord> apps_;
  std::map<AttemptKey, AttemptRecord> attempts_;
  std::map<AttemptKey, MasterKeyRecord> keys_;
  std::map<std::string, NodeAdminRecord> node_admin_;
};

}  // namespace

std::unique_ptr<StateStore> NewMemoryStore() {
  return NewBackedStateStore(std::make_unique<MemoryBackend>());
}

}  // namespace weft::store
