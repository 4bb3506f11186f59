// Copyright Weft authors. Container log aggregation (YARN's LogAggregationService and
// AppLogAggregator): when an application finishes, the NM copies its containers' logs into an
// operator-configured directory shared with the RM, before the node deletes them; and the
// per-application record of who may read those logs while they are on the node.
#ifndef WEFT_NM_LOG_AGGREGATOR_H_
#define WEFT_NM_LOG_AGGREGATOR_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::nm {

// Who owns an application's logs and who else may read them, from its verified container
// tokens.
struct AppLogOwner {
  std::string user;      // the app's user
  std::string view_acl;  // Hadoop's ACL form ("" = nobody besides the owner and admins)
};

// Files in the NM's work root (all written by the NM, mode 0600 in a 0700 directory):
//   <work_root>/logs/<container_id>/{stdout,stderr}   the containers' logs (the executor's)
//   <work_root>/log-meta/<app_id>                     the app's AppLogOwner
//   <work_root>/log-meta/<app_id>.aggregating         aggregation begun and not finished
// Aggregated layout (YARN's remote-app-log-dir):
//   <dir>/<user>/logs/<app_id>/<node_id>/<container_id>/{stdout,stderr,...}
// Directories 0750 and files 0640, owned by the NM's user with the app user's primary group
// when the NM runs as root (the user reads its logs through the group, cannot change them, and
// nobody else can read them); a container's directory appears whole, by rename from a
// temporary name, or not at all.
//
// Thread-compatible; the NM's loop makes the calls. The static readers are thread-safe (the
// NM's web server calls them).
class LogAggregator {
 public:
  // `aggregation_dir` "" = aggregation off (RecordApp and the readers still work).
  // `node_id` names this node's directory under each app (host:port).
  LogAggregator(std::string work_root, std::string aggregation_dir, std::string node_id);

  bool enabled() const { return !aggregation_dir_.empty(); }

  // Records the app's owner and view ACL unless recorded already (the first verified container
  // token of the app on this node decides). Errors name the file.
  absl::Status RecordApp(absl::string_view app_id, const AppLogOwner& owner);

  // Copies the logs of every container of `app_id` under <work_root>/logs into the aggregated
  // layout (no-op when disabled). Idempotent: a container whose directory is already in place
  // is skipped, a temporary left by a crash is replaced. A marker file makes the work durable:
  // an NM that dies midway re-does it at ResumePending(). Errors name the container and file;
  // the marker then stays, so a later ResumePending() tries again.
  absl::Status AggregateApp(absl::string_view app_id);

  // Re-does every aggregation an earlier NM on this work root began and did not finish (at NM
  // start, before any cleanup can delete the logs). Returns the first error; tries them all.
  absl::Status ResumePending();

  // Drops the app's record (when its logs leave the node). Errors are ignored.
  void ForgetApp(absl::string_view app_id);

  // The app's recorded owner. NotFound when none is recorded.
  static absl::StatusOr<AppLogOwner> ReadAppOwner(absl::string_view work_root,
                                                  absl::string_view app_id);
  // Whether the container's process may still write its logs: the NM's monitor has not
  // written its exit status yet (NodeManagerOptions::recover describes the state directory).
  static bool ContainerRunning(absl::string_view work_root, absl::string_view container_id);
  // <dir>/<user>/logs/<app_id>.
  static std::string AppDir(absl::string_view aggregation_dir, absl::string_view user,
                            absl::string_view app_id);

 private:
  // Copies one container's logs into <node_dir>/<container_id> (through a temporary).
  absl::Status AggregateContainer(const std::string& container_id, const std::string& node_dir);

  const std::string work_root_;
  const std::string aggregation_dir_;
  const std::string node_id_;
};

}  // namespace weft::nm

#endif  // WEFT_NM_LOG_AGGREGATOR_H_
