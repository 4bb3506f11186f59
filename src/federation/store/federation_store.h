// Copyright Weft authors. The federation state store (seed 004; YARN's FederationStateStore):
// sub-cluster membership, application and reservation homes, per-queue policies, and the
// router's token state. One interface, several back-ends (memory, SQLite, ZooKeeper,
// PostgreSQL), one conformance suite (federation_store_conformance_test.cc).
//
// Contract shared by every back-end:
// - Thread-safe: routers and AMRMProxies call it from many threads.
// - Durable: an OK return means the write survives the caller's and the store's crash (the
//   memory store excepted, which is for tests and the simulator).
// - Bad input (an empty or malformed id, a negative weight, an unknown state) is refused with
//   InvalidArgument naming the field and leaves the store unchanged.
// - A record that is not there: NotFound naming it. A back-end that cannot be reached:
//   Unavailable with the back-end's own message (callers retry or use their cached view).
#ifndef WEFT_FEDERATION_STORE_FEDERATION_STORE_H_
#define WEFT_FEDERATION_STORE_FEDERATION_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "weft/v1/federation.pb.h"

namespace weft::federation {

// A sub-cluster id: 1..64 characters of [A-Za-z0-9._-]. InvalidArgument naming it otherwise.
absl::Status ValidateSubClusterId(absl::string_view id);

// Whether a sub-cluster may be chosen at `now_ms` (ms since the Unix epoch): SC_RUNNING and
// heard from within `expiry_ms` (YARN's membership expiry): now_ms - last_heartbeat_ms <=
// expiry_ms, a heartbeat stamped after `now_ms` (clock skew) counting as fresh and a negative
// `expiry_ms` making nothing usable. Routers, AMRMProxies and the GPG all use this one rule.
bool IsSubClusterUsable(const v1::SubClusterInfo& info, int64_t now_ms, int64_t expiry_ms);

// The policy names a configuration may use (policies/registry.h makes them).
inline constexpr absl::string_view kRouterPolicyNames[] = {
    "uniform", "hashing", "weighted-random", "priority",
    "locality", "load-based", "power-of-two", "reject"};
inline constexpr absl::string_view kAmrmPolicyNames[] = {"home-only", "broadcast",
                                                         "locality-multicast"};

// Checks a configuration as every store does before writing it: a non-empty queue, known
// policy names, finite weights >= 0 keyed by valid sub-cluster ids, headroom_alpha in [0, 1].
// InvalidArgument naming the field otherwise.
absl::Status ValidatePolicyConfiguration(const v1::SubClusterPolicyConfiguration& config);

// How many values ClaimClusterTimestamp tries after the wanted one before it gives up.
inline constexpr int kClusterTimestampClaimTries = 1000;
// Container epochs are below this (an RM packs the epoch into 23 bits of a container id); a
// cluster timestamp is at least this (ms since the Unix epoch: later than 1970-01-01 02:19).
inline constexpr int64_t kMaxContainerEpoch = int64_t{1} << 23;

class FederationStateStore {
 public:
  virtual ~FederationStateStore() = default;

  // The back-end's name and location for logs and `weft router --help` ("sqlite:/path", ...).
  virtual std::string Describe() const = 0;

  // --- Membership (YARN's FederationMembershipStateStore) -------------------------------
  // Adds the sub-cluster or replaces its record (an RM that restarts registers again): the
  // record is stored as given. InvalidArgument for a bad id or an empty rm_address (and, here
  // and in heartbeats, for an unspecified or unknown state, a negative resource value or count,
  // or a federation_commitment outside [0, 1]; 0 = unset).
  virtual absl::Status RegisterSubCluster(const v1::SubClusterInfo& info) = 0;
  // Sets its state (e.g. SC_UNREGISTERED, SC_LOST, SC_DECOMMISSIONING); NotFound when it was
  // never registered.
  virtual absl::Status DeregisterSubCluster(absl::string_view sub_cluster_id,
                                            v1::SubClusterState state) = 0;
  // Updates its state, load fields (capability, used, available, pending, nodes, app counts,
  // commitment) and last_heartbeat_ms from `load`; its addresses and last_start_ms are kept.
  // NotFound when it was never registered.
  virtual absl::Status SubClusterHeartbeat(const v1::SubClusterInfo& load) = 0;
  virtual absl::StatusOr<v1::SubClusterInfo> GetSubCluster(absl::string_view sub_cluster_id) = 0;
  // All sub-clusters ordered by id; `only_active`: those in SC_RUNNING only (the caller also
  // checks last_heartbeat_ms against its own expiry, see membership.h).
  virtual absl::StatusOr<std::vector<v1::SubClusterInfo>> GetSubClusters(bool only_active) = 0;

