// Copyright Weft authors.
#include "store/zk_store.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "store/state_backend.h"
#include "store/state_records.h"
#include "store/zk_client.h"
#include "store/zk_legacy_format.h"
#include "store/zk_names.h"

namespace weft::store {
namespace {

using zk::ZkClient;
using Op = ZkClient::Op;

// The data of <root>: tells a Weft store from other data, and its format version. Format 2:
// records are protos (store/state_records.h). Format 1 (before issue 28): records in the
// pre-proto encoding (store/zk_legacy_format.h), read and migrated to format 2 on open.
constexpr absl::string_view kRootMarker = "weft-rm-state 2";
constexpr absl::string_view kLegacyRootMarker = "weft-rm-state 1";
constexpr absl::string_view kChildren[] = {"apps", "keys", "epoch", "fence"};
// How often one call re-plans after finding that the store changed between its reads and its
// transaction (only a deposed writer's in-flight transaction, or a person editing nodes, can
// do that: the fence keeps out every other writer).
constexpr int kMaxConflicts = 3;

std::string DefaultIdentity() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof(host), "%s", "unknown-host");
  }
  return absl::StrCat(host, ":", ::getpid());
}

absl::Status ValidateOptions(const ZkStoreOptions& options) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("ZooKeeper state store options: ", why));
  };
  if (options.connect.empty()) return bad("connect string is empty");
  const std::string& root = options.root;
  if (root.empty() || root[0] != '/' || root == "/" || root.back() == '/') {
    return bad(absl::StrCat("root '", root,
                            "' must be an absolute path other than \"/\", without a trailing "
                            "'/' (e.g. \"/weft/rm-state\")"));
  }
  for (absl::string_view part : absl::StrSplit(absl::string_view(root).substr(1), '/')) {
    if (part.empty() || part == "." || part == ".." || part.find('\0') != part.npos) {
      return bad(absl::StrCat("root '", absl::CHexEscape(root),
                              "' has an empty, '.' or '..' "
                              "component or a NUL byte"));
    }
  }
  if (absl::string_view(root).substr(0, 10) == "/zookeeper" &&
      (root.size() == 10 || root[10] == '/')) {
    return bad(absl::StrCat("root '", root, "' is inside ZooKeeper's own /zookeeper"));
  }
  if (options.session_timeout_ms <= 0) {
    return bad(absl::StrCat("session timeout ", options.session_timeout_ms, " ms is not positive"));
  }
  if (options.identity.find('\n') != std::string::npos) {
    return bad(
        absl::StrCat("identity '", absl::CHexEscape(options.identity), "' contains a newline"));
  }
  if (options.max_request_bytes < 4096) {
    return bad(
        absl::StrCat("max_request_bytes ", options.max_request_bytes, " is below 4096 bytes"));
  }
  return absl::OkStatus();
}

// The primitives over a ZooKeeper session; see store/zk_store.h for the layout, fencing, sizes
// and failures.
class ZkBackend final : public StateBackend {
 public:
  ZkBackend(ZkStoreOptions options, std::unique_ptr<ZkClient> client)
      : StateBackend(absl::StrCat("ZooKeeper state store '", options.connect, options.root, "'")),
        options_(std::move(options)),
        apps_(options_.root + "/apps"),
        keys_(options_.root + "/keys"),
        epoch_(options_.root + "/epoch"),
        fence_(options_.root + "/fence"),
        node_admin_(options_.root + "/node-admin"),
        client_(std::move(client)) {}
  ~ZkBackend() override { Close().IgnoreError(); }

  // Connects, checks or creates the layout and, with options_.fence, takes over the fence.
  absl::Status Init();

  absl::StatusOr<RmState> ReadAll() override;
  absl::StatusOr<int64_t> BumpEpoch() override;
  absl::StatusOr<bool> Commit(absl::string_view what, const std::vector<StateOp>& ops) override;
  absl::Status Close() override;

 private:
  // Removes an application and its attempts, in several transactions when they do not fit in
  // one (the application last); false if it is not stored.
  absl::StatusOr<bool> RemoveApplication(absl::string_view what, absl::string_view app_id);

  // What a mutating call does in one round: reads what it needs, then either returns its final
  // status (`ops` empty: nothing to write) or the operations of one transaction.
  struct Plan {
    std::vector<Op> ops;
    absl::Status result;  // the call's status once `ops` (if any) committed
    bool again = false;   // after `ops` commit, plan the next transaction of the same call
  };
  // `resuming`: an earlier transaction of this call may have been applied (its answer was lost)
  // or was applied (a call in several transactions), so what it wrote or deleted is not news.
  using Planner = absl::FunctionRef<absl::StatusOr<Plan>(bool resuming, absl::Time deadline)>;

