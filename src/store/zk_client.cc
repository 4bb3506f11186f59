// Copyright Weft authors.
#include "store/zk_client.h"

#include <errno.h>
#include <string.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "absl/strings/str_split.h"
#include "common/log.h"

namespace weft::store::zk {
namespace {

// The C client's log callback has no context argument, so its warnings and errors go to one
// process-wide list of recent lines, which Describe() searches for lines about its own servers.
// Every message also goes to the Weft log at debug level.
constexpr size_t kRecentClientLogLines = 64;

absl::Mutex& ClientLogMutex() {
  static absl::Mutex* mu = new absl::Mutex;
  return *mu;
}

std::deque<std::string>& ClientLog() ABSL_EXCLUSIVE_LOCKS_REQUIRED(ClientLogMutex()) {
  static std::deque<std::string>* lines = new std::deque<std::string>;
  return *lines;
}

void OnClientLog(const char* message) {
  std::string line(message != nullptr ? message : "");
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  weft::log::Debug("zookeeper_client", {{"message", line}});
  if (line.find("ZOO_ERROR") == std::string::npos && line.find("ZOO_WARN") == std::string::npos) {
    return;
  }
  absl::MutexLock lock(&ClientLogMutex());
  ClientLog().push_back(std::move(line));
  if (ClientLog().size() > kRecentClientLogLines) ClientLog().pop_front();
}

// The newest client error line (else any line) that mentions one of `hosts` ("host:port" as in
// the connect string), without the client's "<time>:<pid>(0x<tid>):ZOO_ERROR@<func>@<line>: "
// prefix; "" if none.
std::string LastClientLogAbout(const std::vector<std::string>& hosts) {
  absl::MutexLock lock(&ClientLogMutex());
  const std::string* found = nullptr;
  for (auto it = ClientLog().rbegin(); it != ClientLog().rend(); ++it) {
    bool about = false;
    for (const std::string& host : hosts) about = about || it->find(host) != std::string::npos;
    if (!about) continue;
    if (it->find("ZOO_ERROR") != std::string::npos) {
      found = &*it;
      break;
    }
    if (found == nullptr) found = &*it;
  }
  if (found == nullptr) return "";
  size_t start = found->find("ZOO_");
  if (start != std::string::npos) start = found->find(": ", start);
  return start == std::string::npos ? *found : found->substr(start + 2);
}

std::vector<std::string> HostsOf(absl::string_view connect) {
  absl::string_view hosts = connect.substr(0, connect.find('/'));
  return absl::StrSplit(hosts, ',', absl::SkipEmpty());
}

// State shared by a call and the completions of its requests, which may run after the call
// gave up waiting (their buffers then stay alive until the last completion).
struct PendingCall {
  explicit PendingCall(size_t n) : remaining(n), rcs(n, ZOK) {}

  absl::Mutex mu;
  size_t remaining ABSL_GUARDED_BY(mu);
  std::vector<int> rcs ABSL_GUARDED_BY(mu);
  std::vector<ZkClient::Node> nodes ABSL_GUARDED_BY(mu);
  std::vector<std::vector<std::string>> children ABSL_GUARDED_BY(mu);
  // Multi(): what the C client writes into when the answer arrives.
  std::vector<zoo_op_result_t> results;
  std::vector<struct Stat> stats;

