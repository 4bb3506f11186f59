// Copyright Weft authors. The distributed state store: the RM's state in ZooKeeper, shared by
// the active and standby RMs of an HA pair and fenced so that only the newest active can write.
#ifndef WEFT_STORE_ZK_STORE_H_
#define WEFT_STORE_ZK_STORE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "store/state_store.h"

namespace weft::store {

struct ZkStoreOptions {
  // The ZooKeeper ensemble, as the C client takes it: "host:port,host:port[/chroot]".
  std::string connect;
  // The store's node: absolute, without a trailing '/', not "/". Missing ancestors are created.
  std::string root = "/weft/rm-state";
  // The ZooKeeper digest credential "user:password" (ZkClient::Create): the store's nodes are
  // then readable and writable with it only. Empty: open to every client of the ensemble (tests
  // and tools only; `weft rm` refuses to run so).
  std::string auth;
  // The ZooKeeper session timeout asked of the server, in ms (the server clamps it to its
  // minSessionTimeout..maxSessionTimeout). It also bounds every call; see "Failures" below.
  int session_timeout_ms = 10000;
  // Who this store writes for, e.g. "rm1.example.com:8030"; recorded in the fence node and
  // named in a deposed active's "fenced" errors. Empty: "<hostname>:<pid>". No newlines.
  std::string identity;
  // true: this store becomes the one store that may write (see "Fencing"). false: read-only, for
  // a standby or a tool: Load() works, every mutating call returns FailedPrecondition.
  bool fence = true;
  // The server's jute.maxbuffer (bytes): a write whose request would be larger is refused with
  // InvalidArgument. Raise it only together with the servers' (and every client's) setting.
  size_t max_request_bytes = 0xfffff;
};

// Opens (creating if missing) the state store under `options.root` and, with `fence`, makes this
// store the active writer. Implements the StateStore contract (store/state_store.h) with these
// specifics:
//
// Layout (docs/reliability.md, "The ZooKeeper state store"):
//   <root>                       "weft-rm-state 2" (format marker)
//   <root>/fence                 the active writer's identity (see Fencing)
//   <root>/epoch                 the epoch, a StoredEpoch
//   <root>/apps/<app>            an ApplicationRecord, a StoredApplication
//   <root>/apps/<app>/<n>        its attempt n (decimal), a StoredAttempt
//   <root>/keys/<purpose>.<id>   a MasterKeyRecord (id decimal, may be negative), a StoredMasterKey
// where <app> is the app_id escaped by zk::EscapeNodeName() (store/zk_names.h) and each record
// is its serialized proto (proto/weft/v1/state_store.proto, store/state_records.h).
//
// Stores of the pre-proto format (marker "weft-rm-state 1", records as store/zk_legacy_format.h
// describes) still open: a read-only store reads them as they are; opening with `fence`
// migrates them right after taking the fence, rewriting every old node as its proto in fenced
// transactions, the marker last (an interrupted migration is finished by the next opener).
// Opening fails with DataLoss, rewriting nothing, if an old record is damaged.
//
// Each mutating call is one ZooKeeper multi-operation
// transaction (all or nothing), committed by a quorum and fsynced to the servers' transaction
// logs before it returns OK.
//
// Fencing (the store's own, not a timeout): opening with `fence` sets the data of
// <root>/fence, which increments its version, and remembers that version. Every transaction of
// every mutating call starts with a check that <root>/fence still has that version. When
// another store opens the same root with `fence` (a new active RM, in any process), the version
// moves on and ZooKeeper itself refuses every later transaction of the old store, whole: its
// writes fail with FailedPrecondition "...fenced: another ResourceManager became active (...)"
// and change nothing; it stays fenced until reopened. Whatever the old store committed before
// the new one opened, the new one's Load() sees (ZooKeeper orders the fence write after it).
// The newest opener always wins: electing the active is the caller's job (e.g. a ZooKeeper
// leader election); fencing only makes a deposed active harmless.
//
// Sizes: a call whose transaction would exceed `max_request_bytes` (by default 1 MiB - 1, the
// servers' default jute.maxbuffer), e.g. an application with a 1 MB submission, returns
// InvalidArgument "...would be N bytes, over the limit of M bytes..." and writes nothing.
// Removing an application with thousands of attempts deletes its attempts in several
// transactions, the application node last (the one call that is not atomic; repeating it after a
// failure finishes it).
//
// Failures: when ZooKeeper cannot be reached (server down, network partition, session expired)
// a call returns Unavailable naming the reason, within about `session_timeout_ms` (each of
// Load()'s four rounds of pipelined reads gets that long); nothing crashes or hangs. The next call
// reconnects, starting a new session if the old one expired (fencing does not depend on
// sessions). An Unavailable from a mutating call means its outcome is unknown: the transaction
// was applied entirely or not at all. Within the time bound the store resolves this itself
// (retrying, which is safe: Put* are idempotent, a repeated remove of what this call removed
// succeeds, BumpEpoch re-reads the epoch); after it, the caller may repeat the call (a repeated
// BumpEpoch may skip a number, which keeps epochs unique and increasing).
//
// Reads: Load() reads node by node (pipelined), not in one snapshot; it is consistent when the
// only writer is this store, or a deposed one.
//
// Errors of OpenZooKeeperStore, all naming the connect string and root:
//  - InvalidArgument for bad options (empty connect, a relative root, identity with a newline);
//  - Unavailable if no server answers within `session_timeout_ms`;
//  - FailedPrecondition if <root> exists but is not a Weft state store (other data);
//  - NotFound if a read-only store (fence=false) finds no store at <root>;
//  - DataLoss if <root> is a Weft store with nodes missing; PermissionDenied for ACL refusals.
//
// Thread-compatible, like every StateStore.
absl::StatusOr<std::unique_ptr<StateStore>> OpenZooKeeperStore(ZkStoreOptions options);

}  // namespace weft::store

#endif  // WEFT_STORE_ZK_STORE_H_
