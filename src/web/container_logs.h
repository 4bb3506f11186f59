// Copyright Weft authors. Container logs over HTTP, as the NM's web server serves a node's logs
// and the RM's serves aggregated ones (YARN's `yarn logs`): who may read them, the listing's
// JSON and a log file's bytes.
#ifndef WEFT_WEB_CONTAINER_LOGS_H_
#define WEFT_WEB_CONTAINER_LOGS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "web/http.h"

namespace weft::web {

// Who reads, as a web server authenticated them; user "" = anonymous.
struct LogReader {
  std::string user;
  std::vector<std::string> groups;
  bool admin = false;  // a cluster admin (the daemon's own user or a configured admin)
};

// Whose logs they are: the app's user and its view ACL (Hadoop's form, "" = nobody else).
struct LogOwner {
  std::string user;
  std::string view_acl;
};

// YARN's VIEW_APP rule for logs (rm/app_acls.h without queue administrators, whom an NM does
// not know): an admin, the owner, or a user or group the view ACL names. Anonymous readers
// never; a malformed view ACL names nobody.
bool MayReadLogs(const LogReader& reader, const LogOwner& owner);

// 401 (with WWW-Authenticate) for an Unauthenticated status, 400 for InvalidArgument, else 403,
// with the status's message.
HttpResponse LogRefusal(const absl::Status& status);
// 403 saying that `reader` may not read the logs of `app_id`.
HttpResponse LogForbidden(const LogReader& reader, absl::string_view app_id);

// A log file name the servers accept: [A-Za-z0-9._-]+, not starting with '.', at most 128.
bool ValidLogFileName(absl::string_view name);

// One container's log directory, for a listing.
struct ContainerLogDir {
  std::string container_id;
  std::string node_id;           // "" when unknown
  std::string dir;               // its files are listed (regular files only, no symlinks)
  bool running = false;          // may still grow
  std::string aggregation_type;  // "LOCAL" (on the node) or "AGGREGATED"
};

// YARN's listing shape (NM and RM REST): {"containerLogsInfo": [{"containerId", "nodeId",
// "logAggregationType", "running", "containerLogInfo": [{"fileName", "fileSize"}]}]}.
HttpResponse LogListing(const std::vector<ContainerLogDir>& dirs);

// The bytes of log file `path` as text/plain: from query parameter `start` (a byte offset,
// default 0; past the end: nothing), at most `max_bytes` (the file's end when longer and no
// start was given). Headers X-Weft-Log-Length (the file's size now) and
// X-Weft-Container-Running ("true"/"false"). 404 when it is missing, a symlink or not a
// regular file; 400 for a bad start.
HttpResponse ServeLogFile(const std::string& path, const HttpRequest& request, size_t max_bytes,
                          bool running);

// The RM's aggregated logs of an app (weft rm --log-aggregation-dir, nm/log_aggregator.h's
// layout <dir>/<user>/logs/<app_id>/<node_id>/<container_id>/FILE). Without query parameters:
// the listing; with containerid=C&filename=F[&start=N]: that file. `may_read`: the caller's
// view ACL verdict (the caller checks it; refused with 403 before any disk access). 404 when
// aggregation is off ("" dir) or nothing is aggregated for the app (yet).
HttpResponse ServeAggregatedLogs(const std::string& aggregation_dir, const std::string& app_id,
                                 const LogOwner& owner, const LogReader& reader,
                                 const HttpRequest& request, size_t max_bytes);

}  // namespace weft::web

#endif  // WEFT_WEB_CONTAINER_LOGS_H_