  // --- Application homes (YARN's FederationApplicationHomeSubClusterStore) --------------
  // Application and reservation ids: 1..256 printable ASCII characters, no spaces.
  // Inserts the mapping unless the app already has one, and returns the home now stored: the
  // given one, or the existing one (a router that lost a race must use the winner's).
  virtual absl::StatusOr<std::string> AddApplicationHomeSubCluster(
      const v1::ApplicationHomeSubCluster& home) = 0;
  // Replaces an existing mapping (resubmission after the home was lost). NotFound otherwise.
  virtual absl::Status UpdateApplicationHomeSubCluster(
      const v1::ApplicationHomeSubCluster& home) = 0;
  virtual absl::StatusOr<v1::ApplicationHomeSubCluster> GetApplicationHomeSubCluster(
      absl::string_view application_id) = 0;
  // All mappings ordered by application id; non-empty `home_sub_cluster_id`: only those homed
  // there.
  virtual absl::StatusOr<std::vector<v1::ApplicationHomeSubCluster>>
  GetApplicationsHomeSubCluster(absl::string_view home_sub_cluster_id) = 0;
  virtual absl::Status DeleteApplicationHomeSubCluster(absl::string_view application_id) = 0;

  // --- Reservation homes ---------------------------------------------------------------
  virtual absl::StatusOr<std::string> AddReservationHomeSubCluster(
      const v1::ReservationHomeSubCluster& home) = 0;
  virtual absl::Status UpdateReservationHomeSubCluster(
      const v1::ReservationHomeSubCluster& home) = 0;
  virtual absl::StatusOr<v1::ReservationHomeSubCluster> GetReservationHomeSubCluster(
      absl::string_view reservation_id) = 0;
  virtual absl::StatusOr<std::vector<v1::ReservationHomeSubCluster>>
  GetReservationsHomeSubCluster() = 0;
  virtual absl::Status DeleteReservationHomeSubCluster(absl::string_view reservation_id) = 0;

  // --- Policies (YARN's FederationPolicyStore) -----------------------------------------
  // Adds or replaces the queue's configuration; the store sets its generation (1 when added,
  // one more per write). With config.generation() > 0, only over that generation: Aborted,
  // changing nothing, when the store holds another or none (a read-modify-write such as the
  // GPG's loses to a writer in between). InvalidArgument as ValidatePolicyConfiguration().
  virtual absl::Status SetPolicyConfiguration(
      const v1::SubClusterPolicyConfiguration& config) = 0;
  // The queue's own configuration; NotFound when it has none (callers then use "*").
  virtual absl::StatusOr<v1::SubClusterPolicyConfiguration> GetPolicyConfiguration(
      absl::string_view queue) = 0;
  // Every queue's, ordered by queue.
  virtual absl::StatusOr<std::vector<v1::SubClusterPolicyConfiguration>>
  GetPoliciesConfigurations() = 0;
  // Removes the queue's own configuration (its apps then follow "*"); NotFound when it has
  // none.
  virtual absl::Status DeletePolicyConfiguration(absl::string_view queue) = 0;

  // --- Cluster timestamps (one id space for the federation) ----------------------------
  // Claims the cluster timestamp of an RM of `sub_cluster_id` starting now: the first of
  // wanted_ms, wanted_ms + 1, ... (at most kClusterTimestampClaimTries values) that no claim
  // holds, inserted if absent, and returns it (ms since the Unix epoch). Every call claims a
  // value of its own, whoever asks (another sub-cluster, the other RM of an HA pair, the same
  // RM restarted), so RMs started in the same millisecond get distinct timestamps and their
  // application ids cannot collide. InvalidArgument for a bad id or wanted_ms <= 0;
  // ResourceExhausted, claiming nothing, when every value tried is taken.
  virtual absl::StatusOr<int64_t> ClaimClusterTimestamp(absl::string_view sub_cluster_id,
                                                        int64_t wanted_ms) = 0;
  // Every cluster timestamp claim ordered by cluster_timestamp_ms (operators' `weft
  // federation`, tests); container epoch claims are not listed.
  virtual absl::StatusOr<std::vector<v1::ClusterTimestampClaim>> GetClusterTimestampClaims() = 0;