  bool Done() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return remaining == 0; }
};

// The `data` of one request: which call, which slot. Deleted by its completion.
struct RequestRef {
  std::shared_ptr<PendingCall> call;
  size_t index;
};

// Completes one request of its call (`data`, its RequestRef): records `rc`, lets
// `fill(call, index)` copy the answer when it is ZOK (under the call's lock), and counts it.
template <typename Fill>
void Complete(const void* data, int rc, Fill fill) {
  std::unique_ptr<RequestRef> ref(static_cast<RequestRef*>(const_cast<void*>(data)));
  PendingCall& call = *ref->call;
  absl::MutexLock lock(&call.mu);
  call.rcs[ref->index] = rc;
  if (rc == ZOK) fill(call, ref->index);
  --call.remaining;
}

void OnData(int rc, const char* value, int value_len, const struct Stat* stat, const void* data) {
  Complete(data, rc, [&](PendingCall& call, size_t index) {
    ZkClient::Node& node = call.nodes[index];
    node.exists = true;
    if (value != nullptr && value_len > 0) node.data.assign(value, value_len);
    if (stat != nullptr) {
      node.version = stat->version;
      node.num_children = stat->numChildren;
      node.ephemeral_owner = stat->ephemeralOwner;
    }
  });
}

void OnStrings(int rc, const struct String_vector* strings, const void* data) {
  Complete(data, rc, [&](PendingCall& call, size_t index) {
    if (strings == nullptr) return;
    std::vector<std::string>& names = call.children[index];
    for (int32_t i = 0; i < strings->count; ++i) names.emplace_back(strings->data[i]);
  });
}

void OnVoid(int rc, const void* data) {
  Complete(data, rc, [](PendingCall&, size_t) {});
}

// An ACL read (zoo_aget_acl): whether it lets anyone in, and its version. Node's fields are
// reused: `data` "open" when an entry is world:anyone, `version` the ACL's version.
void OnAcl(int rc, struct ACL_vector* acl, struct Stat* stat, const void* data) {
  Complete(data, rc, [&](PendingCall& call, size_t index) {
    ZkClient::Node& node = call.nodes[index];
    node.exists = true;
    for (int32_t i = 0; acl != nullptr && i < acl->count; ++i) {
      const struct Id& id = acl->data[i].id;
      if (id.scheme != nullptr && id.id != nullptr && std::string_view(id.scheme) == "world" &&
          std::string_view(id.id) == "anyone")
        node.data = "open";
    }
    if (stat != nullptr) node.version = stat->aversion;
  });
}

// Sends request i of `call`, for i in [0, n), with `send(i, ref)` (a C client call taking `ref`
// as its completion's data); a request not sent gets no completion, so its rc is recorded here.
template <typename Send>
void SendEach(const std::shared_ptr<PendingCall>& call, size_t n, Send send) {
  for (size_t i = 0; i < n; ++i) {
    auto* ref = new RequestRef{call, i};
    if (int rc = send(i, ref); rc != ZOK) {
      delete ref;
      absl::MutexLock lock(&call->mu);
      call->rcs[i] = rc;
      --call->remaining;
    }
  }
}

// Waits for every completion of `call` until `deadline`. False if the deadline passed first.
bool AwaitCall(PendingCall& call, absl::Time deadline) {
  bool done = call.mu.LockWhenWithDeadline(absl::Condition(&call, &PendingCall::Done), deadline);
  call.mu.Unlock();
  return done;
}

bool IsConnectionProblem(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED ||
         rc == ZINVALIDSTATE || rc == ZCLOSING || rc == ZSESSIONMOVED;
}

bool IsUnrecoverable(int state) {
  return state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE;
}

// What the C client's world:anyone ACL costs in a create request: count, perms, scheme, id.
// The creator-only ACL (auth:) is smaller, so this bounds both.
constexpr size_t kOpenAclBytes = 4 + 4 + (4 + 5) + (4 + 6);

}  // namespace

absl::StatusCode CodeForZk(int rc) {
  switch (rc) {
    case ZOK:
      return absl::StatusCode::kOk;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
    case ZCLOSING:
    case ZSESSIONMOVED:
    case ZNOTREADONLY:
      return absl::StatusCode::kUnavailable;
    case ZNONODE:
      return absl::StatusCode::kNotFound;
    case ZNODEEXISTS:
      return absl::StatusCode::kAlreadyExists;
    case ZBADVERSION:
    case ZNOTEMPTY:
      return absl::StatusCode::kFailedPrecondition;
    case ZNOAUTH:
    case ZAUTHFAILED:
      return absl::StatusCode::kPermissionDenied;
    case ZBADARGUMENTS:
    case ZINVALIDACL:
      return absl::StatusCode::kInvalidArgument;
    default:
      return absl::StatusCode::kInternal;
  }
}

ZkClient::ZkClient(std::string connect, int session_timeout_ms, std::string digest_auth)
    : connect_(std::move(connect)),
      chroot_(connect_.find('/') == std::string::npos ? "" : connect_.substr(connect_.find('/'))),
      session_timeout_ms_(session_timeout_ms),
      digest_auth_(std::move(digest_auth)) {}

