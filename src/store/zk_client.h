// Copyright Weft authors. A ZooKeeper session through the C client (libzookeeper_mt) in which
// every call has a deadline, errors are absl::Status values with the reason, and an expired
// session is replaced by a new one. Internal to the ZooKeeper state store and the test harness
// (store/test_zookeeper.h); the RM's leader election may use it too.
#ifndef WEFT_STORE_ZK_CLIENT_H_
#define WEFT_STORE_ZK_CLIENT_H_

#include <zookeeper/zookeeper.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace weft::store::zk {

// The server's default jute.maxbuffer: the largest request packet (bytes, after its 4-byte
// length) a ZooKeeper server accepts. A larger one makes the server drop the connection.
inline constexpr size_t kDefaultMaxRequestBytes = 0xfffff;  // 1048575

// The absl code for a ZooKeeper return code: connection loss, operation timeout, an expired or
// closing session -> Unavailable; ZNONODE -> NotFound; ZNODEEXISTS -> AlreadyExists;
// ZBADVERSION, ZNOTEMPTY -> FailedPrecondition; ZNOAUTH, ZAUTHFAILED -> PermissionDenied;
// ZBADARGUMENTS, ZINVALIDACL -> InvalidArgument; others -> Internal.
absl::StatusCode CodeForZk(int rc);

// One session with a ZooKeeper ensemble. Creating it starts connecting in the background (the
// C client's threads); the calls wait for the connection, each until its deadline.
//
// Thread-compatible: one caller at a time (the C client's threads only update the connection
// state, under a lock).
class ZkClient {
 public:
  // `connect` is the C client's "host:port,host:port[/chroot]"; `session_timeout_ms` the session
  // timeout asked of the server (which clamps it to its min/max). InvalidArgument if the client
  // refuses `connect` (e.g. no port); never waits for the network.
  //
  // `digest_auth` is a ZooKeeper digest credential "user:password". Non-empty: every session
  // authenticates with it, and every node this client creates carries the creator-only ACL
  // (digest:user:hash, all permissions), so a client without the credential can neither read
  // nor change it (PermissionDenied). Empty: nodes are created open to everyone
  // (world:anyone), for tests and tools only; the daemons refuse to run without a credential.
  static absl::StatusOr<std::unique_ptr<ZkClient>> Create(absl::string_view connect,
                                                          int session_timeout_ms,
                                                          std::string digest_auth = "");

  // Closes the session (the server drops it at once rather than after the timeout). May block
  // for a few seconds when the server is connected but does not answer.
  ~ZkClient();
  ZkClient(const ZkClient&) = delete;
  ZkClient& operator=(const ZkClient&) = delete;

  // Returns once the session is connected. If the server declared the session expired (or
  // refused its authentication), first replaces it with a new session. Unavailable, with the
  // connection state and the C client's last error about these servers, if not connected by
  // `deadline`.
  absl::Status Connect(absl::Time deadline);

  // Whether the session is connected right now.
  bool connected() const;

  // The current session's id and password (e.g. for a test that expires the session by
  // attaching a second client to it and closing that one). Zero before the first connection.
  clientid_t client_id() const;

  const std::string& connect() const { return connect_; }

  // The session timeout the server granted (ms), once connected; 0 before.
  int negotiated_timeout_ms() const;

  // One node as read by Get().
  struct Node {
    bool exists = false;  // false: no such node (the other fields are empty)
    std::string data;
    int32_t version = 0;  // of the data
    int32_t num_children = 0;
    // The session id that owns the node if it is ephemeral, 0 for a persistent node.
    int64_t ephemeral_owner = 0;
  };

  // Reads the nodes at `paths`, sending every request before waiting for the first answer (one
  // round trip, however many paths). A missing node is a Node with exists=false; any other
  // failure fails the call: Unavailable when the connection is lost or `deadline` passes, the
  // code of CodeForZk() otherwise, naming the path.
  absl::StatusOr<std::vector<Node>> Get(absl::Span<const std::string> paths, absl::Time deadline);

  // Lists the children (names, unsorted) of the nodes at `paths`, pipelined like Get();
  // nullopt for a missing node.
  absl::StatusOr<std::vector<std::optional<std::vector<std::string>>>> GetChildren(
      absl::Span<const std::string> paths, absl::Time deadline);