  // Runs a mutating call: plans, commits the plan's operations in one transaction that starts
  // with the fence check, and retries after connection loss until the call's deadline.
  absl::Status Mutate(absl::string_view what, Planner plan);
  // Runs `fn` (one attempt of a read-only step) until it succeeds, fails for a reason other than
  // Unavailable, or `deadline` passes; reconnects before each attempt.
  absl::Status Retrying(absl::Time deadline, absl::FunctionRef<absl::Status()> fn);

  // FailedPrecondition if this store may not write now (read-only or fenced).
  absl::Status CheckWritable(absl::string_view what) const;
  // InvalidArgument if a transaction of `ops` (plus the fence check) would be too large.
  absl::Status CheckSize(absl::string_view what, std::vector<Op> ops) const;
  absl::Status Prefixed(const absl::Status& s, absl::string_view what) const {
    return absl::Status(s.code(), absl::StrCat(Description(), ": ", what, ": ", s.message()));
  }
  absl::Status Fenced(absl::string_view what, bool unknown) const;
  // Marks this store fenced and finds out (best effort) whom the fence names now.
  void BecomeFenced(absl::Time deadline);
  absl::Time Deadline() const {
    return absl::Now() + absl::Milliseconds(options_.session_timeout_ms);
  }

  std::string AppPath(absl::string_view app_id) const {
    return absl::StrCat(apps_, "/", zk::EscapeNodeName(app_id));
  }
  std::string AttemptPath(absl::string_view app_id, int32_t attempt_id) const {
    return absl::StrCat(AppPath(app_id), "/", attempt_id);
  }
  static std::string KeyNodeName(absl::string_view purpose, int32_t key_id) {
    return absl::StrCat(zk::EscapeNodeName(purpose), ".", key_id);
  }
  std::string KeyPath(absl::string_view purpose, int32_t key_id) const {
    return absl::StrCat(keys_, "/", KeyNodeName(purpose, key_id));
  }
  std::string NodeAdminPath(absl::string_view node) const {
    return absl::StrCat(node_admin_, "/", zk::EscapeNodeName(node));
  }

  absl::Status EnsureLayout(absl::Time deadline);
  // Rewrites a format-1 store as format 2 (see kRootMarker); called by Init() after it took the
  // fence.
  absl::Status Migrate();
  // One read of everything. With `rewrites`, also returns the operations that rewrite each
  // record (and the epoch) still in the pre-proto format as a proto, at the version read.
  absl::StatusOr<RmState> LoadOnce(std::vector<Op>* rewrites = nullptr);
  absl::Status Corrupt(absl::string_view path, absl::string_view problem) const {
    return absl::DataLossError(absl::StrCat(Description(), ": ", path, ": ", problem));
  }

  const ZkStoreOptions options_;
  const std::string apps_, keys_, epoch_, fence_;
  // Admin records of nodes; made by the first put (stores written before it have none).
  const std::string node_admin_;
  std::unique_ptr<ZkClient> client_;  // null once closed
  int32_t fence_version_ = -1;        // the fence's version this store set; -1: read-only
  bool opened_ = false;               // Init() succeeded
  bool fenced_ = false;
  // The root holds kLegacyRootMarker: records may be in the pre-proto format. Cleared by a
  // successful Migrate().
  bool legacy_format_ = false;
  std::string fenced_by_;  // the fence's data when this store found itself fenced
};

absl::Status ZkBackend::Retrying(absl::Time deadline, absl::FunctionRef<absl::Status()> fn) {
  for (;;) {
    if (absl::Status s = client_->Connect(deadline); !s.ok()) return s;
    absl::Status s = fn();
    if (!absl::IsUnavailable(s) || absl::Now() >= deadline) return s;
  }
}

