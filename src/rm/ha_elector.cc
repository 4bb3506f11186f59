// Copyright Weft authors.
#include "rm/ha_elector.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "store/zk_client.h"

namespace weft::rm {
namespace {

constexpr absl::string_view kLeaderMagic = "weft-rm-leader 1";
constexpr absl::Duration kRetryAfterFailedActivation = absl::Seconds(2);

bool IsIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool OneLine(absl::string_view s) { return !absl::StrContains(s, '\n'); }

}  // namespace

absl::Status ValidateHaOptions(const HaOptions& o) {
  if (o.rm_id.empty()) return absl::InvalidArgumentError("HA: the RM id (--ha-id) is empty");
  for (char c : o.rm_id)
    if (!IsIdChar(c))
      return absl::InvalidArgumentError(absl::StrCat(
          "HA: RM id '", o.rm_id, "' may hold only letters, digits, '.', '_' and '-'"));
  if (o.zk_connect.empty())
    return absl::InvalidArgumentError("HA: no ZooKeeper given (--ha-zk HOST:PORT[,HOST:PORT])");
  if (o.zk_root.empty() || o.zk_root[0] != '/' || o.zk_root == "/" || o.zk_root.back() == '/' ||
      absl::StrContains(o.zk_root, "//"))
    return absl::InvalidArgumentError(absl::StrCat(
        "HA: ZooKeeper root '", o.zk_root, "' must be an absolute path like /weft"));
  if (o.session_timeout_ms < 100 || o.session_timeout_ms > 600000)
    return absl::InvalidArgumentError(absl::StrCat("HA: session timeout ", o.session_timeout_ms,
                                                   " ms is outside 100..600000"));
  if (o.poll_interval_ms < 10 || o.poll_interval_ms > o.session_timeout_ms)
    return absl::InvalidArgumentError(
        absl::StrCat("HA: poll interval ", o.poll_interval_ms,
                     " ms must be within 10 ms..the session timeout"));
  if (o.zk_auth.empty())
    return absl::InvalidArgumentError(
        "HA: no ZooKeeper credential (--ha-zk-auth-file FILE, a 0600 file holding "
        "user:password): without one the RM state in ZooKeeper, master keys included, is open "
        "to anyone who reaches ZooKeeper");
  for (const std::string& a : o.rm_addresses)
    if (a.empty() || !OneLine(a) || absl::StrContains(a, ','))
      return absl::InvalidArgumentError(absl::StrCat("HA: bad RM address '", a, "'"));
  return absl::OkStatus();
}

std::string EncodeLeaderInfo(const LeaderInfo& info) {
  return absl::StrCat(kLeaderMagic, "\nid=", info.rm_id, "\naddress=", info.address,
                      "\nhttp=", info.http_address, "\n");
}

absl::StatusOr<LeaderInfo> DecodeLeaderInfo(absl::string_view data) {
  std::vector<absl::string_view> lines = absl::StrSplit(data, '\n', absl::SkipEmpty());
  if (lines.empty() || lines[0] != kLeaderMagic)
    return absl::InvalidArgumentError(
        absl::StrCat("the leader node does not start with '", kLeaderMagic, "'"));
  LeaderInfo info;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(lines[i], '=');
    if (kv.first == "id") {
      info.rm_id = std::string(kv.second);
    } else if (kv.first == "address") {
      info.address = std::string(kv.second);
    } else if (kv.first == "http") {
      info.http_address = std::string(kv.second);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("the leader node has an unknown line '", lines[i], "'"));
    }
  }
  if (info.rm_id.empty() || info.address.empty())
    return absl::InvalidArgumentError("the leader node names no RM id or address");
  return info;
}

LeaderElector::LeaderElector(HaOptions options, LeaderInfo self, Callbacks callbacks)
    : options_(std::move(options)),
      self_(std::move(self)),
      callbacks_(std::move(callbacks)),
      root_(options_.zk_root),
      leader_path_(absl::StrCat(options_.zk_root, "/leader")) {}