  // One operation of a Multi() transaction. Created nodes are open to everyone (world:anyone,
  // all permissions) and persistent, except those of CreateEphemeral(), which ZooKeeper deletes
  // when the session that created them ends (closed or expired). A version of -1 matches any
  // version.
  struct Op {
    enum class Type { kCreate, kSet, kDelete, kCheck };
    static Op Create(std::string path, std::string data) {
      return {Type::kCreate, std::move(path), std::move(data), -1};
    }
    static Op CreateEphemeral(std::string path, std::string data) {
      return {Type::kCreate, std::move(path), std::move(data), -1, /*ephemeral=*/true};
    }
    static Op Set(std::string path, std::string data, int32_t version = -1) {
      return {Type::kSet, std::move(path), std::move(data), version};
    }
    static Op Delete(std::string path, int32_t version = -1) {
      return {Type::kDelete, std::move(path), "", version};
    }
    // Fails the transaction unless the node exists (and has `version`, unless -1).
    static Op Check(std::string path, int32_t version) {
      return {Type::kCheck, std::move(path), "", version};
    }

    Type type;
    std::string path;
    std::string data;
    int32_t version;
    bool ephemeral = false;  // kCreate only
  };

  struct MultiResult {
    // ZOK if every operation was applied. Otherwise none was, and `rc` is the ZooKeeper error
    // of the first operation that failed (e.g. ZBADVERSION, ZNONODE, ZNODEEXISTS), at index
    // `failed_op`.
    int rc = ZOK;
    int failed_op = -1;
    // After success: the new data version of the node of each kSet operation (in op order).
    std::vector<int32_t> set_versions;
  };

  // Applies `ops` atomically: all or none. A refusal by the server is a MultiResult (an OK
  // status). Unavailable when the connection is lost or `deadline` passes before the answer:
  // then the transaction may or may not have been applied, all or nothing. InvalidArgument if
  // `ops` is empty or its request would exceed `max_request_bytes` (RequestBytes()).
  absl::StatusOr<MultiResult> Multi(const std::vector<Op>& ops, absl::Time deadline,
                                    size_t max_request_bytes = kDefaultMaxRequestBytes);

  // An upper bound of the size in bytes of the Multi() request for `ops`, as the server's
  // jute.maxbuffer counts it (paths include this client's chroot).
  size_t RequestBytes(const std::vector<Op>& ops) const;

  // Closes the nodes an earlier Weft created open: every node at or below `root` whose ACL lets
  // anyone in (world:anyone) gets the creator-only ACL of this session's digest credential, as
  // the nodes this client creates have. Lists the tree one level at a time, each level's
  // requests pipelined, and closes it from the leaves up, `root` last: a `root` that is not open
  // (closed by a finished walk, or created closed) is not walked. Returns how many nodes it
  // closed. FailedPrecondition without a digest
  // credential; PermissionDenied when a node cannot be listed or changed (closed to another
  // credential); Unavailable past `deadline`; Aborted when a node's ACL changed during the walk.
  absl::StatusOr<int64_t> CloseOpenAclsUnder(const std::string& root, absl::Time deadline);

  // "<zerror(rc)>" plus, for connection problems, the connection state and the C client's last
  // error about these servers, e.g. "connection loss (state CONNECTING; last client error:
  // ... Connection refused ...)".
  std::string Describe(int rc) const;

 private:
  ZkClient(std::string connect, int session_timeout_ms, std::string digest_auth);

  // Starts a new session (a new handle), closing the old one.
  absl::Status NewHandle();
  // For each of `paths`, its ACL's version when the ACL lets anyone in; nullopt when it does
  // not, or the node is missing. Pipelined like Get().
  absl::StatusOr<std::vector<std::optional<int32_t>>> OpenAcls(absl::Span<const std::string> paths,
                                                              absl::Time deadline);
  // CloseOpenAclsUnder's work on one level: closes the open nodes among `paths` (a missing one
  // is skipped) and returns how many.
  absl::StatusOr<int64_t> CloseOpenAcls(absl::Span<const std::string> paths, absl::Time deadline);
  // The C client's watcher: records session state changes.
  // Unavailable unless the session can take requests (exists and has not expired).
  absl::Status CheckSendable() const;
  static void OnWatch(zhandle_t* zh, int type, int state, const char* path, void* context);
  std::string StateName() const;

  const std::string connect_;
  const std::string chroot_;
  const int session_timeout_ms_;
  const std::string digest_auth_;  // "user:password", or empty (open ACL)
  zhandle_t* handle_ = nullptr;

  mutable absl::Mutex mu_;
  int state_ ABSL_GUARDED_BY(mu_) = 0;  // the last session state the watcher reported
};

}  // namespace weft::store::zk

#endif  // WEFT_STORE_ZK_CLIENT_H_