absl::Status ZkBackend::Init() {
  if (absl::Status s = Retrying(Deadline(), [&] { return EnsureLayout(Deadline()); }); !s.ok()) {
    return absl::StartsWith(s.message(), Description()) ? s : Prefixed(s, "opening");
  }
  if (!options_.fence) {
    weft::log::Info("state_store_opened", {{"store", Description()}, {"mode", "read-only"}});
    opened_ = true;
    return absl::OkStatus();
  }
  // Take over: bump the fence's version. A repeat after a lost answer just bumps it again.
  absl::Status status = Retrying(Deadline(), [&]() -> absl::Status {
    absl::StatusOr<ZkClient::MultiResult> r =
        client_->Multi({Op::Set(fence_, options_.identity)}, Deadline());
    if (!r.ok()) return r.status();
    if (r->rc != ZOK) {
      return absl::Status(zk::CodeForZk(r->rc),
                          absl::StrCat("setting ", fence_, ": ", client_->Describe(r->rc)));
    }
    fence_version_ = r->set_versions[0];
    return absl::OkStatus();
  });
  if (!status.ok()) return Prefixed(status, "taking over the fence");
  // Nodes an earlier Weft created open to everyone (master keys among them) are closed to this
  // store's credential before the RM serves from them.
  if (!options_.auth.empty()) {
    int64_t closed = 0;
    status = Retrying(Deadline(), [&]() -> absl::Status {
      absl::StatusOr<int64_t> n = client_->CloseOpenAclsUnder(options_.root, Deadline());
      if (!n.ok()) return n.status();
      closed += *n;
      return absl::OkStatus();
    });
    if (!status.ok()) return Prefixed(status, "closing the ACLs an earlier Weft left open");
    if (closed > 0)
      weft::log::Warn("state_store_acls_closed",
                      {{"store", Description()},
                       {"nodes", closed},
                       {"why", "created open to everyone by an earlier Weft"}});
  }
  if (legacy_format_) {
    if (absl::Status s = Migrate(); !s.ok()) return s;
  }
  weft::log::Info("state_store_opened", {{"store", Description()},
                                         {"mode", "active"},
                                         {"identity", options_.identity},
                                         {"fence_version", fence_version_}});
  opened_ = true;
  return absl::OkStatus();
}

absl::Status ZkBackend::EnsureLayout(absl::Time deadline) {
  const std::string& root = options_.root;
  for (int round = 0; round < kMaxConflicts; ++round) {
    absl::StatusOr<std::vector<ZkClient::Node>> nodes = client_->Get({root}, deadline);
    if (!nodes.ok()) return nodes.status();
    ZkClient::Node node = std::move((*nodes)[0]);
    std::vector<Op> layout;
    legacy_format_ = node.exists && node.data == kLegacyRootMarker;
    if (!node.exists) {
      if (!options_.fence) {
        return absl::NotFoundError(absl::StrCat(
            Description(), ": there is no state store at ", root,
            " (a read-only store does not create one; open it with fence=true first)"));
      }
      // Ancestors first, one by one (another store may be creating them too).
      for (size_t slash = root.find('/', 1); slash != std::string::npos;
           slash = root.find('/', slash + 1)) {
        const std::string ancestor = root.substr(0, slash);
        absl::StatusOr<ZkClient::MultiResult> r =
            client_->Multi({Op::Create(ancestor, "")}, deadline);
        if (!r.ok()) return r.status();
        if (r->rc != ZOK && r->rc != ZNODEEXISTS) {
          return absl::Status(
              zk::CodeForZk(r->rc),
              absl::StrCat(Description(), ": creating ", ancestor, ": ", client_->Describe(r->rc)));
        }
      }
      layout.push_back(Op::Create(root, std::string(kRootMarker)));
    } else if (node.data != kRootMarker && !legacy_format_) {
      if (!node.data.empty() || node.num_children != 0 || !options_.fence) {
        return absl::FailedPreconditionError(absl::StrCat(
            Description(), ": ", root, " exists but is not a Weft state store (its data is '",
            absl::CHexEscape(node.data.substr(0, 64)), node.data.size() > 64 ? "..." : "",
            "' and it has ", node.num_children, " children; expected '", kRootMarker, "')"));
      }
      // An empty node (e.g. made by an operator for its ACL): adopt it.
      layout.push_back(Op::Set(root, std::string(kRootMarker), node.version));
    }
    if (!layout.empty()) {
      layout.push_back(Op::Create(apps_, ""));
      layout.push_back(Op::Create(keys_, ""));
      layout.push_back(Op::Create(epoch_, EncodeEpoch(0)));
      layout.push_back(Op::Create(fence_, ""));
      absl::StatusOr<ZkClient::MultiResult> r = client_->Multi(layout, deadline);
      if (!r.ok()) return r.status();
      if (r->rc != ZOK) {
        if (r->failed_op == 0 && (r->rc == ZNODEEXISTS || r->rc == ZBADVERSION)) {
          continue;  // Another store created or adopted the root meanwhile: check it again.
        }
        return absl::Status(zk::CodeForZk(r->rc),
                            absl::StrCat(Description(), ": creating the layout under ", root, ": ",
                                         client_->Describe(r->rc)));
      }
      weft::log::Info("state_store_created", {{"store", Description()}});
    }
    absl::StatusOr<std::vector<std::optional<std::vector<std::string>>>> children =
        client_->GetChildren({root}, deadline);
    if (!children.ok()) return children.status();
    if (!(*children)[0].has_value()) continue;  // Removed meanwhile.
    std::vector<std::string> missing;
    for (absl::string_view child : kChildren) {
      const std::vector<std::string>& names = *(*children)[0];
      if (std::find(names.begin(), names.end(), child) == names.end()) {
        missing.push_back(absl::StrCat(root, "/", child));
      }
    }
    if (!missing.empty()) {
      return absl::DataLossError(
          absl::StrCat(Description(), ": the store is damaged: ", absl::StrJoin(missing, ", "),
                       missing.size() == 1 ? " is" : " are", " missing"));
    }
    return absl::OkStatus();
  }
  return absl::AbortedError(
      absl::StrCat(Description(), ": ", root, " kept changing while being checked"));
}

