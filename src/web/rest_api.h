// Copyright Weft authors. YARN's ResourceManager REST API (/ws/v1/cluster/...) over a
// ClusterSnapshot, with authenticated writes (new-application, submit, kill).
#ifndef WEFT_WEB_REST_API_H_
#define WEFT_WEB_REST_API_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rm/client_auth.h"
#include "web/http.h"
#include "web/snapshot.h"
#include "web/web_sessions.h"
#include "web/yarn_json.h"
#include "web/yarn_json_decode.h"  // ParseSubmission, for callers of the REST API
#include "weft/v1/client.pb.h"

namespace weft::web {

// The RM operations behind REST writes. Implementations must be thread-safe (HTTP threads
// call them); the real one runs each on the RM loop and waits for it. Errors are the RM's
// (InvalidArgument, NotFound, ...).
class RmWriter {
 public:
  virtual ~RmWriter() = default;
  // For `caller` (a federation router records the id as issued to its user; an RM ignores it).
  virtual absl::StatusOr<v1::NewApplicationResponse> NewApplication(const rm::Caller& caller) = 0;
  // As `caller` (its user owns the app).
  virtual absl::Status SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                         const rm::Caller& caller) = 0;
  // Kills the app (a no-op for a finished one) if `caller` may (its owner, a queue or cluster
  // admin: PermissionDenied otherwise) and returns its report afterwards.
  virtual absl::StatusOr<v1::ApplicationReport> KillApplication(const std::string& app_id,
                                                                const std::string& diagnostics,
                                                                const rm::Caller& caller) = 0;
};

struct RestApiOptions {
  // Writes (POST new-application, POST apps, PUT apps/{id}/state) are refused with 403 unless
  // this is true AND client_secret is set: an open submission API is how unauthenticated YARN
  // clusters have been taken over to mine cryptocurrency since 2018 (docs/web.md).
  bool writes_enabled = false;
  // The 403 answer's text while writes are disabled.
  std::string writes_disabled_message =
      "REST writes are disabled on this ResourceManager (enable them with --http-enable-writes "
      "and a --secret-file; see docs/web.md)";
  // Who a write is from, as the RM's ClientService authenticates its callers
  // (rm/client_auth.h): a MUNGE credential in header "X-Weft-Munge-Credential", or the admin
  // secret in "X-Weft-Secret" or "Authorization: Bearer <secret>", acting as "X-Weft-User" (or
  // the user.name parameter) where allowed. Errors become 401 (Unauthenticated) or 403.
  std::function<absl::StatusOr<rm::Caller>(const rm::Presented&)> authenticate;
  // Without `authenticate` (handler tests): a write must present this secret (compared in
  // constant time) and acts as the user it names, "default" when none.
  std::string client_secret;
  // Reads: who may see an app's details (diagnostics, AM host and logs, attempts). false: each
  // app's owner, its queue's administrators, cluster admins and the users its view ACL names
  // (rm/app_acls.h), authenticated as writes are; an anonymous reader sees every app with its
  // details redacted ("N/A", as YARN) and no attempts (403). true: everyone sees everything
  // (YARN with yarn.acl.enable=false; `weft dev`'s default, for its one user's UI).
  bool anonymous_view = false;
  // host:port for absolute URLs (Location, trackingUrl) when a request has no Host header.
  std::string http_address;
  // Larger bodies get 413.
  size_t max_body_bytes = 1 << 20;
  // Browser sessions (web/web_sessions.h), not owned; null = no browser sign-in (the session
  // resource answers 404 to POST). A reader that presents no MUNGE credential or secret is the
  // caller of the live session its X-Weft-Session header names, else anonymous. A session
  // only reads: it never authenticates a write or a new sign-in link.
  WebSessions* sessions = nullptr;
  // Where NMs aggregate finished apps' container logs (weft rm --log-aggregation-dir;
  // nm/log_aggregator.h), served at GET apps/{id}/logs[?containerid=C&filename=F[&start=N]]
  // (web/container_logs.h) to authenticated readers who may view the app, even with
  // anonymous_view; "" = off (404).
  std::string log_aggregation_dir;
};