absl::StatusOr<std::unique_ptr<ZkClient>> ZkClient::Create(absl::string_view connect,
                                                           int session_timeout_ms,
                                                           std::string digest_auth) {
  if (!digest_auth.empty()) {
    const size_t colon = digest_auth.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == digest_auth.size() ||
        digest_auth.find_first_of("\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(
          "ZooKeeper digest credential must be one line 'user:password' with both parts "
          "non-empty");
    }
  }
  if (connect.empty()) return absl::InvalidArgumentError("ZooKeeper connect string is empty");
  if (session_timeout_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ZooKeeper session timeout ", session_timeout_ms, " ms is not positive"));
  }
  std::unique_ptr<ZkClient> client(
      new ZkClient(std::string(connect), session_timeout_ms, std::move(digest_auth)));
  if (absl::Status s = client->NewHandle(); !s.ok()) return s;
  return client;
}

ZkClient::~ZkClient() {
  if (handle_ != nullptr) zookeeper_close(handle_);
}

absl::Status ZkClient::NewHandle() {
  if (handle_ != nullptr) {
    zookeeper_close(handle_);  // Joins the client's threads: no callback runs after this.
    handle_ = nullptr;
  }
  {
    absl::MutexLock lock(&mu_);
    state_ = 0;
  }
  errno = 0;
  handle_ = zookeeper_init2(connect_.c_str(), &ZkClient::OnWatch, session_timeout_ms_,
                            /*clientid=*/nullptr, this, /*flags=*/0, &OnClientLog);
  if (handle_ == nullptr) {
    const int err = errno;
    return absl::InvalidArgumentError(
        absl::StrCat("ZooKeeper client refused connect string '", connect_, "'",
                     err != 0 ? absl::StrCat(": ", ErrnoMessage(err, "zookeeper_init")) : std::string(),
                     " (expected host:port[,host:port...][/chroot])"));
  }
  if (!digest_auth_.empty()) {
    // Queued on the handle: the C client sends it before any request of this session (and
    // again after a reconnection). A refused credential ends the session (AUTH_FAILED), which
    // Connect() reports.
    const int rc = zoo_add_auth(handle_, "digest", digest_auth_.data(),
                                static_cast<int>(digest_auth_.size()),
                                [](int /*rc*/, const void* /*data*/) {}, /*data=*/nullptr);
    if (rc != ZOK) {
      return absl::InternalError(
          absl::StrCat("ZooKeeper client '", connect_, "': adding the digest credential: ",
                       zerror(rc)));
    }
  }
  return absl::OkStatus();
}

void ZkClient::OnWatch(zhandle_t* /*zh*/, int type, int state, const char* /*path*/,
                       void* context) {
  if (type != ZOO_SESSION_EVENT) return;  // This client sets no watches on nodes.
  auto* client = static_cast<ZkClient*>(context);
  absl::MutexLock lock(&client->mu_);
  client->state_ = state;
}

bool ZkClient::connected() const {
  absl::MutexLock lock(&mu_);
  return state_ == ZOO_CONNECTED_STATE;
}

clientid_t ZkClient::client_id() const {
  clientid_t id{};
  if (handle_ != nullptr) {
    if (const clientid_t* current = zoo_client_id(handle_); current != nullptr) id = *current;
  }
  return id;
}

int ZkClient::negotiated_timeout_ms() const {
  return handle_ == nullptr ? 0 : zoo_recv_timeout(handle_);
}

std::string ZkClient::StateName() const {
  int state;
  {
    absl::MutexLock lock(&mu_);
    state = state_;
  }
  if (state == ZOO_CONNECTED_STATE) return "CONNECTED";
  if (state == ZOO_EXPIRED_SESSION_STATE) return "SESSION_EXPIRED";
  if (state == ZOO_AUTH_FAILED_STATE) return "AUTH_FAILED";
  return "CONNECTING";  // 0, ZOO_CONNECTING_STATE, ZOO_ASSOCIATING_STATE
}

std::string ZkClient::Describe(int rc) const {
  std::string text = zerror(rc);
  if (IsConnectionProblem(rc)) {
    absl::StrAppend(&text, " (state ", StateName());
    if (std::string last = LastClientLogAbout(HostsOf(connect_)); !last.empty()) {
      absl::StrAppend(&text, "; last client error: ", last);
    }
    absl::StrAppend(&text, ")");
  }
  return text;
}

