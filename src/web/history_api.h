// Copyright Weft authors. YARN's Application History REST API (the Timeline Server's "Generic
// Data REST APIs", /ws/v1/applicationhistory/...) over a history::HistoryStore, plus Weft's
// accounting report. Served by `weft history` and, beside the RM's own API, by the RM's web
// server. Field names and nesting are YARN's (docs/history.md cites the source); Weft's
// additions are extra fields named for what they hold.
#ifndef WEFT_WEB_HISTORY_API_H_
#define WEFT_WEB_HISTORY_API_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "history/history_store.h"
#include "rm/client_auth.h"
#include "scheduler/config.h"
#include "web/http.h"
#include "web/web_sessions.h"
#include "web/yarn_json.h"

namespace weft::web {

struct HistoryApiOptions {
  // Who a reader is, as the RM's REST readers authenticate (web/rest_api.h): a MUNGE credential
  // in header X-Weft-Munge-Credential, or the admin secret in X-Weft-Secret or "Authorization:
  // Bearer <secret>", acting as X-Weft-User (or user.name) where allowed. A request without
  // any of them is anonymous (user ""). Errors become 401 (Unauthenticated) or 403. Null: every
  // reader that presents a credential is refused (401).
  std::function<absl::StatusOr<rm::Caller>(const rm::Presented&)> authenticate;
  // Browser sessions (web/web_sessions.h, the RM web server's), not owned; null = none. A
  // reader without a MUNGE credential or secret is its X-Weft-Session header's session's caller.
  const WebSessions* sessions = nullptr;
  // Who may see an app's details (diagnostics, AM host, tracking URL, usage, attempts,
  // containers), as docs/security.md "Viewing an app": false: its owner, its queue's
  // administrators (queue_config), cluster admins and the users and groups of its view ACL;
  // anyone else, anonymous readers included, sees it redacted and is refused its attempts
  // and containers (403). true: everyone sees everything (YARN's yarn.acl.enable=false).
  bool anonymous_view = false;
  // The queues whose administrators (acl_administer_queue, inherited) may view their apps.
  // Called once per request; null: no queue administrators.
  std::function<scheduler::SchedulerConfig()> queue_config;
  // When this server started, ms since the epoch (the about resource's "startedOn").
  int64_t started_ms = 0;
};

// Serves GET
//   /ws/v1/applicationhistory[/about]                                 the service's description
//   /ws/v1/applicationhistory/apps                                    finished apps; query
//       states, finalStatus, user, queue, limit, startedTimeBegin/End, finishedTimeBegin/End
//       (ms since the epoch, inclusive), applicationTypes
//   /ws/v1/applicationhistory/apps/{appid}
//   /ws/v1/applicationhistory/apps/{appid}/appattempts[/{attemptid}[/containers[/{containerid}]]]
//   /ws/v1/applicationhistory/containers/{containerid}
//   /ws/v1/applicationhistory/accounting?by=user|queue&since=MS&until=MS  (Weft's)
// Errors are YARN's RemoteException JSON with 400 (bad parameter or id), 401 (bad credential),
// 403 (may not view, anonymous accounting), 404 (unknown path, app, attempt or container),
// 405 (not GET) or 500/503 (the store's error). Thread-safe if the store is (HistoryStore's
// contract): the server calls Handle from several threads.
class HistoryApi {
 public:
  // The path prefix this API answers under.
  static constexpr char kPrefix[] = "/ws/v1/applicationhistory";

  // `store` is not owned and must outlive the HistoryApi.
  HistoryApi(HistoryApiOptions options, history::HistoryStore* store);

  // Whether `request`'s path is under kPrefix (a web server that serves other things routes
  // those requests here).
  static bool Handles(const HttpRequest& request);
  HttpResponse Handle(const HttpRequest& request) const;

 private:
  HttpResponse Get(const HttpRequest& request, const std::vector<std::string>& parts,
                   const rm::Caller& reader) const;
  HttpResponse Apps(const HttpRequest& request, const rm::Caller& reader) const;
  HttpResponse Accounting(const HttpRequest& request, const rm::Caller& reader) const;
  // The reader of `request`: anonymous (user "") when it presents no credential; else as
  // options_.authenticate says, or the 400/401/403 response refusing it in `refusal`.
  absl::StatusOr<rm::Caller> Reader(const HttpRequest& request, HttpResponse* refusal) const;
  bool MayView(const v1::ApplicationHistoryRecord& app, const rm::Caller& reader,
               const scheduler::SchedulerConfig& config) const;

  HistoryApiOptions options_;
  history::HistoryStore* store_;
};

// The JSON objects, YARN's AppInfo, AppAttemptInfo and ContainerInfo with Weft's extras
// (docs/history.md lists them). `redacted`: as a reader who may not view the app sees it
// (diagnosticsInfo, host, tracking URLs "N/A", rpcPort -1, measured usage -1).
Json HistoryAppJson(const v1::ApplicationHistoryRecord& app, bool redacted);
Json HistoryAttemptJson(const v1::AttemptHistoryRecord& attempt);
Json HistoryContainerJson(const v1::ContainerHistoryRecord& container);

}  // namespace weft::web

#endif  // WEFT_WEB_HISTORY_API_H_
