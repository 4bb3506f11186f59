// Copyright Weft authors.
#include "federation/store/zk_federation_store.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "store/zk_names.h"

namespace weft::federation {
namespace {

using Op = store::zk::ZkClient::Op;

absl::Status ValidateOptions(const ZkFederationStore::Options& options) {
  const std::string what =
      absl::StrCat("ZooKeeper federation store 'zk://", options.connect, options.root, "'");
  if (options.connect.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": no servers"));
  }
  const std::string& root = options.root;
  bool bad = root.size() < 2 || root[0] != '/' || root.back() == '/';
  if (!bad) {
    const std::vector<absl::string_view> parts =
        absl::StrSplit(absl::string_view(root).substr(1), '/');
    bad = parts[0] == "zookeeper";  // ZooKeeper's own
    for (absl::string_view part : parts) {
      bad = bad || part.empty() || part == "." || part == ".." || part.find('\0') != part.npos;
    }
  }
  if (bad) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": root '", absl::CHexEscape(root),
        "' must be an absolute path other than \"/\" without empty, '.' or '..' components or a "
        "trailing '/', outside /zookeeper"));
  }
  if (options.session_timeout_ms <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": session timeout ", options.session_timeout_ms, " ms is not positive"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ZkFederationStore>> ZkFederationStore::Open(const Options& options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<ZkClient>> client =
      ZkClient::Create(options.connect, options.session_timeout_ms, options.auth);
  if (!client.ok()) {
    return absl::Status(client.status().code(),
                        absl::StrCat("federation store 'zk://", options.connect, options.root,
                                     "': ", client.status().message()));
  }
  std::unique_ptr<ZkFederationStore> store(new ZkFederationStore(options, *std::move(client)));
  absl::MutexLock lock(&store->mu_);
  absl::Status s =
      store->Retrying("opening", [&](bool, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                                     store->mu_) { return store->EnsureLayout(deadline); });
  if (!s.ok()) return s;
  // Nodes an earlier Weft created open to everyone are closed to this store's credential.
  if (!options.auth.empty()) {
    int64_t closed = 0;
    s = store->Retrying("closing the ACLs an earlier Weft left open",
                        [&](bool, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                            store->mu_) -> absl::Status {
                          absl::StatusOr<int64_t> n =
                              store->client_->CloseOpenAclsUnder(options.root, deadline);
                          if (!n.ok()) return n.status();
                          closed += *n;
                          return absl::OkStatus();
                        });
    if (!s.ok()) return s;
    if (closed > 0)
      weft::log::Warn("federation_store_acls_closed",
                      {{"store", store->Describe()},
                       {"nodes", closed},
                       {"why", "created open to everyone by an earlier Weft"}});
  }
  return store;
}

std::string ZkFederationStore::Dir(Table table) const {
  return absl::StrCat(options_.root, "/", InfoOf(table).zk_dir);
}

std::string ZkFederationStore::Path(Table table, absl::string_view key) const {
  return absl::StrCat(Dir(table), "/", store::zk::EscapeNodeName(key));
}

absl::Status ZkFederationStore::Retrying(
    absl::string_view what,
    absl::FunctionRef<absl::Status(bool resuming, absl::Time deadline)> attempt) {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(options_.session_timeout_ms);
  bool resuming = false;
  absl::Status status;
  for (;;) {
    status = client_->Connect(deadline);
    if (status.ok()) status = attempt(resuming, deadline);
    if (!absl::IsUnavailable(status) || absl::Now() >= deadline) break;
    resuming = true;
  }
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("federation store '", Describe(), "': ", what,
                                                  ": ", status.message()));
}

absl::StatusOr<int> ZkFederationStore::Apply(Op op, absl::Time deadline) {
  absl::StatusOr<ZkClient::MultiResult> result = client_->Multi({std::move(op)}, deadline);
  if (!result.ok()) return result.status();
  return result->rc;
}

absl::Status ZkFederationStore::ZkError(absl::string_view path, int rc) const {
  return absl::Status(store::zk::CodeForZk(rc), absl::StrCat(path, ": ", client_->Describe(rc)));
}

absl::Status ZkFederationStore::EnsureLayout(absl::Time deadline) {
  std::vector<std::string> paths;
  for (size_t slash = options_.root.find('/', 1); slash != std::string::npos;
       slash = options_.root.find('/', slash + 1)) {
    paths.push_back(options_.root.substr(0, slash));
  }
  paths.push_back(options_.root);
  paths.push_back(options_.root + "/router");
  for (Table table : kAllTables) paths.push_back(Dir(table));
  absl::StatusOr<std::vector<ZkClient::Node>> nodes = client_->Get(paths, deadline);
  if (!nodes.ok()) return nodes.status();
  for (size_t i = 0; i < paths.size(); ++i) {  // Parents before children.
    if ((*nodes)[i].exists) continue;
    absl::StatusOr<int> rc = Apply(Op::Create(paths[i], ""), deadline);
    if (!rc.ok()) return rc.status();
    if (*rc != ZOK && *rc != ZNODEEXISTS) return ZkError(paths[i], *rc);
  }
  return absl::OkStatus();
}