absl::Status ZkBackend::CheckWritable(absl::string_view what) const {
  if (fence_version_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(Description(), ": ", what, ": the store was opened read-only (fence=false)"));
  }
  if (fenced_) return Fenced(what, /*unknown=*/false);
  return absl::OkStatus();
}

absl::Status ZkBackend::CheckSize(absl::string_view what, std::vector<Op> ops) const {
  ops.insert(ops.begin(), Op::Check(fence_, fence_version_));
  const size_t bytes = client_->RequestBytes(ops);
  if (bytes > options_.max_request_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the ZooKeeper transaction would be ", bytes,
                     " bytes, over the limit of ", options_.max_request_bytes,
                     " bytes per request (the servers' jute.maxbuffer); the record is too large"));
  }
  return absl::OkStatus();
}

absl::Status ZkBackend::Fenced(absl::string_view what, bool unknown) const {
  const std::string holder = fenced_by_.empty() ? ""
                                                : absl::StrCat(" (", fence_, " now names '",
                                                               absl::CHexEscape(fenced_by_), "')");
  return absl::FailedPreconditionError(absl::StrCat(
      Description(), ": ", what, ": fenced: another ResourceManager became active", holder,
      "; this store can no longer write (reopen it to take over again)",
      unknown ? "; an interrupted earlier attempt of this call may have been applied before the "
                "takeover"
              : ""));
}

void ZkBackend::BecomeFenced(absl::Time deadline) {
  fenced_ = true;
  absl::StatusOr<std::vector<ZkClient::Node>> nodes = client_->Get({fence_}, deadline);
  if (nodes.ok() && (*nodes)[0].exists) {
    fenced_by_ = (*nodes)[0].data;
  } else if (nodes.ok()) {
    fenced_by_ = "(nothing: the fence node is gone)";
  }
  weft::log::Warn("state_store_fenced", {{"store", Description()},
                                         {"identity", options_.identity},
                                         {"fence_version", fence_version_},
                                         {"now_active", fenced_by_}});
}

absl::Status ZkBackend::Mutate(absl::string_view what, Planner plan) {
  if (absl::Status s = CheckWritable(what); !s.ok()) return s;
  const absl::Time deadline = Deadline();
  bool unknown = false;    // a transaction of this call got no answer: it may have been applied
  bool committed = false;  // a transaction of this call was applied (a call in several)
  int conflicts = 0;
  absl::Status last = absl::UnavailableError("the call's time ran out");
  auto unreachable = [&](const absl::Status& s) {
    return absl::UnavailableError(absl::StrCat(
        Description(), ": ", what, ": ", s.message(),
        unknown || committed
            ? "; the write may or may not have been applied (repeating the call is safe)"
            : "; the write was not applied"));
  };
  for (int round = 0;; ++round) {
    if (round > 0 && absl::Now() >= deadline) return unreachable(last);
    if (absl::Status s = client_->Connect(deadline); !s.ok()) return unreachable(s);
    absl::StatusOr<Plan> plan_or = plan(unknown || committed, deadline);
    if (!plan_or.ok()) {
      if (absl::IsUnavailable(plan_or.status())) {
        last = plan_or.status();
        continue;
      }
      if (plan_or.status().code() == absl::StatusCode::kDataLoss) return plan_or.status();
      return Prefixed(plan_or.status(), what);
    }
    Plan& p = *plan_or;
    if (p.ops.empty()) return p.result;
    std::vector<Op> ops;
    ops.reserve(p.ops.size() + 1);
    ops.push_back(Op::Check(fence_, fence_version_));
    for (Op& op : p.ops) ops.push_back(std::move(op));
    absl::StatusOr<ZkClient::MultiResult> r =
        client_->Multi(ops, deadline, options_.max_request_bytes);
    if (!r.ok()) {
      if (absl::IsUnavailable(r.status())) {
        unknown = true;
        last = r.status();
        continue;
      }
      return Prefixed(r.status(), what);
    }
    if (r->rc == ZOK) {
      if (p.again) {
        committed = true;
        continue;
      }
      return p.result;
    }
    if (r->failed_op == 0) {
      BecomeFenced(deadline);
      return Fenced(what, unknown);
    }
    // The store changed between this round's reads and its transaction: plan again.
    if (++conflicts > kMaxConflicts) {
      return absl::AbortedError(
          absl::StrCat(Description(), ": ", what, ": ", ops[r->failed_op].path,
                       " keeps changing under this store (", client_->Describe(r->rc), ")"));
    }
  }
}

