// Copyright Weft authors.
#include "store/memory_store.h"

#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::store {
namespace {

class MemoryStore final : public StateStore {
 public:
  absl::StatusOr<RmState> Load() override {
    if (closed_) return Closed();
    RmState state;
    state.epoch = epoch_;
    for (const auto& [id, app] : apps_) state.apps.push_back(app);
    for (const auto& [key, attempt] : attempts_) state.attempts.push_back(attempt);
    for (const auto& [key, master_key] : keys_) state.keys.push_back(master_key);
    return state;
  }

  absl::StatusOr<int64_t> BumpEpoch() override {
    if (closed_) return Closed();
    return ++epoch_;
  }

  absl::Status PutApplication(const ApplicationRecord& app) override {
    if (closed_) return Closed();
    if (absl::Status s = ValidateApplicationRecord(app); !s.ok()) return s;
    apps_[app.app_id] = app;
    return absl::OkStatus();
  }

  absl::Status PutAttempt(const AttemptRecord& attempt) override {
    if (closed_) return Closed();
    if (absl::Status s = ValidateAttemptRecord(attempt); !s.ok()) return s;
    if (!apps_.contains(attempt.app_id)) {
      return absl::NotFoundError(absl::StrCat("attempt ", attempt.attempt_id, " of application '",
                                              attempt.app_id, "': application is not stored"));
    }
    attempts_[{attempt.app_id, attempt.attempt_id}] = attempt;
    return absl::OkStatus();
  }

  absl::Status PutApplicationAndAttempt(const ApplicationRecord& app,
                                        const AttemptRecord& attempt) override {
    if (closed_) return Closed();
    if (absl::Status s = ValidateApplicationAndAttempt(app, attempt); !s.ok()) return s;
    apps_[app.app_id] = app;
    attempts_[{attempt.app_id, attempt.attempt_id}] = attempt;
    return absl::OkStatus();
  }

  absl::Status RemoveApplication(absl::string_view app_id) override {
    if (closed_) return Closed();
    auto it = apps_.find(std::string(app_id));
    if (it == apps_.end()) {
      return absl::NotFoundError(absl::StrCat("application '", app_id, "' is not stored"));
    }
    apps_.erase(it);
    auto first = attempts_.lower_bound({std::string(app_id), INT32_MIN});
    auto last = first;
    while (last != attempts_.end() && last->first.first == app_id) ++last;
    attempts_.erase(first, last);
    return absl::OkStatus();
  }

  absl::Status PutMasterKey(const MasterKeyRecord& key) override {
    if (closed_) return Closed();
    if (absl::Status s = ValidateMasterKeyRecord(key); !s.ok()) return s;
    keys_[{key.purpose, key.key_id}] = key;
    return absl::OkStatus();
  }

  absl::Status RemoveMasterKey(absl::string_view purpose, int32_t key_id) override {
    if (closed_) return Closed();
    if (absl::Status s = ValidateMasterKeyPurpose(purpose); !s.ok()) return s;
    if (keys_.erase({std::string(purpose), key_id}) == 0) {
      return absl::NotFoundError(
          absl::StrCat("master key ", purpose, "/", key_id, " is not stored"));
    }
    return absl::OkStatus();
  }

  absl::Status Close() override {
    closed_ = true;
    return absl::OkStatus();
  }

 private:
  static absl::Status Closed() {
    return absl::FailedPreconditionError("state store (memory) is closed");
  }

  bool closed_ = false;
  int64_t epoch_ = 0;
  std::map<std::string, ApplicationRecord> apps_;
  std::map<std::pair<std::string, int32_t>, AttemptRecord> attempts_;
  std::map<std::pair<std::string, int32_t>, MasterKeyRecord> keys_;
};

}  // namespace

std::unique_ptr<StateStore> NewMemoryStore() { return std::make_unique<MemoryStore>(); }

}  // namespace weft::store