  // --- Container epochs (one container id space for the federation) -------------------
  // Claims the epoch of an RM of `sub_cluster_id` starting now: the e<N> of its container ids
  // (container_e<N>_<app>_<attempt>_<seq>; YARN keeps sub-clusters' epochs apart with
  // yarn.resourcemanager.epoch.range). The value is above every epoch claimed in the federation
  // before and at least `at_least` (the RM's own next epoch), inserted if absent: no two calls
  // get the same value and a sub-cluster's successive RMs get rising ones. An app's home and
  // its unmanaged AMs in other sub-clusters share one application id, so their containers'
  // ids differ only by the epoch. InvalidArgument for a bad id or at_least < 1;
  // ResourceExhausted, claiming nothing, at kMaxContainerEpoch.
  virtual absl::StatusOr<int64_t> ClaimContainerEpoch(absl::string_view sub_cluster_id,
                                                      int64_t at_least) = 0;

  // --- Issued application ids (GetNewApplication through any router) ------------------
  // Records the id as issued (insert-if-absent): AlreadyExists, changing nothing, when it is
  // recorded already (another router issued the same id). The caller checks the id has no home
  // after this succeeds: an id is never both homed and issued anew. InvalidArgument for an
  // empty or malformed application id or user.
  virtual absl::Status AddIssuedApplicationId(const v1::IssuedApplicationId& issued) = 0;
  // NotFound when the id is not recorded (never issued, homed since, or expired and deleted).
  virtual absl::StatusOr<v1::IssuedApplicationId> GetIssuedApplicationId(
      absl::string_view application_id) = 0;
  // Removes the record (its app got a home); NotFound when there is none.
  virtual absl::Status DeleteIssuedApplicationId(absl::string_view application_id) = 0;
  // Removes every record with issued_ms < before_ms (ids issued and never submitted) and
  // returns how many; the GPG calls it each round with now minus the routers' issued-id TTL.
  virtual absl::StatusOr<int> DeleteIssuedApplicationIdsBefore(int64_t before_ms) = 0;

  // --- Router delegation-token state (YARN's RouterRMDTSecretManager store) -------------
  virtual absl::Status StoreMasterKey(const v1::RouterMasterKey& key) = 0;  // AlreadyExists
  virtual absl::Status RemoveMasterKey(int32_t key_id) = 0;                 // NotFound
  virtual absl::StatusOr<v1::RouterMasterKey> GetMasterKey(int32_t key_id) = 0;
  virtual absl::Status StoreToken(const v1::RouterStoredToken& token) = 0;   // AlreadyExists
  virtual absl::Status UpdateToken(const v1::RouterStoredToken& token) = 0;  // NotFound
  virtual absl::Status RemoveToken(int64_t sequence_number) = 0;            // NotFound
  virtual absl::StatusOr<v1::RouterStoredToken> GetToken(int64_t sequence_number) = 0;
};

// Opens a store from its URI:
//   memory:                           in this process only (tests, simulator)
//   sqlite:/path/to/federation.db     SQLite file, created with its schema on first use
//   zk://host:port[,host:port]/root?auth-file=FILE
//                                     ZooKeeper ensemble, records under /root; FILE (mode 0600)
//                                     holds the digest credential user:password (required):
//                                     every node gets the creator-only ACL
//   postgresql://user@host:port/db?passfile=FILE
//                                     PostgreSQL (libpq URI; schema and migrations by Weft); a
//                                     password in the URI is refused, as is a server that lets
//                                     the store in over TCP without one
// InvalidArgument naming the URI for an unknown scheme or a malformed one; the back-end's
// error (Unavailable, ...) when it cannot be opened.
absl::StatusOr<std::unique_ptr<FederationStateStore>> OpenFederationStore(absl::string_view uri);

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_STORE_FEDERATION_STORE_H_