absl::Status ZkBackend::Migrate() {
  const std::string what = "migrating the store to the proto record format";
  size_t legacy_nodes = 0;  // as found by the first round
  bool first_round = true;
  absl::Status status = Mutate(what, [&](bool, absl::Time deadline) -> absl::StatusOr<Plan> {
    absl::StatusOr<std::vector<ZkClient::Node>> nodes = client_->Get({options_.root}, deadline);
    if (!nodes.ok()) return nodes.status();
    const ZkClient::Node& root = (*nodes)[0];
    Plan plan;
    if (root.exists && root.data == kRootMarker) return plan;  // Done (an answer was lost).
    if (!root.exists || root.data != kLegacyRootMarker) {
      return Corrupt(options_.root, "changed while the store was being migrated");
    }
    std::vector<Op> rewrites;
    absl::StatusOr<RmState> state = LoadOnce(&rewrites);
    if (!state.ok()) return state.status();
    if (absl::Status s = ValidateStoredState(Description(), *state); !s.ok()) return s;
    if (first_round) legacy_nodes = rewrites.size();
    first_round = false;
    // As many rewrites as fit in one transaction; the marker goes with the last of them, so a
    // store is format 2 only once every record is a proto.
    rewrites.push_back(Op::Set(options_.root, std::string(kRootMarker), root.version));
    std::vector<Op> probe = {Op::Check(fence_, fence_version_)};
    for (Op& op : rewrites) {
      probe.push_back(op);
      if (client_->RequestBytes(probe) > options_.max_request_bytes) {
        if (plan.ops.empty()) {
          return absl::FailedPreconditionError(
              absl::StrCat(op.path, ": its record, rewritten, would be over the limit of ",
                           options_.max_request_bytes, " bytes per request"));
        }
        plan.again = true;
        break;
      }
      plan.ops.push_back(std::move(op));
    }
    return plan;
  });
  if (!status.ok()) return status;
  legacy_format_ = false;
  weft::log::Info("state_store_migrated",
                  {{"store", Description()},
                   {"from", std::string(kLegacyRootMarker)},
                   {"to", std::string(kRootMarker)},
                   {"rewritten_nodes", static_cast<int64_t>(legacy_nodes)}});
  return absl::OkStatus();
}

absl::StatusOr<RmState> ZkBackend::ReadAll() {
  absl::StatusOr<RmState> state;
  absl::Status status = Retrying(Deadline(), [&]() -> absl::Status {
    state = LoadOnce();
    return state.status();
  });
  if (!status.ok()) {
    return absl::StartsWith(status.message(), Description()) ? status : Prefixed(status, "loading");
  }
  return state;
}