absl::Status ZkClient::Connect(absl::Time deadline) {
  for (;;) {
    int state;
    {
      absl::MutexLock lock(&mu_);
      state = state_;
    }
    if (handle_ == nullptr || IsUnrecoverable(state)) {
      const char* reason = handle_ == nullptr                   ? "no_session"
                           : state == ZOO_EXPIRED_SESSION_STATE ? "expired"
                                                                : "auth_failed";
      weft::log::Info("zookeeper_session_replaced", {{"connect", connect_}, {"reason", reason}});
      if (absl::Status s = NewHandle(); !s.ok()) return s;
    }
    auto settled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return state_ == ZOO_CONNECTED_STATE || state_ == ZOO_EXPIRED_SESSION_STATE ||
             state_ == ZOO_AUTH_FAILED_STATE;
    };
    bool reached;
    {
      absl::MutexLock lock(&mu_);
      reached = mu_.AwaitWithDeadline(absl::Condition(&settled), deadline);
      state = state_;
    }
    if (reached && state == ZOO_CONNECTED_STATE) return absl::OkStatus();
    if (reached && absl::Now() < deadline) continue;  // Expired meanwhile: start a new session.
    return absl::UnavailableError(absl::StrCat("not connected to ZooKeeper '", connect_,
                                               "' by the deadline: ", Describe(ZCONNECTIONLOSS)));
  }
}

