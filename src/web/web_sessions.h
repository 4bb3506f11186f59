// Copyright Weft authors. Browser sign-in for the RM's web UI: a user who authenticated by MUNGE
// (or the client secret) gets a single-use sign-in link; the UI page that opens it trades the
// link's ticket for a session id, keeps it in the origin's localStorage and sends it in a header
// with each read (docs/web.md, "Signing in a browser"). Not a cookie: over plain HTTP a cookie
// goes to every port of the host (an AM's web UI there included), and a header cannot be sent
// by another site's page.
#ifndef WEFT_WEB_WEB_SESSIONS_H_
#define WEFT_WEB_WEB_SESSIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "rm/client_auth.h"
#include "security/secret_source.h"
#include "web/http.h"

namespace weft::web {

// The request header that carries a session id (the UI's reads).
inline constexpr char kSessionHeader[] = "X-Weft-Session";
// The request header that carries a sign-in ticket to redeem (POST .../session).
inline constexpr char kSignInTicketHeader[] = "X-Weft-Sign-In-Ticket";

struct WebSessionOptions {
  int64_t ticket_ttl_ms = 60'000;             // how long a sign-in link may wait to be opened
  int64_t session_ttl_ms = 8 * 3'600'000LL;   // how long a signed-in browser stays signed in
  size_t max_tickets = 1024;                  // unopened links at once (all users)
  // One user's unopened links at once: no user can use up max_tickets for the others.
  size_t max_tickets_per_user = 8;
  size_t max_sessions = 10'000;               // live sessions at once (all users)
  size_t max_sessions_per_user = 32;          // a user's oldest session ends past this
  // Time in ms since the epoch; null = the system clock. Tests inject their own.
  std::function<int64_t()> now_ms;
  // Where ticket and session ids come from; null = OpenSSL's RAND_bytes.
  std::shared_ptr<security::SecretSource> secrets;
};

// Single-use sign-in tickets and the sessions they open, in this process's memory: a restarted
// or failed-over RM has none, and its users sign in again. Ids are 256 random bits, base64url.
// Thread-safe (HTTP threads call it).
class WebSessions {
 public:
  explicit WebSessions(WebSessionOptions options = {});

  // A sign-in ticket for `caller`, who authenticated by a header credential (never by a
  // session: a session cannot make more). ResourceExhausted when max_tickets are unopened, or
  // max_tickets_per_user of the caller's;
  // Internal when no random bytes could be had.
  absl::StatusOr<std::string> IssueTicket(const rm::Caller& caller);
  // Opens a session for the ticket's caller and forgets the ticket: the session id.
  // Unauthenticated for a ticket unknown, already used or expired; ResourceExhausted when
  // max_sessions are live.
  absl::StatusOr<std::string> Redeem(absl::string_view ticket);
  // The caller of a live session; Unauthenticated when `session` is unknown or expired.
  absl::StatusOr<rm::Caller> Find(absl::string_view session) const;
  // When a live session expires (ms since the epoch), 0 when it is not live.
  int64_t ExpiresMs(absl::string_view session) const;
  // Ends a session (sign-out); unknown ids are ignored.
  void End(absl::string_view session);

  const WebSessionOptions& options() const { return options_; }
  size_t live_sessions() const;

 private:
  struct Entry {
    rm::Caller caller;
    int64_t created_ms = 0;
    int64_t expires_ms = 0;
  };
  int64_t Now() const;
  absl::StatusOr<std::string> NewId();
  // Forgets expired tickets and sessions.
  void Sweep(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  WebSessionOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> tickets_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Entry> sessions_ ABSL_GUARDED_BY(mu_);
};

// The reader of a request that presents no MUNGE credential or secret: the caller of the live
// session its X-Weft-Session header names, else anonymous (user "": no header, no `sessions`,
// or a session unknown or expired).
rm::Caller SessionReader(const HttpRequest& request, const WebSessions* sessions);

}  // namespace weft::web

#endif  // WEFT_WEB_WEB_SESSIONS_H_