absl::StatusOr<RmState> ZkBackend::LoadOnce(std::vector<Op>* rewrites) {
  RmState state;
  // Round 1: what exists.
  absl::StatusOr<std::vector<std::optional<std::vector<std::string>>>> lists =
      client_->GetChildren({apps_, keys_, node_admin_}, Deadline());
  if (!lists.ok()) return lists.status();
  if (!(*lists)[0].has_value()) return Corrupt(apps_, "missing");
  if (!(*lists)[1].has_value()) return Corrupt(keys_, "missing");
  std::vector<std::string> app_paths, key_paths, node_admin_paths;
  for (const std::string& name : *(*lists)[0]) app_paths.push_back(absl::StrCat(apps_, "/", name));
  for (const std::string& name : *(*lists)[1]) key_paths.push_back(absl::StrCat(keys_, "/", name));
  if ((*lists)[2].has_value()) {  // absent until the first node admin record
    for (const std::string& name : *(*lists)[2])
      node_admin_paths.push_back(absl::StrCat(node_admin_, "/", name));
  }

  // Round 2: the applications, their attempts' names, the keys, the node admin records and the
  // epoch.
  std::vector<std::string> reads = app_paths;
  reads.insert(reads.end(), key_paths.begin(), key_paths.end());
  reads.insert(reads.end(), node_admin_paths.begin(), node_admin_paths.end());
  reads.push_back(epoch_);
  const absl::Time deadline = Deadline();
  absl::StatusOr<std::vector<ZkClient::Node>> nodes = client_->Get(reads, deadline);
  if (!nodes.ok()) return nodes.status();
  absl::StatusOr<std::vector<std::optional<std::vector<std::string>>>> attempt_lists =
      client_->GetChildren(app_paths, deadline);
  if (!attempt_lists.ok()) return attempt_lists.status();

  const ZkClient::Node& epoch = nodes->back();
  if (!epoch.exists) return Corrupt(epoch_, "missing");
  bool legacy = false;
  absl::StatusOr<int64_t> epoch_value =
      zk::legacy::DecodeAnyEpoch(epoch.data, legacy_format_, legacy);
  if (!epoch_value.ok()) return Corrupt(epoch_, epoch_value.status().message());
  state.epoch = *epoch_value;
  // Rewrites a node just decoded from the pre-proto format as `data`.
  auto rewrite = [&](const std::string& path, std::string data, int32_t version) {
    if (legacy && rewrites != nullptr) rewrites->push_back(Op::Set(path, std::move(data), version));
  };
  rewrite(epoch_, EncodeEpoch(state.epoch), epoch.version);

  std::vector<std::string> attempt_paths;
  std::vector<std::string> attempt_app_ids;  // the app_id each attempt path belongs to
  for (size_t i = 0; i < app_paths.size(); ++i) {
    const ZkClient::Node& node = (*nodes)[i];
    if (!node.exists) continue;  // Removed since round 1.
    const std::string& path = app_paths[i];
    absl::StatusOr<ApplicationRecord> app =
        zk::legacy::DecodeAnyApplication(node.data, legacy_format_, legacy);
    if (!app.ok()) return Corrupt(path, app.status().message());
    if (AppPath(app->app_id) != path) {
      return Corrupt(path, absl::StrCat("holds application '", absl::CHexEscape(app->app_id),
                                        "', which belongs at ", AppPath(app->app_id)));
    }
    rewrite(path, EncodeApplication(*app), node.version);
    if ((*attempt_lists)[i].has_value()) {
      for (const std::string& name : *(*attempt_lists)[i]) {
        attempt_paths.push_back(absl::StrCat(path, "/", name));
        attempt_app_ids.push_back(app->app_id);
      }
    }
    state.apps.push_back(*std::move(app));
  }
  for (size_t i = 0; i < key_paths.size(); ++i) {
    const ZkClient::Node& node = (*nodes)[app_paths.size() + i];
    if (!node.exists) continue;
    const std::string& path = key_paths[i];
    absl::StatusOr<MasterKeyRecord> key =
        zk::legacy::DecodeAnyMasterKey(node.data, legacy_format_, legacy);
    if (!key.ok()) return Corrupt(path, key.status().message());
    if (KeyPath(key->purpose, key->key_id) != path) {
      return Corrupt(
          path, absl::StrCat("holds master key ", absl::CHexEscape(key->purpose), "/", key->key_id,
                             ", which belongs at ", KeyPath(key->purpose, key->key_id)));
    }
    rewrite(path, EncodeMasterKey(*key), node.version);
    state.keys.push_back(*std::move(key));
  }
  for (size_t i = 0; i < node_admin_paths.size(); ++i) {
    const ZkClient::Node& node = (*nodes)[app_paths.size() + key_paths.size() + i];
    if (!node.exists) continue;
    const std::string& path = node_admin_paths[i];
    absl::StatusOr<NodeAdminRecord> record = DecodeNodeAdmin(node.data);
    if (!record.ok()) return Corrupt(path, record.status().message());
    if (NodeAdminPath(record->node) != path) {
      return Corrupt(path, absl::StrCat("holds the admin record of node '",
                                        absl::CHexEscape(record->node), "', which belongs at ",
                                        NodeAdminPath(record->node)));
    }
    state.node_admin.push_back(*std::move(record));
  }

  // Round 3: the attempts.
  absl::StatusOr<std::vector<ZkClient::Node>> attempts = client_->Get(attempt_paths, Deadline());
  if (!attempts.ok()) return attempts.status();
  for (size_t i = 0; i < attempt_paths.size(); ++i) {
    const ZkClient::Node& node = (*attempts)[i];
    if (!node.exists) continue;
    const std::string& path = attempt_paths[i];
    absl::StatusOr<AttemptRecord> attempt =
        zk::legacy::DecodeAnyAttempt(node.data, legacy_format_, legacy);
    if (!attempt.ok()) return Corrupt(path, attempt.status().message());
    if (attempt->app_id != attempt_app_ids[i] ||
        AttemptPath(attempt->app_id, attempt->attempt_id) != path) {
      return Corrupt(path, absl::StrCat("holds attempt ", attempt->attempt_id, " of application '",
                                        absl::CHexEscape(attempt->app_id), "', which belongs at ",
                                        AttemptPath(attempt->app_id, attempt->attempt_id)));
    }
    rewrite(path, EncodeAttempt(*attempt), node.version);
    state.attempts.push_back(*std::move(attempt));
  }

  return state;
}

