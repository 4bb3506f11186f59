// Copyright Weft authors.
#include "store/state_backend.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::store {
namespace {

// Implements the StateStore contract (store/state_store.h) once: what each call checks before
// the back-end is asked, which precondition makes it NotFound, and how Load() sorts.
class BackedStateStore final : public StateStore {
 public:
  explicit BackedStateStore(std::unique_ptr<StateBackend> backend) : backend_(std::move(backend)) {}
  ~BackedStateStore() override { Close().IgnoreError(); }
  BackedStateStore(const BackedStateStore&) = delete;
  BackedStateStore& operator=(const BackedStateStore&) = delete;

  absl::StatusOr<RmState> Load() override {
    if (closed_) return Closed();
    absl::StatusOr<RmState> state = backend_->ReadAll();
    if (!state.ok()) return state.status();
    if (absl::Status s = ValidateStoredState(backend_->Description(), *state); !s.ok()) return s;
    std::sort(
        state->apps.begin(), state->apps.end(),
        [](const ApplicationRecord& a, const ApplicationRecord& b) { return a.app_id < b.app_id; });
    std::sort(state->attempts.begin(), state->attempts.end(),
              [](const AttemptRecord& a, const AttemptRecord& b) {
                return std::tie(a.app_id, a.attempt_id) < std::tie(b.app_id, b.attempt_id);
              });
    std::sort(state->keys.begin(), state->keys.end(),
              [](const MasterKeyRecord& a, const MasterKeyRecord& b) {
                return std::tie(a.purpose, a.key_id) < std::tie(b.purpose, b.key_id);
              });
    std::sort(
        state->node_admin.begin(), state->node_admin.end(),
        [](const NodeAdminRecord& a, const NodeAdminRecord& b) { return a.node < b.node; });
    return state;
  }

  absl::StatusOr<int64_t> BumpEpoch() override {
    if (closed_) return Closed();
    return backend_->BumpEpoch();
  }

  absl::Status PutApplication(const ApplicationRecord& app) override {
    if (closed_) return Closed();
    if (absl::Status s = ValidateApplicationRecord(app); !s.ok()) return s;
    return Commit(absl::StrCat("storing application '", app.app_id, "'"), {PutApplicationOp{app}},
                  absl::OkStatus());
  }

  absl::Status PutAttempt(const AttemptRecord& attempt) override {
    if (closed_) return Closed();
    if (absl::Status s = ValidateAttemptRecord(attempt); !s.ok()) return s;
    const std::string what =
        absl::StrCat("attempt ", attempt.attempt_id, " of application '", attempt.app_id, "'");
    return Commit(absl::StrCat("storing ", what), {PutAttemptOp{attempt}},
                  absl::NotFoundError(absl::StrCat(what, ": application is not stored")));
  }

  absl::Status PutApplicationAndAttempt(const ApplicationRecord& app,
                                        const AttemptRecord& attempt) override {
    if (closed_) return Closed();
    if (absl::Status s = ValidateApplicationAndAttempt(app, attempt); !s.ok()) return s;
    return Commit(
        absl::StrCat("storing application '", app.app_id, "' and its attempt ", attempt.attempt_id),
        {PutApplicationOp{app}, PutAttemptOp{attempt, /*require_application=*/false}},
        absl::OkStatus());
  }

  absl::Status RemoveApplication(absl::string_view app_id) override {
    if (closed_) return Closed();
    return Commit(absl::StrCat("removing application '", app_id, "'"),
                  {RemoveApplicationOp{std::string(app_id)}},
                  absl::NotFoundError(absl::StrCat("application '", app_id, "' is not stored")));
  }

  absl::Status PutMasterKey(const MasterKeyRecord& key) override {
    if (closed_) return Closed();
    if (absl::Status s = ValidateMasterKeyRecord(key); !s.ok()) return s;
    return Commit(absl::StrCat("storing master key ", key.purpose, "/", key.key_id),
                  {PutMasterKeyOp{key}}, absl::OkStatus());
  }

  absl::Status RemoveMasterKey(absl::string_view purpose, int32_t key_id) override {
    if (closed_) return Closed();
    if (absl::Status s = ValidateMasterKeyPurpose(purpose); !s.ok()) return s;
    return Commit(
        absl::StrCat("removing master key ", purpose, "/", key_id),
        {RemoveMasterKeyOp{std::string(purpose), key_id}},
        absl::NotFoundError(absl::StrCat("master key ", purpose, "/", key_id, " is not stored")));
  }

  absl::Status UpdateNodeAdmin(const std::vector<NodeAdminRecord>& put,
                               const std::vector<std::string>& remove) override {
    if (closed_) return Closed();
    std::vector<StateOp> ops;
    for (const NodeAdminRecord& node : put) {
      if (absl::Status s = ValidateNodeAdminRecord(node); !s.ok()) return s;
      ops.push_back(PutNodeAdminOp{node});
    }
    for (const std::string& node : remove) {
      NodeAdminRecord probe;
      probe.node = node;
      if (absl::Status s = ValidateNodeAdminRecord(probe); !s.ok()) return s;
      ops.push_back(RemoveNodeAdminOp{node});
    }
    if (ops.empty()) return absl::OkStatus();
    const std::string& first = put.empty() ? remove.front() : put.front().node;
    return Commit(absl::StrCat("storing the admin records of ", ops.size(), " node(s) ('", first,
                               "'", ops.size() > 1 ? ", ..." : "", ")"),
                  ops, absl::OkStatus());
  }

  absl::Status Close() override {
    if (closed_) return absl::OkStatus();
    closed_ = true;
    return backend_->Close();
  }

 private:
  absl::Status Closed() const {
    return absl::FailedPreconditionError(absl::StrCat(backend_->Description(), " is closed"));
  }

  // Commits `ops`; `missing` is the call's status when a precondition of an op does not hold.
  absl::Status Commit(absl::string_view what, const std::vector<StateOp>& ops,
                      absl::Status missing) {
    absl::StatusOr<bool> committed = backend_->Commit(what, ops);
    if (!committed.ok()) return committed.status();
    return *committed ? absl::OkStatus() : missing;
  }

  std::unique_ptr<StateBackend> backend_;
  bool closed_ = false;
};

absl::Status Invalid(absl::string_view description, const absl::Status& status) {
  return absl::DataLossError(
      absl::StrCat(description, ": stored record is invalid: ", status.message()));
}

}  // namespace

absl::Status ValidateStoredState(absl::string_view description, const RmState& state) {
  for (const ApplicationRecord& app : state.apps) {
    if (absl::Status s = ValidateApplicationRecord(app); !s.ok()) return Invalid(description, s);
  }
  for (const AttemptRecord& attempt : state.attempts) {
    if (absl::Status s = ValidateAttemptRecord(attempt); !s.ok()) return Invalid(description, s);
  }
  for (const MasterKeyRecord& key : state.keys) {
    if (absl::Status s = ValidateMasterKeyRecord(key); !s.ok()) return Invalid(description, s);
  }
  for (const NodeAdminRecord& node : state.node_admin) {
    if (absl::Status s = ValidateNodeAdminRecord(node); !s.ok()) return Invalid(description, s);
  }
  if (state.epoch < 0) {
    return absl::DataLossError(
        absl::StrCat(description, ": stored epoch ", state.epoch, " is negative"));
  }
  return absl::OkStatus();
}

std::unique_ptr<StateStore> NewBackedStateStore(std::unique_ptr<StateBackend> backend) {
  return std::make_unique<BackedStateStore>(std::move(backend));
}

}  // namespace weft::store
