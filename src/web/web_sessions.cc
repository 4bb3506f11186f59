// Copyright Weft authors.
#include "web/web_sessions.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace weft::web {
namespace {

constexpr size_t kIdBytes = 32;  // 256 bits
// base64url of kIdBytes without padding; anything else is no id of ours.
constexpr size_t kIdChars = 43;

bool LooksLikeId(absl::string_view id) {
  if (id.size() != kIdChars) return false;
  for (char c : id)
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  return true;
}

}  // namespace

WebSessions::WebSessions(WebSessionOptions options) : options_(std::move(options)) {
  if (options_.secrets == nullptr)
    options_.secrets = std::make_shared<security::OpenSslSecretSource>();
}

int64_t WebSessions::Now() const {
  return options_.now_ms ? options_.now_ms() : absl::ToUnixMillis(absl::Now());
}

absl::StatusOr<std::string> WebSessions::NewId() {
  absl::StatusOr<std::string> bytes = options_.secrets->Generate(kIdBytes);
  if (!bytes.ok())
    return absl::InternalError(absl::StrCat("web sign-in: no random bytes for an id: ",
                                            bytes.status().message()));
  return absl::WebSafeBase64Escape(*bytes);
}

void WebSessions::Sweep(int64_t now) {
  absl::erase_if(tickets_, [now](const auto& e) { return e.second.expires_ms <= now; });
  absl::erase_if(sessions_, [now](const auto& e) { return e.second.expires_ms <= now; });
}

absl::StatusOr<std::string> WebSessions::IssueTicket(const rm::Caller& caller) {
  if (caller.user.empty())
    return absl::UnauthenticatedError("web sign-in needs an authenticated user");
  absl::StatusOr<std::string> id = NewId();
  if (!id.ok()) return id.status();
  const int64_t now = Now();
  absl::MutexLock l(&mu_);
  Sweep(now);
  if (tickets_.size() >= options_.max_tickets)
    return absl::ResourceExhaustedError(
        absl::StrCat("web sign-in: ", tickets_.size(), " sign-in links are waiting to be opened "
                     "(at most ", options_.max_tickets, "); try again within ",
                     options_.ticket_ttl_ms / 1000, " s"));
  const size_t mine = std::count_if(tickets_.begin(), tickets_.end(), [&](const auto& t) {
    return t.second.caller.user == caller.user;
  });
  if (mine >= options_.max_tickets_per_user)
    return absl::ResourceExhaustedError(absl::StrCat(
        "web sign-in: ", caller.user, " has ", mine, " sign-in links waiting to be opened (at most ",
        options_.max_tickets_per_user, " a user); open one, or try again within ",
        options_.ticket_ttl_ms / 1000, " s"));
  tickets_[*id] = Entry{caller, now, now + options_.ticket_ttl_ms};
  return id;
}

absl::StatusOr<std::string> WebSessions::Redeem(absl::string_view ticket) {
  absl::StatusOr<std::string> id = NewId();
  if (!id.ok()) return id.status();
  const int64_t now = Now();
  absl::MutexLock l(&mu_);
  Sweep(now);
  auto it = LooksLikeId(ticket) ? tickets_.find(ticket) : tickets_.end();
  if (it == tickets_.end())
    return absl::UnauthenticatedError(
        "this sign-in link is not valid: it was used already, is older than its "
        "lifetime, or was made by another (or a restarted) ResourceManager; run `weft web "
        "login` again");
  // A user's oldest session ends past the per-user bound, also when every place is taken: a
  // user replacing their own session never waits for others'.
  const std::string& user = it->second.caller.user;
  size_t mine = 0;
  auto oldest = sessions_.end();
  for (auto s = sessions_.begin(); s != sessions_.end(); ++s) {
    if (s->second.caller.user != user) continue;
    ++mine;
    if (oldest == sessions_.end() || s->second.created_ms < oldest->second.created_ms) oldest = s;
  }
  const bool replaces = mine >= options_.max_sessions_per_user && oldest != sessions_.end();
  if (!replaces && sessions_.size() >= options_.max_sessions)
    return absl::ResourceExhaustedError(absl::StrCat(
        "web sign-in: ", sessions_.size(), " sessions are open (at most ",
        options_.max_sessions, "); the link stays valid until it expires"));
  if (replaces) sessions_.erase(oldest);
  Entry session{std::move(it->second.caller), now, now + options_.session_ttl_ms};
  tickets_.erase(it);
  sessions_[*id] = std::move(session);
  return id;
}

absl::StatusOr<rm::Caller> WebSessions::Find(absl::string_view session) const {
  const int64_t now = Now();
  absl::MutexLock l(&mu_);
  auto it = LooksLikeId(session) ? sessions_.find(session) : sessions_.end();
  if (it == sessions_.end() || it->second.expires_ms <= now)
    return absl::UnauthenticatedError(
        "this browser's session is unknown or expired (sign in again: `weft web login`)");
  return it->second.caller;
}

int64_t WebSessions::ExpiresMs(absl::string_view session) const {
  const int64_t now = Now();
  absl::MutexLock l(&mu_);
  auto it = sessions_.find(session);
  return it == sessions_.end() || it->second.expires_ms <= now ? 0 : it->second.expires_ms;
}

void WebSessions::End(absl::string_view session) {
  absl::MutexLock l(&mu_);
  sessions_.erase(session);
}

size_t WebSessions::live_sessions() const {
  const int64_t now = Now();
  absl::MutexLock l(&mu_);
  size_t n = 0;
  for (const auto& [id, e] : sessions_) n += e.expires_ms > now ? 1 : 0;
  return n;
}

rm::Caller SessionReader(const HttpRequest& request, const WebSessions* sessions) {
  if (sessions == nullptr) return rm::Caller{};
  const std::string id = request.Header(kSessionHeader);
  if (id.empty()) return rm::Caller{};
  absl::StatusOr<rm::Caller> caller = sessions->Find(id);
  return caller.ok() ? *std::move(caller) : rm::Caller{};
}

}  // namespace weft::web