absl::Status ZkFederationStore::PutRecord(Table table, const Row& row) {
  const std::string path = Path(table, row.key);
  absl::MutexLock lock(&mu_);
  return Retrying(
      "writing", [&](bool, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        for (;;) {
          absl::StatusOr<int> rc = Apply(Op::Set(path, row.record), deadline);
          if (!rc.ok() || *rc == ZOK) return rc.status();
          if (*rc != ZNONODE) return ZkError(path, *rc);
          rc = Apply(Op::Create(path, row.record), deadline);
          if (!rc.ok() || *rc == ZOK) return rc.status();
          if (*rc != ZNODEEXISTS) return ZkError(path, *rc);
          // Created by another writer meanwhile: set it.
        }
      });
}

absl::StatusOr<RecordFederationStore::InsertResult> ZkFederationStore::InsertRecord(
    Table table, const Row& row) {
  const std::string path = Path(table, row.key);
  absl::MutexLock lock(&mu_);
  InsertResult result{row.record, true};
  absl::Status status = Retrying(
      "inserting",
      [&](bool resuming, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        for (;;) {
          absl::StatusOr<int> rc = Apply(Op::Create(path, row.record), deadline);
          if (!rc.ok()) return rc.status();
          if (*rc == ZOK) return absl::OkStatus();
          if (*rc != ZNODEEXISTS) return ZkError(path, *rc);
          absl::StatusOr<std::vector<ZkClient::Node>> node = client_->Get({path}, deadline);
          if (!node.ok()) return node.status();
          if (!(*node)[0].exists) continue;  // Deleted meanwhile: try again.
          result.record = std::move((*node)[0].data);
          // An earlier attempt whose answer was lost may have created it.
          result.inserted = resuming && result.record == row.record;
          return absl::OkStatus();
        }
      });
  if (!status.ok()) return status;
  return result;
}

absl::StatusOr<bool> ZkFederationStore::ModifyRecord(Table table, absl::string_view key,
                                                     Updater update) {
  const std::string path = Path(table, key);
  absl::MutexLock lock(&mu_);
  bool found = false;
  absl::Status status = Retrying(
      "updating",
      [&](bool, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        for (;;) {
          absl::StatusOr<std::vector<ZkClient::Node>> node = client_->Get({path}, deadline);
          if (!node.ok()) return node.status();
          found = (*node)[0].exists;
          if (!found) return absl::OkStatus();
          absl::StatusOr<Row> row = update((*node)[0].data);
          if (!row.ok()) return row.status();
          absl::StatusOr<int> rc = Apply(Op::Set(path, row->record, (*node)[0].version), deadline);
          if (!rc.ok() || *rc == ZOK) return rc.status();
          // ZBADVERSION: another writer came first; ZNONODE: deleted. Read again.
          if (*rc != ZBADVERSION && *rc != ZNONODE) return ZkError(path, *rc);
        }
      });
  if (!status.ok()) return status;
  return found;
}

absl::StatusOr<std::optional<std::string>> ZkFederationStore::GetRecord(Table table,
                                                                        absl::string_view key) {
  const std::string path = Path(table, key);
  absl::MutexLock lock(&mu_);
  std::optional<std::string> record;
  absl::Status status = Retrying(
      "reading", [&](bool, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        absl::StatusOr<std::vector<ZkClient::Node>> node = client_->Get({path}, deadline);
        if (!node.ok()) return node.status();
        if ((*node)[0].exists) record = std::move((*node)[0].data);
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return record;
}

absl::StatusOr<std::vector<std::string>> ZkFederationStore::ListRecords(Table table,
                                                                        absl::string_view) {
  const std::string dir = Dir(table);
  absl::MutexLock lock(&mu_);
  std::vector<std::string> records;
  absl::Status status = Retrying(
      "listing", [&](bool, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        records.clear();
        absl::StatusOr<std::vector<std::optional<std::vector<std::string>>>> children =
            client_->GetChildren({dir}, deadline);
        if (!children.ok()) return children.status();
        if (!(*children)[0].has_value()) return ZkError(dir, ZNONODE);
        std::vector<std::string> paths;
        for (const std::string& name : *(*children)[0])
          paths.push_back(absl::StrCat(dir, "/", name));
        absl::StatusOr<std::vector<ZkClient::Node>> nodes = client_->Get(paths, deadline);
        if (!nodes.ok()) return nodes.status();
        for (ZkClient::Node& node : *nodes) {
          if (node.exists) records.push_back(std::move(node.data));  // Else deleted meanwhile.
        }
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return records;
}

absl::StatusOr<bool> ZkFederationStore::DeleteRecord(Table table, absl::string_view key) {
  const std::string path = Path(table, key);
  absl::MutexLock lock(&mu_);
  bool found = false;
  absl::Status status = Retrying("deleting",
                                 [&](bool resuming, absl::Time deadline)
                                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
                                       absl::StatusOr<int> rc = Apply(Op::Delete(path), deadline);
                                       if (!rc.ok()) return rc.status();
                                       if (*rc != ZOK && *rc != ZNONODE) return ZkError(path, *rc);
                                       // After a lost answer, ZNONODE may mean that the earlier
                                       // attempt deleted it.
                                       found = *rc == ZOK || resuming;
                                       return absl::OkStatus();
                                     });
  if (!status.ok()) return status;
  return found;
}

}  // namespace weft::federation