absl::StatusOr<int64_t> ZkBackend::BumpEpoch() {
  int64_t planned = -1;  // the value this call's last transaction wrote
  absl::Status status =
      Mutate("bumping epoch", [&](bool resuming, absl::Time deadline) -> absl::StatusOr<Plan> {
        absl::StatusOr<std::vector<ZkClient::Node>> nodes = client_->Get({epoch_}, deadline);
        if (!nodes.ok()) return nodes.status();
        const ZkClient::Node& node = (*nodes)[0];
        if (!node.exists) return Corrupt(epoch_, "missing");
        bool legacy = false;
        absl::StatusOr<int64_t> epoch =
            zk::legacy::DecodeAnyEpoch(node.data, legacy_format_, legacy);
        if (!epoch.ok()) return Corrupt(epoch_, epoch.status().message());
        if (*epoch == INT64_MAX) return Corrupt(epoch_, "the epoch is at its maximum, 2^63-1");
        Plan plan;
        if (resuming && *epoch == planned) return plan;  // The lost answer was a success.
        planned = *epoch + 1;
        plan.ops.push_back(Op::Set(epoch_, EncodeEpoch(planned), node.version));
        return plan;
      });
  if (!status.ok()) return status;
  return planned;
}

absl::StatusOr<bool> ZkBackend::Commit(absl::string_view what, const std::vector<StateOp>& ops) {
  if (ops.size() == 1) {
    if (const auto* remove = std::get_if<RemoveApplicationOp>(&ops[0])) {
      return RemoveApplication(what, remove->app_id);
    }
  }
  // One transaction: a check of each node that must exist (an attempt's application), then each
  // put (a create or a set, as the node is found) and each key removal.
  struct Write {
    std::string path;
    std::optional<std::string> data;  // nullopt: delete the node
    bool must_exist = true;           // for a delete: false = nothing to do when it is gone
  };
  std::vector<std::string> required;
  std::vector<Write> writes;
  bool puts_node_admin = false;  // the parent node-admin node is made when missing
  for (const StateOp& op : ops) {
    if (const auto* put = std::get_if<PutApplicationOp>(&op)) {
      writes.push_back({AppPath(put->app.app_id), EncodeApplication(put->app)});
    } else if (const auto* put = std::get_if<PutAttemptOp>(&op)) {
      if (put->require_application) required.push_back(AppPath(put->attempt.app_id));
      writes.push_back(
          {AttemptPath(put->attempt.app_id, put->attempt.attempt_id), EncodeAttempt(put->attempt)});
    } else if (const auto* put = std::get_if<PutMasterKeyOp>(&op)) {
      writes.push_back({KeyPath(put->key.purpose, put->key.key_id), EncodeMasterKey(put->key)});
    } else if (const auto* remove = std::get_if<RemoveMasterKeyOp>(&op)) {
      writes.push_back({KeyPath(remove->purpose, remove->key_id), std::nullopt});
    } else if (const auto* put = std::get_if<PutNodeAdminOp>(&op)) {
      writes.push_back({NodeAdminPath(put->node.node), EncodeNodeAdmin(put->node)});
      puts_node_admin = true;
    } else if (const auto* remove = std::get_if<RemoveNodeAdminOp>(&op)) {
      writes.push_back({NodeAdminPath(remove->node), std::nullopt, /*must_exist=*/false});
    } else {
      return absl::InternalError(absl::StrCat(what, ": a removal of an application not alone"));
    }
  }
  std::vector<Op> largest;  // the largest transaction the plan below can make
  std::vector<std::string> reads = required;
  for (const std::string& path : required) largest.push_back(Op::Check(path, -1));
  if (puts_node_admin) largest.push_back(Op::Create(node_admin_, ""));
  for (const Write& write : writes) {
    largest.push_back(write.data ? Op::Create(write.path, *write.data) : Op::Delete(write.path));
    reads.push_back(write.path);
  }
  if (puts_node_admin) reads.push_back(node_admin_);
  if (absl::Status s = CheckSize(what, largest); !s.ok()) return s;
  bool missing = false;
  absl::Status status =
      Mutate(what, [&](bool resuming, absl::Time deadline) -> absl::StatusOr<Plan> {
        missing = false;
        absl::StatusOr<std::vector<ZkClient::Node>> nodes = client_->Get(reads, deadline);
        if (!nodes.ok()) return nodes.status();
        Plan plan;
        for (size_t i = 0; i < required.size(); ++i) {
          if (!(*nodes)[i].exists) {
            missing = true;
            return plan;
          }
          plan.ops.push_back(Op::Check(required[i], -1));
        }
        if (puts_node_admin && !nodes->back().exists)
          plan.ops.push_back(Op::Create(node_admin_, ""));
        for (size_t i = 0; i < writes.size(); ++i) {
          const Write& write = writes[i];
          const bool exists = (*nodes)[required.size() + i].exists;
          if (write.data) {
            plan.ops.push_back(exists ? Op::Set(write.path, *write.data)
                                      : Op::Create(write.path, *write.data));
          } else if (exists) {
            plan.ops.push_back(Op::Delete(write.path));
          } else if (!write.must_exist) {
            continue;  // already gone: nothing to remove
          } else if (!resuming) {  // Gone, unless this call's own earlier transaction deleted it.
            missing = true;
            plan.ops.clear();
            return plan;
          }
        }
        return plan;
      });
  if (!status.ok()) return status;
  return !missing;
}

