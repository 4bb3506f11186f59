// Copyright Weft authors. The NodeManager's durable record of its containers (YARN's
// NMStateStoreService), on SQLite in its work root: what a restarted NM needs to re-attach to the
// containers an earlier one launched, or to report how they ended (docs/nm-recovery.md).
#ifndef WEFT_NM_NM_STATE_STORE_H_
#define WEFT_NM_NM_STATE_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "federation/amrmproxy/amrm_proxy_state.h"

struct sqlite3;

namespace weft::nm {

// One container as the NM records it, from just before its process exists until its
// application is cleaned up.
struct NmContainerRecord {
  enum class State {
    // The monitor exists (and is in the cgroups) but the start has not been confirmed: a
    // restarted NM kills what it finds of it and reports it lost.
    kLaunching = 0,
    kRunning = 1,    // the start succeeded: a restarted NM re-attaches to it
    kCompleted = 2,  // it ended and the NM knows how (exit_status, diagnostics)
  };

  std::string container_id;
  std::string app_id;
  std::string user;          // the app's user, from the container token
  // What the container is granted now, e.g. "memory-mb=1024,vcores=1": its start token's
  // resource, or that of its latest applied update (container resource updates).
  std::string resource;
  int64_t network_mbps = 0;  // its HTB class's rate, when bandwidth is shaped
  // The container token version `resource` comes from: 0 at start, an update's version after
  // it (updates with a version not above this one are refused).
  int32_t version = 0;
  // Its allocation tags, from its start token (ContainerTokenData::allocation_tags): reported
  // at registration (RegisterNodeManagerRequest.container_tags) so that a restarted RM
  // recovers them. Tags are [A-Za-z0-9_.-]+ (the RM checks asks); stored newline-separated.
  std::vector<std::string> allocation_tags;
  // The device shares it holds, from its start token (ContainerTokenData::devices, e.g.
  // "gpu:0=500"): restored into the NM's device ledger when a restarted NM re-attaches to it,
  // and reported again (ContainerStatus.devices). Stored newline-separated (schema 6).
  std::vector<std::string> devices;
  State state = State::kLaunching;
  int64_t monitor_pid = 0;
  uint64_t monitor_start_time = 0;       // ProcessInfo::start_time of the monitor
  int64_t pid = 0;                       // the container's main process (its process group)
  uint64_t start_time = 0;               // ProcessInfo::start_time of pid (0: unknown)
  std::vector<std::string> cgroup_dirs;  // absolute group directories; empty without cgroups
  std::string state_dir;                 // where its monitor writes pid and exit_code
  std::string work_dir;
  // Set when the NM asked it to stop: the v1::ContainerExitStatus it completes with, and why.
  std::optional<int> stop_exit_status;
  std::string stop_reason;
  // When kCompleted: the exit code or a v1::ContainerExitStatus, and the diagnostics.
  int exit_status = 0;
  std::string diagnostics;
  bool acknowledged = false;  // the RM acknowledged its COMPLETE status in a heartbeat reply

  // Accounting (application history, issue 31; schema 5, an older store's containers have
  // zeros: not measured). Wall clock, ms since the Unix epoch: when its process was launched
  // (0: never, e.g. a launch cut short), and once kCompleted when it ended (as the NM learnt
  // it; for a container that ended while no NM ran, its monitor's exit file's time).
  int64_t launched_ms = 0;
  int64_t finished_ms = 0;
  // Its measured memory (rss) integrated over time so far, MB x s (MB = 2^20 bytes; stored
  // to the nearest MB x ms), and the sample it goes on from: when (ms, 0 = none yet) and the
  // rss then, bytes. Updated at each sample; the NodeManager writes it to the store at most
  // every kUsagePersistIntervalMs while the container runs, and at its end.
  double memory_mb_seconds = 0;
  int64_t usage_sample_ms = 0;
  int64_t usage_sample_rss_bytes = 0;
  // Its lifetime totals once kCompleted: CPU time (ms), the most memory its cgroup was charged
  // (bytes), both read just before its cgroups were removed (0: not measured); bytes it sent
  // (its HTB class counters as last read, across NM restarts; 0 without bandwidth shaping).
  int64_t cpu_time_ms = 0;
  int64_t peak_memory_bytes = 0;
  int64_t network_tx_bytes = 0;
};

// Thread-safe (one lock around the connection): the NM's loop records containers, the
// AMRMProxy's workers record their attempts (as amrmproxy::AmrmProxyStateStore, YARN-6127).
// Each call is one transaction, committed when it returns: in WAL mode with
// synchronous=NORMAL, so a record survives a crash (kill -9) of the NM though not necessarily
// a power loss, which ends the containers anyway.
class NmStateStore final : public amrmproxy::AmrmProxyStateStore {
 public:
  // Opens or creates the database at `path` (mode 0600). Holds an exclusive lock on the file
  // `<path>.lock` (flock) for as long as the store lives, so a second NM on the same work root
  // fails here, and SQLite's exclusive locking mode on the database itself.
  // Errors, naming the path: FailedPrecondition when another NodeManager holds the lock ("in
  // use by another NodeManager") or when the schema is newer than this code's; DataLoss when
  // the file is not an SQLite database (a NodeManager that does not recover replaces it);
  // otherwise the errno's or SQLite's error (store/sqlite_util.h's CodeForSqlite).
  static absl::StatusOr<std::unique_ptr<NmStateStore>> Open(const std::string& path);
  ~NmStateStore() override;