absl::Status ZkClient::CheckSendable() const {
  if (handle_ == nullptr || IsUnrecoverable(zoo_state(handle_))) {
    return absl::UnavailableError(
        absl::StrCat("no ZooKeeper session with '", connect_,
                     "' (call Connect() first): ", Describe(ZINVALIDSTATE)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ZkClient::Node>> ZkClient::Get(absl::Span<const std::string> paths,
                                                          absl::Time deadline) {
  if (absl::Status s = CheckSendable(); !s.ok()) return s;
  auto call = std::make_shared<PendingCall>(paths.size());
  {
    absl::MutexLock lock(&call->mu);
    call->nodes.resize(paths.size());
  }
  SendEach(call, paths.size(), [&](size_t i, RequestRef* ref) {
    return zoo_aget(handle_, paths[i].c_str(), /*watch=*/0, &OnData, ref);
  });
  if (!AwaitCall(*call, deadline)) {
    return absl::UnavailableError(absl::StrCat(
        "reading ", paths.size() == 1 ? paths[0] : absl::StrCat(paths.size(), " nodes"),
        ": no answer from ZooKeeper '", connect_,
        "' by the deadline: ", Describe(ZOPERATIONTIMEOUT)));
  }
  absl::MutexLock lock(&call->mu);
  for (size_t i = 0; i < paths.size(); ++i) {
    if (call->rcs[i] != ZOK && call->rcs[i] != ZNONODE) {
      return absl::Status(
          CodeForZk(call->rcs[i]),
          absl::StrCat("reading ", paths[i], " from '", connect_, "': ", Describe(call->rcs[i])));
    }
  }
  return std::move(call->nodes);
}

absl::StatusOr<std::vector<std::optional<std::vector<std::string>>>> ZkClient::GetChildren(
    absl::Span<const std::string> paths, absl::Time deadline) {
  if (absl::Status s = CheckSendable(); !s.ok()) return s;
  auto call = std::make_shared<PendingCall>(paths.size());
  {
    absl::MutexLock lock(&call->mu);
    call->children.resize(paths.size());
  }
  SendEach(call, paths.size(), [&](size_t i, RequestRef* ref) {
    return zoo_aget_children(handle_, paths[i].c_str(), /*watch=*/0, &OnStrings, ref);
  });
  if (!AwaitCall(*call, deadline)) {
    return absl::UnavailableError(absl::StrCat(
        "listing ", paths.size() == 1 ? paths[0] : absl::StrCat(paths.size(), " nodes"),
        ": no answer from ZooKeeper '", connect_,
        "' by the deadline: ", Describe(ZOPERATIONTIMEOUT)));
  }
  absl::MutexLock lock(&call->mu);
  std::vector<std::optional<std::vector<std::string>>> out(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    if (call->rcs[i] == ZNONODE) continue;
    if (call->rcs[i] != ZOK) {
      return absl::Status(
          CodeForZk(call->rcs[i]),
          absl::StrCat("listing ", paths[i], " from '", connect_, "': ", Describe(call->rcs[i])));
    }
    out[i] = std::move(call->children[i]);
  }
  return out;
}

size_t ZkClient::RequestBytes(const std::vector<Op>& ops) const {
  // Request header (xid, type) and the closing multi header (type, done, err).
  size_t bytes = 8 + 9;
  for (const Op& op : ops) {
    bytes += 9 + 4 + chroot_.size() + op.path.size();  // multi header, path
    switch (op.type) {
      case Op::Type::kCreate:
        bytes += 4 + op.data.size() + kOpenAclBytes + 4;  // data, ACL, flags
        break;
      case Op::Type::kSet:
        bytes += 4 + op.data.size() + 4;  // data, version
        break;
      case Op::Type::kDelete:
      case Op::Type::kCheck:
        bytes += 4;  // version
        break;
    }
  }
  return bytes;
}

absl::StatusOr<ZkClient::MultiResult> ZkClient::Multi(const std::vector<Op>& ops,
                                                      absl::Time deadline,
                                                      size_t max_request_bytes) {
  if (ops.empty()) return absl::InvalidArgumentError("ZooKeeper transaction without operations");
  if (size_t bytes = RequestBytes(ops); bytes > max_request_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ZooKeeper request would be ", bytes, " bytes, over the limit of ",
                     max_request_bytes, " bytes per request (the server's jute.maxbuffer)"));
  }
  if (absl::Status s = CheckSendable(); !s.ok()) return s;
  auto call = std::make_shared<PendingCall>(1);
  call->results.resize(ops.size());
  call->stats.resize(ops.size());
  std::vector<zoo_op_t> zoo_ops(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    zoo_op_t* z = &zoo_ops[i];
    switch (op.type) {
      case Op::Type::kCreate:
        zoo_create_op_init(z, op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()),
                           digest_auth_.empty() ? &ZOO_OPEN_ACL_UNSAFE : &ZOO_CREATOR_ALL_ACL,
                           op.ephemeral ? ZOO_EPHEMERAL : ZOO_PERSISTENT,
                           /*path_buffer=*/nullptr, 0);
        break;
      case Op::Type::kSet:
        zoo_set_op_init(z, op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()),
                        op.version, &call->stats[i]);
        break;
      case Op::Type::kDelete:
        zoo_delete_op_init(z, op.path.c_str(), op.version);
        break;
      case Op::Type::kCheck:
        zoo_check_op_init(z, op.path.c_str(), op.version);
        break;
    }
    call->results[i] = zoo_op_result_t{ZOK, nullptr, 0, nullptr};
  }
  auto* ref = new RequestRef{call, 0};
  // The request is serialized before zoo_amulti returns: `ops` may go away after it; the results
  // and stats the answer fills live in `call`.
  int rc = zoo_amulti(handle_, static_cast<int>(zoo_ops.size()), zoo_ops.data(),
                      call->results.data(), &OnVoid, ref);
  if (rc != ZOK) {
    delete ref;
    return absl::Status(CodeForZk(rc), absl::StrCat("sending a transaction to ZooKeeper '",
                                                    connect_, "': ", Describe(rc)));
  }
  if (!AwaitCall(*call, deadline)) {
    return absl::UnavailableError(
        absl::StrCat("no answer from ZooKeeper '", connect_,
                     "' to a transaction by the deadline: ", Describe(ZOPERATIONTIMEOUT)));
  }
  absl::MutexLock lock(&call->mu);
  rc = call->rcs[0];
  if (IsConnectionProblem(rc)) {
    return absl::UnavailableError(
        absl::StrCat("transaction on ZooKeeper '", connect_, "' interrupted: ", Describe(rc)));
  }
  MultiResult result;
  result.rc = rc;
  if (rc == ZOK) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].type == Op::Type::kSet) result.set_versions.push_back(call->stats[i].version);
    }
    return result;
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const int err = call->results[i].err;
    if (err != ZOK && err != ZRUNTIMEINCONSISTENCY) {
      result.failed_op = static_cast<int>(i);
      result.rc = err;
      break;
    }
  }
  if (result.failed_op < 0) {
    // A failure the server did not pin on an operation (e.g. a marshalling error).
    return absl::Status(CodeForZk(rc), absl::StrCat("transaction on ZooKeeper '", connect_,
                                                    "' failed: ", Describe(rc)));
  }
  return result;
}