absl::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Start(HaOptions options,
                                                                    LeaderInfo self,
                                                                    Callbacks callbacks) {
  if (absl::Status s = ValidateHaOptions(options); !s.ok()) return s;
  if (self.rm_id.empty()) self.rm_id = options.rm_id;
  if (self.address.empty() || !OneLine(self.address) || !OneLine(self.http_address))
    return absl::InvalidArgumentError("HA: this RM's address is empty or not one line");
  auto zk =
      store::zk::ZkClient::Create(options.zk_connect, options.session_timeout_ms, options.zk_auth);
  if (!zk.ok()) return zk.status();
  std::unique_ptr<LeaderElector> e(
      new LeaderElector(std::move(options), std::move(self), std::move(callbacks)));
  e->zk_ = *std::move(zk);
  e->last_contact_ = absl::Now();
  e->thread_ = std::thread([raw = e.get()] { raw->Run(); });
  return e;
}

LeaderElector::~LeaderElector() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (active_session_ != 0) {
    LoseLeadership("the ResourceManager is stopping");
    DeleteOwnNode(zk_->client_id().client_id);
  }
  zk_.reset();  // closing the session deletes the node if it is still ours
}

bool LeaderElector::active() const {
  absl::MutexLock l(&mu_);
  return active_;
}

std::optional<LeaderInfo> LeaderElector::leader() const {
  absl::MutexLock l(&mu_);
  return leader_;
}

absl::Status LeaderElector::StepDown(absl::Duration hold) {
  absl::MutexLock l(&mu_);
  if (!active_)
    return absl::FailedPreconditionError(
        absl::StrCat("ResourceManager ", self_.rm_id, " is not the active"));
  const int64_t before = step_downs_done_;
  step_down_ = hold;
  auto done = [this, before]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return step_downs_done_ != before || stopping_;
  };
  mu_.Await(absl::Condition(&done));
  return absl::OkStatus();
}

void LeaderElector::Run() {
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || step_down_.has_value();
      };
      mu_.AwaitWithTimeout(absl::Condition(&wake), absl::Milliseconds(options_.poll_interval_ms));
      if (stopping_) return;
    }
    Tick();
  }
}

void LeaderElector::LoseLeadership(const std::string& reason) {
  log::Warn("ha_lost_leadership", {{"rm_id", self_.rm_id}, {"reason", reason}});
  callbacks_.become_standby(reason);
  active_session_ = 0;
  absl::MutexLock l(&mu_);
  active_ = false;
  if (leader_.has_value() && leader_->rm_id == self_.rm_id) leader_.reset();
}

void LeaderElector::DeleteOwnNode(int64_t session) {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(options_.session_timeout_ms);
  auto node = zk_->Get({leader_path_}, deadline);
  if (!node.ok() || !(*node)[0].exists || (*node)[0].ephemeral_owner != session) return;
  auto r = zk_->Multi({store::zk::ZkClient::Op::Delete(leader_path_, (*node)[0].version)},
                      deadline);
  if (!r.ok() || r->rc != ZOK)
    log::Warn("ha_leader_node_not_deleted",
              {{"rm_id", self_.rm_id},
               {"error", r.ok() ? zk_->Describe(r->rc) : std::string(r.status().message())}});
}