  NmStateStore(const NmStateStore&) = delete;
  NmStateStore& operator=(const NmStateStore&) = delete;

  const std::string& path() const { return path_; }

  // Every container record, by id.
  absl::StatusOr<std::vector<NmContainerRecord>> LoadContainers();
  // Inserts or replaces the record of record.container_id.
  absl::Status PutContainer(const NmContainerRecord& record);
  // OK when there is no such record.
  absl::Status RemoveContainer(absl::string_view container_id);

  // Applications cleaned up on this node (they take no new containers), with the time, ms.
  absl::StatusOr<std::map<std::string, int64_t>> LoadFinishedApps();
  // Removes the records of the app's containers and remembers the app as finished at `now_ms`,
  // in one transaction.
  absl::Status FinishApplication(absl::string_view app_id, int64_t now_ms);
  // Forgets finished applications older than `before_ms`.
  absl::Status PruneFinishedApps(int64_t before_ms);

  // Small named values (e.g. the node id); nullopt when unset.
  absl::StatusOr<std::optional<std::string>> GetValue(absl::string_view key);
  absl::Status SetValue(absl::string_view key, absl::string_view value);

  // The AMRMProxy's attempts (amrm_proxy_state.h): tokens and registrations as their
  // protobuf encodings, one row per attempt and one per UAM. LoadAttempts fails with DataLoss
  // naming the attempt when a stored message does not parse.
  absl::Status PutAttempt(const amrmproxy::AttemptState& state) override;
  absl::Status RemoveAttempt(absl::string_view attempt_id) override;
  absl::StatusOr<std::vector<amrmproxy::AttemptState>> LoadAttempts() override;
  // The proxy's token key, hex-encoded under the value "amrmproxy_token_key".
  absl::StatusOr<std::optional<std::string>> GetTokenKey() override;
  absl::Status SetTokenKey(absl::string_view key) override;

  // The container master keys the RM last gave this NM, current and next (each a
  // v1::MasterKey's encoding; hex-encoded under the values "container_key_current" and
  // "container_key_next", written in one transaction), so that a restarted NM verifies
  // container tokens before it has registered again (YARN's NM recovery keeps them too). The
  // store file is readable by the NM's user alone (0600, and SQLite gives its WAL the same
  // mode). nullopt until both are written; DataLoss naming the key when a value is not
  // hexadecimal.
  absl::StatusOr<std::optional<std::pair<std::string, std::string>>> GetContainerKeys();
  absl::Status SetContainerKeys(absl::string_view current, absl::string_view next);

  // Removes every record, application, value and AMRMProxy attempt.
  absl::Status Clear();

 private:
  NmStateStore(sqlite3* db, std::string path, int lock_fd)
      : db_(db), path_(std::move(path)), lock_fd_(lock_fd) {}
  // Runs statements without results; the error names `what`.
  absl::Status Exec(absl::string_view sql, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `body` in one transaction (BEGIN ... COMMIT), rolled back when it fails.
  absl::Status InTransaction(absl::string_view what, absl::FunctionRef<absl::Status()> body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::optional<std::string>> GetValueLocked(absl::string_view key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status SetValueLocked(absl::string_view key, absl::string_view value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A value written hex-encoded, decoded; DataLoss naming `what` when it is not hexadecimal.
  absl::StatusOr<std::optional<std::string>> GetBytesLocked(absl::string_view key,
                                                            absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  sqlite3* const db_ ABSL_PT_GUARDED_BY(mu_);
  const std::string path_;
  const int lock_fd_;  // holds the flock on `<path>.lock`; closed after the database
};

}  // namespace weft::nm

#endif  // WEFT_NM_NM_STATE_STORE_H_