// Serves GET /ws/v1/cluster[/info], /metrics, /scheduler, /history (Weft's: since; anyone may
// read it, as /metrics), /apps (states, state, finalStatus,
// queue, user, limit, startedTimeBegin/End, finishedTimeBegin/End), /apps/{id},
// /apps/{id}/appattempts, /apps/{id}/state, /nodes (states, state), /nodes/{id}; and the
// writes above. Weft's browser sign-in (docs/web.md): GET /session (who this reader is);
// POST /session by a MUNGE- or secret-authenticated caller: a single-use link, base URL +
// "/cluster#sign-in=TICKET" (a fragment: browsers never send it to a server); POST /session
// with header X-Weft-Sign-In-Ticket: redeems it, answering the session id; DELETE /session:
// ends the X-Weft-Session header's session. Every error is a JSON body (YARN's RemoteException
// shape) with 400 (malformed request, body or id), 401 (missing or wrong secret), 403 (writes
// disabled), 404 (unknown path, app or node), 405 (method), 413 (body too large) or 415 (not
// JSON), or the RM's error.
// Thread-safe: reads only use the snapshot they get from `snapshots`.
class RestApi {
 public:
  // `snapshots` and `writer` are not owned and must outlive the RestApi; `writer` may be null
  // (writes then answer 403).
  RestApi(RestApiOptions options, const SnapshotHolder* snapshots, RmWriter* writer);

  HttpResponse Handle(const HttpRequest& request) const;
  // The answer to `request` when it is one of the writes (POST apps/new-application, POST
  // apps, PUT apps/{id}/state; authenticated, performed through the writer); nullopt for any
  // other request. Needs no snapshot: the federation router serves its writes with it.
  std::optional<HttpResponse> HandleWrite(const HttpRequest& request) const;

 private:
  HttpResponse Get(const HttpRequest& request, const ClusterSnapshot& s,
                   const std::vector<std::string>& parts) const;
  HttpResponse Write(const HttpRequest& request, const std::vector<std::string>& parts) const;
  HttpResponse Session(const HttpRequest& request) const;
  // The writer of `request`, or the 400/401/403 response refusing it.
  absl::StatusOr<rm::Caller> Authenticate(const HttpRequest& request, HttpResponse* refusal) const;
  // The reader of `request`: as Authenticate() when it presents a header credential, else its
  // live session's caller, else anonymous (user "").
  absl::StatusOr<rm::Caller> Reader(const HttpRequest& request, HttpResponse* refusal) const;
  // Whether `reader` may see `app`'s details (anonymous_view, rm/app_acls.h).
  bool MayView(const ClusterSnapshot& s, const v1::ApplicationReport& app,
               const rm::Caller& reader) const;
  // The app as `reader` may see it: AppJson, redacted when it may not view it.
  Json VisibleAppJson(const ClusterSnapshot& s, const v1::ApplicationReport& app,
                      const std::string& http_address, const rm::Caller& reader) const;
  std::string BaseUrl(const HttpRequest& request) const;

  RestApiOptions options_;
  const SnapshotHolder* snapshots_;
  RmWriter* writer_;
};

// HTTP status for an RM error code (InvalidArgument 400, NotFound 404, ...).
int HttpStatusOf(absl::StatusCode code);

// The credentials `request` presents, as every Weft REST API reads them (RestApiOptions::
// authenticate): header X-Weft-Munge-Credential; the secret in X-Weft-Secret or
// "Authorization: Bearer"; the declared user in X-Weft-User or parameter user.name.
// InvalidArgument naming a declared user that is not a user name.
absl::StatusOr<rm::Presented> PresentedOf(const HttpRequest& request);
// Whether `request` presents any credential; without one its reader is anonymous.
bool PresentsCredential(const HttpRequest& request);
// The answer refusing a reader or writer whose authentication failed with `status`: its HTTP
// status (HttpStatusOf) and message, with WWW-Authenticate on 401.
HttpResponse AuthenticationRefusal(const absl::Status& status);

}  // namespace weft::web

#endif  // WEFT_WEB_REST_API_H_