void LeaderElector::Tick() {
  const absl::Time now = absl::Now();
  const absl::Duration session_timeout = absl::Milliseconds(
      zk_->negotiated_timeout_ms() > 0 ? zk_->negotiated_timeout_ms() : options_.session_timeout_ms);

  // A requested step-down first.
  std::optional<absl::Duration> step_down;
  {
    absl::MutexLock l(&mu_);
    step_down = step_down_;
  }
  if (step_down.has_value()) {
    if (active_session_ != 0) {
      const int64_t session = active_session_;
      LoseLeadership(absl::StrCat("asked to step down for ", absl::FormatDuration(*step_down)));
      DeleteOwnNode(session);
    }
    hold_until_ = now + *step_down;
    absl::MutexLock l(&mu_);
    step_down_.reset();
    ++step_downs_done_;
  }

  if (!zk_->connected()) {
    // Connect() waits at most one poll interval, so a lost ZooKeeper does not stall the
    // checks below; it also replaces an expired session.
    log::WarnIfError(zk_->Connect(now + absl::Milliseconds(options_.poll_interval_ms)),
                     "ha_zookeeper_connect_failed", {{"rm_id", options_.rm_id}});
  }
  // Without an answer from ZooKeeper for 2/3 of the session timeout, the server may be about
  // to expire the session and let another RM lead: stop serving first. (The client may not
  // have noticed a hung server yet, so this counts answers, not the connection state.)
  if (active_session_ != 0 && absl::Now() - last_contact_ > session_timeout * 2 / 3)
    LoseLeadership(absl::StrCat("no answer from ZooKeeper for ",
                                absl::FormatDuration(absl::Now() - last_contact_),
                                " (session timeout ", absl::FormatDuration(session_timeout),
                                "): another RM may be elected"));
  if (!zk_->connected()) return;
  const int64_t session = zk_->client_id().client_id;
  if (active_session_ != 0 && session != active_session_) {
    LoseLeadership("the ZooKeeper session that held the leadership expired");
  }
  const absl::Time deadline = absl::Now() + session_timeout / 2;
  if (!root_created_) {
    // The root's ancestors and the root itself, persistent; "exists" is fine.
    std::string path;
    for (absl::string_view part : absl::StrSplit(root_.substr(1), '/')) {
      absl::StrAppend(&path, "/", part);
      auto r = zk_->Multi({store::zk::ZkClient::Op::Create(path, "")}, deadline);
      if (!r.ok()) return;
      if (r->rc != ZOK && r->rc != ZNODEEXISTS) {
        log::Error("ha_cannot_create_root", {{"path", path}, {"error", zk_->Describe(r->rc)}});
        return;
      }
    }
    root_created_ = true;
  }
  auto nodes = zk_->Get({leader_path_}, deadline);
  if (!nodes.ok()) {
    log::Debug("ha_leader_read_failed", {{"error", nodes.status()}});
    return;
  }
  last_contact_ = absl::Now();
  const store::zk::ZkClient::Node& node = (*nodes)[0];
  if (active_session_ != 0) {
    if (!node.exists || node.ephemeral_owner != active_session_)
      LoseLeadership(node.exists ? "another RM holds the leader node" : "the leader node is gone");
    return;
  }
  if (node.exists) {
    if (node.ephemeral_owner == session) {
      // Ours from before (an answer that was lost, or a ZooKeeper restart that kept the
      // session): lead again unless holding off.
      if (now < hold_until_) {
        DeleteOwnNode(session);
        return;
      }
      TryToLead(session);
      return;
    }
    absl::StatusOr<LeaderInfo> info = DecodeLeaderInfo(node.data);
    if (!info.ok() || info->rm_id != self_.rm_id) {
      absl::MutexLock l(&mu_);
      if (info.ok()) {
        leader_ = *std::move(info);
      } else {
        leader_.reset();
      }
      return;
    }
    // This RM's own id under another session: the node of an earlier run of this RM that
    // died (a kill -9 and a restart), which ZooKeeper would delete only when that session
    // expires. RM ids are unique, so no live RM holds it: delete it now (if it is still that
    // node) and run for leadership at once instead of waiting out the session timeout.
    auto removed =
        zk_->Multi({store::zk::ZkClient::Op::Delete(leader_path_, node.version)}, deadline);
    if (!removed.ok() || removed->rc != ZOK) return;  // changed meanwhile: look again
    log::Warn("ha_stale_leader_node_removed",
              {{"rm_id", self_.rm_id}, {"stale_session", absl::StrCat(node.ephemeral_owner)}});
    // A standby that was waiting gets the first chance (it looks every poll interval): the
    // cluster fails over to it rather than back to the RM that just died.
    hold_until_ = absl::Now() + 3 * absl::Milliseconds(options_.poll_interval_ms);
    return;
  }
  {
    absl::MutexLock l(&mu_);
    leader_.reset();
  }
  if (now < hold_until_) return;
  auto r = zk_->Multi(
      {store::zk::ZkClient::Op::CreateEphemeral(leader_path_, EncodeLeaderInfo(self_))}, deadline);
  if (!r.ok() || r->rc != ZOK) return;  // another won, or the answer was lost: look again
  TryToLead(session);
}

void LeaderElector::TryToLead(int64_t session) {
  log::Info("ha_elected", {{"rm_id", self_.rm_id}, {"address", self_.address}});
  active_session_ = session;
  {
    absl::MutexLock l(&mu_);
    leader_ = self_;
  }
  absl::Status s = callbacks_.become_active();
  if (s.ok()) {
    last_contact_ = absl::Now();  // activation spoke to ZooKeeper (the store), however long
    absl::MutexLock l(&mu_);
    active_ = true;
    return;
  }
  log::Error("ha_activation_failed", {{"rm_id", self_.rm_id}, {"error", s}});
  active_session_ = 0;
  {
    absl::MutexLock l(&mu_);
    leader_.reset();
  }
  DeleteOwnNode(session);
  hold_until_ = absl::Now() + kRetryAfterFailedActivation;
}

}  // namespace weft::rm