absl::StatusOr<bool> ZkBackend::RemoveApplication(absl::string_view what,
                                                  absl::string_view app_id) {
  const std::string app_path = app_id.empty() ? "" : AppPath(app_id);
  bool missing = false;
  absl::Status status =
      Mutate(what, [&](bool resuming, absl::Time deadline) -> absl::StatusOr<Plan> {
        Plan plan;
        missing = app_id.empty();  // Never stored (and not a node name).
        if (missing) return plan;
        absl::StatusOr<std::vector<std::optional<std::vector<std::string>>>> children =
            client_->GetChildren({app_path}, deadline);
        if (!children.ok()) return children.status();
        if (!(*children)[0].has_value()) {
          // Gone: not stored, unless this call's own earlier transaction removed it.
          missing = !resuming;
          return plan;
        }
        std::vector<Op> probe = {Op::Check(fence_, fence_version_), Op::Delete(app_path)};
        for (const std::string& name : *(*children)[0]) {
          probe.push_back(Op::Delete(absl::StrCat(app_path, "/", name)));
          if (client_->RequestBytes(probe) > options_.max_request_bytes) {
            plan.again = true;  // Delete these attempts now, the rest (and the app) next round.
            break;
          }
          plan.ops.push_back(probe.back());
        }
        if (!plan.again) plan.ops.push_back(Op::Delete(app_path));
        return plan;
      });
  if (!status.ok()) return status;
  return !missing;
}

absl::Status ZkBackend::Close() {
  if (client_ != nullptr) {
    client_.reset();  // Ends the session.
    if (opened_) weft::log::Info("state_store_closed", {{"store", Description()}});
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<StateStore>> OpenZooKeeperStore(ZkStoreOptions options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  if (options.identity.empty()) options.identity = DefaultIdentity();
  absl::StatusOr<std::unique_ptr<ZkClient>> client =
      ZkClient::Create(options.connect, options.session_timeout_ms, options.auth);
  if (!client.ok()) {
    return absl::Status(client.status().code(),
                        absl::StrCat("ZooKeeper state store '", options.connect, options.root,
                                     "': ", client.status().message()));
  }
  auto backend = std::make_unique<ZkBackend>(std::move(options), *std::move(client));
  if (absl::Status s = backend->Init(); !s.ok()) return s;
  return NewBackedStateStore(std::move(backend));
}

}  // namespace weft::store