absl::StatusOr<std::vector<std::optional<int32_t>>> ZkClient::OpenAcls(
    absl::Span<const std::string> paths, absl::Time deadline) {
  auto call = std::make_shared<PendingCall>(paths.size());
  {
    absl::MutexLock lock(&call->mu);
    call->nodes.resize(paths.size());
  }
  SendEach(call, paths.size(), [&](size_t i, RequestRef* ref) {
    return zoo_aget_acl(handle_, paths[i].c_str(), &OnAcl, ref);
  });
  if (!AwaitCall(*call, deadline))
    return absl::UnavailableError(absl::StrCat("reading the ACLs of ", paths.size(),
                                               " nodes: no answer from ZooKeeper '", connect_,
                                               "' by the deadline: ", Describe(ZOPERATIONTIMEOUT)));
  absl::MutexLock lock(&call->mu);
  std::vector<std::optional<int32_t>> open(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    const int rc = call->rcs[i];
    if (rc == ZNONODE) continue;  // deleted meanwhile
    if (rc != ZOK)
      return absl::Status(CodeForZk(rc), absl::StrCat("reading the ACL of ", paths[i], " from '",
                                                      connect_, "': ", Describe(rc)));
    if (call->nodes[i].data == "open") open[i] = call->nodes[i].version;
  }
  return open;
}

absl::StatusOr<int64_t> ZkClient::CloseOpenAcls(absl::Span<const std::string> paths,
                                                 absl::Time deadline) {
  absl::StatusOr<std::vector<std::optional<int32_t>>> acls = OpenAcls(paths, deadline);
  if (!acls.ok()) return acls.status();
  std::vector<std::pair<std::string, int32_t>> open;  // path, ACL version
  for (size_t i = 0; i < paths.size(); ++i)
    if ((*acls)[i].has_value()) open.emplace_back(paths[i], *(*acls)[i]);
  if (open.empty()) return 0;
  auto set = std::make_shared<PendingCall>(open.size());
  SendEach(set, open.size(), [&](size_t i, RequestRef* ref) {
    return zoo_aset_acl(handle_, open[i].first.c_str(), open[i].second, &ZOO_CREATOR_ALL_ACL,
                        &OnVoid, ref);
  });
  if (!AwaitCall(*set, deadline))
    return absl::UnavailableError(absl::StrCat("closing the ACLs of ", open.size(),
                                               " nodes: no answer from ZooKeeper '", connect_,
                                               "' by the deadline: ", Describe(ZOPERATIONTIMEOUT)));
  absl::MutexLock lock(&set->mu);
  int64_t closed = 0;
  for (size_t i = 0; i < open.size(); ++i) {
    const int rc = set->rcs[i];
    if (rc == ZNONODE) continue;
    if (rc == ZBADVERSION)
      return absl::AbortedError(absl::StrCat("closing the ACL of ", open[i].first, " on '",
                                             connect_, "': its ACL changed meanwhile"));
    if (rc != ZOK)
      return absl::Status(CodeForZk(rc), absl::StrCat("closing the ACL of ", open[i].first,
                                                      " on '", connect_, "': ", Describe(rc)));
    ++closed;
  }
  return closed;
}

absl::StatusOr<int64_t> ZkClient::CloseOpenAclsUnder(const std::string& root,
                                                     absl::Time deadline) {
  if (digest_auth_.empty())
    return absl::FailedPreconditionError(
        absl::StrCat("closing the ACLs under ", root, " on '", connect_,
                     "': this client has no digest credential to close them to"));
  if (absl::Status s = CheckSendable(); !s.ok()) return s;
  // A root that is not open (or missing): a walk finished, or the store was created closed.
  absl::StatusOr<std::vector<std::optional<int32_t>>> root_acl = OpenAcls({root}, deadline);
  if (!root_acl.ok()) return root_acl.status();
  if (!(*root_acl)[0].has_value()) return 0;
  // The whole tree, level by level; then closed from the leaves up, the root last, so that a
  // closed root means every node below was closed.
  std::vector<std::vector<std::string>> levels = {{root}};
  while (!levels.back().empty()) {
    const std::vector<std::string>& level = levels.back();
    absl::StatusOr<std::vector<std::optional<std::vector<std::string>>>> children =
        GetChildren(level, deadline);
    if (!children.ok()) return children.status();
    std::vector<std::string> next;
    for (size_t i = 0; i < level.size(); ++i) {
      if (!(*children)[i].has_value()) continue;
      for (const std::string& name : *(*children)[i])
        next.push_back(level[i] == "/" ? "/" + name : absl::StrCat(level[i], "/", name));
    }
    levels.push_back(std::move(next));
  }
  int64_t closed = 0;
  for (auto level = levels.rbegin(); level != levels.rend(); ++level) {
    absl::StatusOr<int64_t> n = CloseOpenAcls(*level, deadline);
    if (!n.ok()) return n.status();
    closed += *n;
  }
  return closed;
}

}  // namespace weft::store::zk
