// Copyright Weft authors.
#include "federation/store/record_store.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace weft::federation {
namespace {

constexpr size_t kMaxRecordIdLength = 256;

// Prefixes a failure with what the call was doing ("registering sub-cluster 'sc1': ...").
absl::Status In(absl::string_view what, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(what, ": ", status.message()));
}

absl::Status Invalid(absl::string_view what, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", why));
}

// An application or reservation id: 1..256 printable ASCII characters, no spaces.
absl::Status ValidateRecordId(absl::string_view field, absl::string_view id) {
  if (id.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  if (id.size() > kMaxRecordIdLength) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is ", id.size(), " bytes long, over ", kMaxRecordIdLength));
  }
  for (char c : id) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " '", absl::CHexEscape(id),
                       "' has a character that is not printable ASCII (or is a space)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateResource(absl::string_view field, const v1::Resource& resource) {
  for (const auto& [name, value] : resource.values()) {
    if (value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " ", absl::CHexEscape(name), "=", value, " is negative"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateState(v1::SubClusterState state) {
  if (!v1::SubClusterState_IsValid(state) || state == v1::SUB_CLUSTER_STATE_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat("state ", static_cast<int>(state), " is not a sub-cluster state"));
  }
  return absl::OkStatus();
}

// The checks of a registration (`require_address`) or a heartbeat.
absl::Status ValidateSubClusterInfo(const v1::SubClusterInfo& info, bool require_address) {
  if (absl::Status s = ValidateSubClusterId(info.sub_cluster_id()); !s.ok()) return s;
  if (require_address && info.rm_address().empty()) {
    return absl::InvalidArgumentError("rm_address is empty");
  }
  if (absl::Status s = ValidateState(info.state()); !s.ok()) return s;
  for (const auto& [field, resource] :
       {std::pair<const char*, const v1::Resource*>{"capability", &info.capability()},
        {"used", &info.used()},
        {"available", &info.available()},
        {"pending", &info.pending()}}) {
    if (absl::Status s = ValidateResource(field, *resource); !s.ok()) return s;
  }
  for (const auto& [field, count] :
       {std::pair<const char*, int32_t>{"active_nodes", info.active_nodes()},
        {"apps_running", info.apps_running()},
        {"apps_pending", info.apps_pending()}}) {
    if (count < 0)
      return absl::InvalidArgumentError(absl::StrCat(field, " ", count, " is negative"));
  }
  const double commitment = info.federation_commitment();
  if (!std::isfinite(commitment) || commitment < 0 || commitment > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("federation_commitment ", commitment, " is not in [0, 1]"));
  }
  return absl::OkStatus();
}

template <typename Proto>
absl::StatusOr<Proto> Parse(absl::string_view bytes) {
  Proto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat("a stored ", proto.GetTypeName(), " (", bytes.size(),
                                            " bytes) does not parse"));
  }
  return proto;
}

// Parses every record, keeps those `keep` accepts, and sorts them by `key`.
template <typename Proto, typename Key, typename Keep>
absl::StatusOr<std::vector<Proto>> ParseSorted(const std::vector<std::string>& records, Key key,
                                               Keep keep) {
  std::vector<Proto> protos;
  protos.reserve(records.size());
  for (const std::string& record : records) {
    absl::StatusOr<Proto> proto = Parse<Proto>(record);
    if (!proto.ok()) return proto.status();
    if (keep(*proto)) protos.push_back(*std::move(proto));
  }
  std::sort(protos.begin(), protos.end(),
            [&](const Proto& a, const Proto& b) { return key(a) < key(b); });
  return protos;
}

std::string Quoted(absl::string_view id) { return absl::StrCat("'", absl::CHexEscape(id), "'"); }

}  // namespace

const TableInfo& InfoOf(Table table) {
  static constexpr TableInfo kInfos[] = {
      {"sub_clusters", "sub_cluster_id", false, false, "membership"},
      {"application_homes", "application_id", false, true, "apps"},
      {"reservation_homes", "reservation_id", false, true, "reservations"},
      {"policies", "queue", false, false, "policies"},
      {"router_master_keys", "key_id", true, false, "router/keys"},
      {"router_tokens", "sequence_number", true, false, "router/tokens"},
      {"cluster_timestamps", "cluster_timestamp_ms", true, false, "cluster-timestamps"},
      {"issued_application_ids", "application_id", false, false, "issued-apps"},
  };
  static_assert(std::size(kInfos) == std::size(kAllTables));
  return kInfos[static_cast<int>(table)];
}

std::string SerializeRecord(const google::protobuf::MessageLite& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// --- Membership -----------------------------------------------------------------------------

absl::Status RecordFederationStore::RegisterSubCluster(const v1::SubClusterInfo& info) {
  const std::string what = absl::StrCat("registering sub-cluster ", Quoted(info.sub_cluster_id()));
  if (absl::Status s = ValidateSubClusterInfo(info, /*require_address=*/true); !s.ok()) {
    return In(what, s);
  }
  return In(what,
            PutRecord(Table::kSubClusters, {info.sub_cluster_id(), "", SerializeRecord(info)}));
}

absl::Status RecordFederationStore::DeregisterSubCluster(absl::string_view sub_cluster_id,
                                                         v1::SubClusterState state) {
  const std::string what = absl::StrCat("deregistering sub-cluster ", Quoted(sub_cluster_id));
  if (absl::Status s = ValidateSubClusterId(sub_cluster_id); !s.ok()) return In(what, s);
  if (absl::Status s = ValidateState(state); !s.ok()) return In(what, s);
  absl::StatusOr<bool> found = ModifyRecord(
      Table::kSubClusters, sub_cluster_id, [&](absl::string_view old) -> absl::StatusOr<Row> {
        absl::StatusOr<v1::SubClusterInfo> info = Parse<v1::SubClusterInfo>(old);
        if (!info.ok()) return info.status();
        info->set_state(state);
        return Row{std::string(sub_cluster_id), "", SerializeRecord(*info)};
      });
  if (!found.ok()) return In(what, found.status());
  if (!*found) return absl::NotFoundError(absl::StrCat(what, ": it is not registered"));
  return absl::OkStatus();
}

absl::Status RecordFederationStore::SubClusterHeartbeat(const v1::SubClusterInfo& load) {
  const std::string what = absl::StrCat("heartbeat of sub-cluster ", Quoted(load.sub_cluster_id()));
  if (absl::Status s = ValidateSubClusterInfo(load, /*require_address=*/false); !s.ok()) {
    return In(what, s);
  }
  absl::StatusOr<bool> found =
      ModifyRecord(Table::kSubClusters, load.sub_cluster_id(),
                   [&](absl::string_view old) -> absl::StatusOr<Row> {
                     absl::StatusOr<v1::SubClusterInfo> registered = Parse<v1::SubClusterInfo>(old);
                     if (!registered.ok()) return registered.status();
                     v1::SubClusterInfo merged = load;
                     merged.set_rm_address(registered->rm_address());
                     merged.set_rm_http_address(registered->rm_http_address());
                     merged.set_last_start_ms(registered->last_start_ms());
                     return Row{load.sub_cluster_id(), "", SerializeRecord(merged)};
                   });
  if (!found.ok()) return In(what, found.status());
  if (!*found) return absl::NotFoundError(absl::StrCat(what, ": it is not registered"));
  return absl::OkStatus();
}

absl::StatusOr<v1::SubClusterInfo> RecordFederationStore::GetSubCluster(
    absl::string_view sub_cluster_id) {
  const std::string what = absl::StrCat("getting sub-cluster ", Quoted(sub_cluster_id));
  if (absl::Status s = ValidateSubClusterId(sub_cluster_id); !s.ok()) return In(what, s);
  absl::StatusOr<std::optional<std::string>> record =
      GetRecord(Table::kSubClusters, sub_cluster_id);
  if (!record.ok()) return In(what, record.status());
  if (!record->has_value())
    return absl::NotFoundError(absl::StrCat(what, ": it is not registered"));
  absl::StatusOr<v1::SubClusterInfo> info = Parse<v1::SubClusterInfo>(**record);
  if (!info.ok()) return In(what, info.status());
  return info;
}

absl::StatusOr<std::vector<v1::SubClusterInfo>> RecordFederationStore::GetSubClusters(
    bool only_active) {
  absl::StatusOr<std::vector<std::string>> records = ListRecords(Table::kSubClusters, "");
  if (!records.ok()) return In("listing sub-clusters", records.status());
  auto infos = ParseSorted<v1::SubClusterInfo>(
      *records,
      [](const v1::SubClusterInfo& i) -> const std::string& { return i.sub_cluster_id(); },
      [&](const v1::SubClusterInfo& i) { return !only_active || i.state() == v1::SC_RUNNING; });
  if (!infos.ok()) return In("listing sub-clusters", infos.status());
  return infos;
}

// --- Application and reservation homes -------------------------------------------------------
namespace {

// What applications and reservations share: an id field, a home field, a name for messages.
struct HomeKind {
  Table table;
  const char* noun;      // "application"
  const char* id_field;  // "application_id"
};
constexpr HomeKind kApplicationKind = {Table::kApplications, "application", "application_id"};
constexpr HomeKind kReservationKind = {Table::kReservations, "reservation", "reservation_id"};

std::string IdOf(const v1::ApplicationHomeSubCluster& h) { return h.application_id(); }
std::string IdOf(const v1::ReservationHomeSubCluster& h) { return h.reservation_id(); }

template <typename Home>
absl::Status ValidateHome(const HomeKind& kind, const Home& home) {
  if (absl::Status s = ValidateRecordId(kind.id_field, IdOf(home)); !s.ok()) return s;
  if (absl::Status s = ValidateSubClusterId(home.home_sub_cluster_id()); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("home_sub_cluster_id: ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

// Implemented once for both kinds of home (templates over the record type).
class RecordFederationStore::Homes {
 public:
  template <typename Home>
  static absl::StatusOr<std::string> Add(RecordFederationStore& store, const HomeKind& kind,
                                         const Home& home) {
    const std::string what =
        absl::StrCat("adding the home of ", kind.noun, " ", Quoted(IdOf(home)));
    if (absl::Status s = ValidateHome(kind, home); !s.ok()) return In(what, s);
    Home first = home;
    first.set_generation(1);  // the store keeps the generation, whatever the caller sent
    absl::StatusOr<InsertResult> result = store.InsertRecord(
        kind.table, {IdOf(first), first.home_sub_cluster_id(), SerializeRecord(first)});
    if (!result.ok()) return In(what, result.status());
    absl::StatusOr<Home> stored = Parse<Home>(result->record);
    if (!stored.ok()) return In(what, stored.status());
    return stored->home_sub_cluster_id();
  }

  template <typename Home>
  static absl::Status Update(RecordFederationStore& store, const HomeKind& kind, const Home& home) {
    const std::string what =
        absl::StrCat("updating the home of ", kind.noun, " ", Quoted(IdOf(home)));
    if (absl::Status s = ValidateHome(kind, home); !s.ok()) return In(what, s);
    if (home.generation() < 0) {
      return In(what, absl::InvalidArgumentError(
                          absl::StrCat("generation ", home.generation(), " is negative")));
    }
    Home next = home;
    next.set_generation(home.generation() + 1);
    const Row row = {IdOf(next), next.home_sub_cluster_id(), SerializeRecord(next)};
    // Compare-and-set: only over the generation the caller read.
    absl::StatusOr<bool> found = store.ModifyRecord(
        kind.table, row.key, [&](absl::string_view old_record) -> absl::StatusOr<Row> {
          absl::StatusOr<Home> stored = Parse<Home>(old_record);
          if (!stored.ok()) return stored.status();
          if (stored->generation() != home.generation()) {
            return absl::AbortedError(absl::StrCat(
                "it is at generation ", stored->generation(), " in ",
                Quoted(stored->home_sub_cluster_id()), ", not at generation ", home.generation(),
                " as read: another writer moved it first; read it again"));
          }
          return row;
        });
    if (!found.ok()) return In(what, found.status());
    if (!*found) return absl::NotFoundError(absl::StrCat(what, ": it has no home"));
    return absl::OkStatus();
  }

  template <typename Home>
  static absl::StatusOr<Home> Get(RecordFederationStore& store, const HomeKind& kind,
                                  absl::string_view id) {
    const std::string what = absl::StrCat("getting the home of ", kind.noun, " ", Quoted(id));
    if (absl::Status s = ValidateRecordId(kind.id_field, id); !s.ok()) return In(what, s);
    absl::StatusOr<std::optional<std::string>> record = store.GetRecord(kind.table, id);
    if (!record.ok()) return In(what, record.status());
    if (!record->has_value()) return absl::NotFoundError(absl::StrCat(what, ": it has no home"));
    absl::StatusOr<Home> home = Parse<Home>(**record);
    if (!home.ok()) return In(what, home.status());
    return home;
  }

  template <typename Home>
  static absl::StatusOr<std::vector<Home>> List(RecordFederationStore& store, const HomeKind& kind,
                                                absl::string_view home_sub_cluster_id) {
    const std::string what =
        home_sub_cluster_id.empty()
            ? absl::StrCat("listing ", kind.noun, " homes")
            : absl::StrCat("listing ", kind.noun, " homes in ", Quoted(home_sub_cluster_id));
    if (!home_sub_cluster_id.empty()) {
      if (absl::Status s = ValidateSubClusterId(home_sub_cluster_id); !s.ok()) return In(what, s);
    }
    absl::StatusOr<std::vector<std::string>> records =
        store.ListRecords(kind.table, home_sub_cluster_id);
    if (!records.ok()) return In(what, records.status());
    auto homes = ParseSorted<Home>(
        *records, [](const Home& h) { return IdOf(h); },
        [&](const Home& h) {
          return home_sub_cluster_id.empty() || h.home_sub_cluster_id() == home_sub_cluster_id;
        });
    if (!homes.ok()) return In(what, homes.status());
    return homes;
  }

  static absl::Status Delete(RecordFederationStore& store, const HomeKind& kind,
                             absl::string_view id) {
    const std::string what = absl::StrCat("deleting the home of ", kind.noun, " ", Quoted(id));
    if (absl::Status s = ValidateRecordId(kind.id_field, id); !s.ok()) return In(what, s);
    absl::StatusOr<bool> found = store.DeleteRecord(kind.table, id);
    if (!found.ok()) return In(what, found.status());
    if (!*found) return absl::NotFoundError(absl::StrCat(what, ": it has no home"));
    return absl::OkStatus();
  }
};

absl::StatusOr<std::string> RecordFederationStore::AddApplicationHomeSubCluster(
    const v1::ApplicationHomeSubCluster& home) {
  return Homes::Add(*this, kApplicationKind, home);
}
absl::Status RecordFederationStore::UpdateApplicationHomeSubCluster(
    const v1::ApplicationHomeSubCluster& home) {
  return Homes::Update(*this, kApplicationKind, home);
}
absl::StatusOr<v1::ApplicationHomeSubCluster> RecordFederationStore::GetApplicationHomeSubCluster(
    absl::string_view application_id) {
  return Homes::Get<v1::ApplicationHomeSubCluster>(*this, kApplicationKind, application_id);
}
absl::StatusOr<std::vector<v1::ApplicationHomeSubCluster>>
RecordFederationStore::GetApplicationsHomeSubCluster(absl::string_view home_sub_cluster_id) {
  return Homes::List<v1::ApplicationHomeSubCluster>(*this, kApplicationKind, home_sub_cluster_id);
}
absl::Status RecordFederationStore::DeleteApplicationHomeSubCluster(
    absl::string_view application_id) {
  return Homes::Delete(*this, kApplicationKind, application_id);
}

absl::StatusOr<std::string> RecordFederationStore::AddReservationHomeSubCluster(
    const v1::ReservationHomeSubCluster& home) {
  return Homes::Add(*this, kReservationKind, home);
}
absl::Status RecordFederationStore::UpdateReservationHomeSubCluster(
    const v1::ReservationHomeSubCluster& home) {
  return Homes::Update(*this, kReservationKind, home);
}
absl::StatusOr<v1::ReservationHomeSubCluster> RecordFederationStore::GetReservationHomeSubCluster(
    absl::string_view reservation_id) {
  return Homes::Get<v1::ReservationHomeSubCluster>(*this, kReservationKind, reservation_id);
}
absl::StatusOr<std::vector<v1::ReservationHomeSubCluster>>
RecordFederationStore::GetReservationsHomeSubCluster() {
  return Homes::List<v1::ReservationHomeSubCluster>(*this, kReservationKind, "");
}
absl::Status RecordFederationStore::DeleteReservationHomeSubCluster(
    absl::string_view reservation_id) {
  return Homes::Delete(*this, kReservationKind, reservation_id);
}

// --- Policies --------------------------------------------------------------------------------

absl::Status RecordFederationStore::SetPolicyConfiguration(
    const v1::SubClusterPolicyConfiguration& config) {
  if (absl::Status s = ValidatePolicyConfiguration(config); !s.ok()) {
    return In("setting a policy configuration", s);
  }
  const std::string what =
      absl::StrCat("setting the policy configuration of queue ", Quoted(config.queue()));
  // Over the stored generation (any, with 0), and one more than it.
  auto next_of = [&](absl::string_view old_record) -> absl::StatusOr<Row> {
    absl::StatusOr<v1::SubClusterPolicyConfiguration> stored =
        Parse<v1::SubClusterPolicyConfiguration>(old_record);
    if (!stored.ok()) return stored.status();
    if (config.generation() > 0 && stored->generation() != config.generation()) {
      return absl::AbortedError(absl::StrCat("it is at generation ", stored->generation(),
                                             ", not at generation ", config.generation(),
                                             " as read: another writer changed it first; read "
                                             "it again"));
    }
    v1::SubClusterPolicyConfiguration next = config;
    next.set_generation(stored->generation() + 1);
    return Row{config.queue(), "", SerializeRecord(next)};
  };
  // A row that appears between a failed modify and the insert: modify again (bounded).
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<bool> found = ModifyRecord(Table::kPolicies, config.queue(), next_of);
    if (!found.ok()) return In(what, found.status());
    if (*found) return absl::OkStatus();
    if (config.generation() > 0) {
      return In(what, absl::AbortedError(absl::StrCat("it has none, not generation ",
                                                      config.generation(), " as read")));
    }
    v1::SubClusterPolicyConfiguration first = config;
    first.set_generation(1);
    absl::StatusOr<InsertResult> inserted =
        InsertRecord(Table::kPolicies, {config.queue(), "", SerializeRecord(first)});
    if (!inserted.ok()) return In(what, inserted.status());
    if (inserted->inserted) return absl::OkStatus();
  }
  return In(what, absl::AbortedError("it keeps changing under this write"));
}

absl::StatusOr<v1::SubClusterPolicyConfiguration> RecordFederationStore::GetPolicyConfiguration(
    absl::string_view queue) {
  const std::string what =
      absl::StrCat("getting the policy configuration of queue ", Quoted(queue));
  if (queue.empty()) return Invalid(what, "queue is empty");
  absl::StatusOr<std::optional<std::string>> record = GetRecord(Table::kPolicies, queue);
  if (!record.ok()) return In(what, record.status());
  if (!record->has_value()) return absl::NotFoundError(absl::StrCat(what, ": it has none"));
  absl::StatusOr<v1::SubClusterPolicyConfiguration> config =
      Parse<v1::SubClusterPolicyConfiguration>(**record);
  if (!config.ok()) return In(what, config.status());
  return config;
}

absl::Status RecordFederationStore::DeletePolicyConfiguration(absl::string_view queue) {
  const std::string what =
      absl::StrCat("deleting the policy configuration of queue ", Quoted(queue));
  if (queue.empty()) return Invalid(what, "queue is empty");
  absl::StatusOr<bool> found = DeleteRecord(Table::kPolicies, queue);
  if (!found.ok()) return In(what, found.status());
  if (!*found) return absl::NotFoundError(absl::StrCat(what, ": it has none"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::SubClusterPolicyConfiguration>>
RecordFederationStore::GetPoliciesConfigurations() {
  absl::StatusOr<std::vector<std::string>> records = ListRecords(Table::kPolicies, "");
  if (!records.ok()) return In("listing policy configurations", records.status());
  auto configs = ParseSorted<v1::SubClusterPolicyConfiguration>(
      *records,
      [](const v1::SubClusterPolicyConfiguration& c) -> const std::string& { return c.queue(); },
      [](const v1::SubClusterPolicyConfiguration&) { return true; });
  if (!configs.ok()) return In("listing policy configurations", configs.status());
  return configs;
}

// --- Router token state ----------------------------------------------------------------------

absl::Status RecordFederationStore::StoreMasterKey(const v1::RouterMasterKey& key) {
  const std::string what = absl::StrCat("storing router master key ", key.key_id());
  absl::StatusOr<InsertResult> result =
      InsertRecord(Table::kMasterKeys, {absl::StrCat(key.key_id()), "", SerializeRecord(key)});
  if (!result.ok()) return In(what, result.status());
  if (!result->inserted) return absl::AlreadyExistsError(absl::StrCat(what, ": it exists"));
  return absl::OkStatus();
}

absl::Status RecordFederationStore::RemoveMasterKey(int32_t key_id) {
  const std::string what = absl::StrCat("removing router master key ", key_id);
  absl::StatusOr<bool> found = DeleteRecord(Table::kMasterKeys, absl::StrCat(key_id));
  if (!found.ok()) return In(what, found.status());
  if (!*found) return absl::NotFoundError(absl::StrCat(what, ": there is none"));
  return absl::OkStatus();
}

absl::StatusOr<v1::RouterMasterKey> RecordFederationStore::GetMasterKey(int32_t key_id) {
  const std::string what = absl::StrCat("getting router master key ", key_id);
  absl::StatusOr<std::optional<std::string>> record =
      GetRecord(Table::kMasterKeys, absl::StrCat(key_id));
  if (!record.ok()) return In(what, record.status());
  if (!record->has_value()) return absl::NotFoundError(absl::StrCat(what, ": there is none"));
  absl::StatusOr<v1::RouterMasterKey> key = Parse<v1::RouterMasterKey>(**record);
  if (!key.ok()) return In(what, key.status());
  return key;
}

absl::Status RecordFederationStore::StoreToken(const v1::RouterStoredToken& token) {
  const std::string what = absl::StrCat("storing router token ", token.sequence_number());
  absl::StatusOr<InsertResult> result = InsertRecord(
      Table::kTokens, {absl::StrCat(token.sequence_number()), "", SerializeRecord(token)});
  if (!result.ok()) return In(what, result.status());
  if (!result->inserted) return absl::AlreadyExistsError(absl::StrCat(what, ": it exists"));
  return absl::OkStatus();
}

absl::Status RecordFederationStore::UpdateToken(const v1::RouterStoredToken& token) {
  const std::string what = absl::StrCat("updating router token ", token.sequence_number());
  const Row row = {absl::StrCat(token.sequence_number()), "", SerializeRecord(token)};
  absl::StatusOr<bool> found = ModifyRecord(
      Table::kTokens, row.key, [&](absl::string_view) -> absl::StatusOr<Row> { return row; });
  if (!found.ok()) return In(what, found.status());
  if (!*found) return absl::NotFoundError(absl::StrCat(what, ": there is none"));
  return absl::OkStatus();
}

absl::Status RecordFederationStore::RemoveToken(int64_t sequence_number) {
  const std::string what = absl::StrCat("removing router token ", sequence_number);
  absl::StatusOr<bool> found = DeleteRecord(Table::kTokens, absl::StrCat(sequence_number));
  if (!found.ok()) return In(what, found.status());
  if (!*found) return absl::NotFoundError(absl::StrCat(what, ": there is none"));
  return absl::OkStatus();
}

absl::StatusOr<v1::RouterStoredToken> RecordFederationStore::GetToken(int64_t sequence_number) {
  const std::string what = absl::StrCat("getting router token ", sequence_number);
  absl::StatusOr<std::optional<std::string>> record =
      GetRecord(Table::kTokens, absl::StrCat(sequence_number));
  if (!record.ok()) return In(what, record.status());
  if (!record->has_value()) return absl::NotFoundError(absl::StrCat(what, ": there is none"));
  absl::StatusOr<v1::RouterStoredToken> token = Parse<v1::RouterStoredToken>(**record);
  if (!token.ok()) return In(what, token.status());
  return token;
}

// --- Cluster timestamps ----------------------------------------------------------------------

absl::StatusOr<int64_t> RecordFederationStore::ClaimClusterTimestamp(
    absl::string_view sub_cluster_id, int64_t wanted_ms) {
  const std::string what = absl::StrCat("claiming a cluster timestamp for sub-cluster ",
                                        Quoted(sub_cluster_id), " from ", wanted_ms, " ms");
  if (absl::Status s = ValidateSubClusterId(sub_cluster_id); !s.ok()) return In(what, s);
  if (wanted_ms < kMaxContainerEpoch)
    return Invalid(what, absl::StrCat("the wanted timestamp must be >= ", kMaxContainerEpoch,
                                      " (ms since the Unix epoch)"));
  v1::ClusterTimestampClaim claim;
  claim.set_sub_cluster_id(std::string(sub_cluster_id));
  claim.set_wanted_ms(wanted_ms);
  thread_local std::mt19937_64 rng(std::random_device{}());
  claim.set_nonce(rng());
  for (int64_t i = 0; i < kClusterTimestampClaimTries; ++i) {
    const int64_t candidate = wanted_ms + i;
    claim.set_cluster_timestamp_ms(candidate);
    absl::StatusOr<InsertResult> result = InsertRecord(
        Table::kClusterTimestamps, {absl::StrCat(candidate), "", SerializeRecord(claim)});
    if (!result.ok()) return In(what, result.status());
    if (result->inserted) return candidate;
  }
  return In(what,
            absl::ResourceExhaustedError(absl::StrCat(
                "every value from ", wanted_ms, " to ", wanted_ms + kClusterTimestampClaimTries - 1,
                " is claimed already; start the RM with another --cluster-timestamp-ms")));
}

absl::StatusOr<std::vector<v1::ClusterTimestampClaim>>
RecordFederationStore::GetClusterTimestampClaims() {
  absl::StatusOr<std::vector<std::string>> records = ListRecords(Table::kClusterTimestamps, "");
  if (!records.ok()) return In("listing cluster timestamp claims", records.status());
  auto claims = ParseSorted<v1::ClusterTimestampClaim>(
      *records, [](const v1::ClusterTimestampClaim& c) { return c.cluster_timestamp_ms(); },
      [](const v1::ClusterTimestampClaim& c) { return !c.container_epoch(); });
  if (!claims.ok()) return In("listing cluster timestamp claims", claims.status());
  return claims;
}

// --- Container epochs --------------------------------------------------------------------------

absl::StatusOr<int64_t> RecordFederationStore::ClaimContainerEpoch(absl::string_view sub_cluster_id,
                                                                   int64_t at_least) {
  const std::string what = absl::StrCat("claiming a container epoch for sub-cluster ",
                                        Quoted(sub_cluster_id), " from ", at_least);
  if (absl::Status s = ValidateSubClusterId(sub_cluster_id); !s.ok()) return In(what, s);
  if (at_least < 1) return Invalid(what, "the epoch must be >= 1");
  // Above every epoch claimed so far (epoch claims share the timestamps' table, below them).
  absl::StatusOr<std::vector<std::string>> records = ListRecords(Table::kClusterTimestamps, "");
  if (!records.ok()) return In(what, records.status());
  int64_t candidate = at_least;
  for (const std::string& record : *records) {
    absl::StatusOr<v1::ClusterTimestampClaim> c = Parse<v1::ClusterTimestampClaim>(record);
    if (!c.ok()) return In(what, c.status());
    if (c->container_epoch()) candidate = std::max(candidate, c->cluster_timestamp_ms() + 1);
  }
  v1::ClusterTimestampClaim claim;
  claim.set_sub_cluster_id(std::string(sub_cluster_id));
  claim.set_wanted_ms(at_least);
  claim.set_container_epoch(true);
  // Claimers racing past the listing take the next values; each insert is if-absent.
  for (; candidate < kMaxContainerEpoch; ++candidate) {
    claim.set_cluster_timestamp_ms(candidate);
    absl::StatusOr<InsertResult> result = InsertRecord(
        Table::kClusterTimestamps, {absl::StrCat(candidate), "", SerializeRecord(claim)});
    if (!result.ok()) return In(what, result.status());
    if (result->inserted) return candidate;
  }
  return In(what, absl::ResourceExhaustedError(absl::StrCat(
                      "every container epoch below ", kMaxContainerEpoch, " is claimed")));
}

// --- Issued application ids ------------------------------------------------------------------

absl::Status RecordFederationStore::AddIssuedApplicationId(const v1::IssuedApplicationId& issued) {
  const std::string what =
      absl::StrCat("recording application id ", Quoted(issued.application_id()), " as issued");
  if (absl::Status s = ValidateRecordId("application_id", issued.application_id()); !s.ok()) {
    return In(what, s);
  }
  if (issued.user().empty()) return Invalid(what, "user is empty");
  absl::StatusOr<InsertResult> result = InsertRecord(
      Table::kIssuedApplicationIds, {issued.application_id(), "", SerializeRecord(issued)});
  if (!result.ok()) return In(what, result.status());
  if (!result->inserted) {
    absl::StatusOr<v1::IssuedApplicationId> held = Parse<v1::IssuedApplicationId>(result->record);
    return absl::AlreadyExistsError(
        absl::StrCat(what, ": it was issued already",
                     held.ok() ? absl::StrCat(" (by router ", Quoted(held->router_id()), " at ",
                                              held->issued_ms(), " ms)")
                               : std::string()));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::IssuedApplicationId> RecordFederationStore::GetIssuedApplicationId(
    absl::string_view application_id) {
  const std::string what = absl::StrCat("getting issued application id ", Quoted(application_id));
  if (absl::Status s = ValidateRecordId("application_id", application_id); !s.ok()) {
    return In(what, s);
  }
  absl::StatusOr<std::optional<std::string>> record =
      GetRecord(Table::kIssuedApplicationIds, application_id);
  if (!record.ok()) return In(what, record.status());
  if (!record->has_value()) {
    return absl::NotFoundError(absl::StrCat(what, ": it is not recorded as issued"));
  }
  absl::StatusOr<v1::IssuedApplicationId> issued = Parse<v1::IssuedApplicationId>(**record);
  if (!issued.ok()) return In(what, issued.status());
  return issued;
}

absl::Status RecordFederationStore::DeleteIssuedApplicationId(absl::string_view application_id) {
  const std::string what = absl::StrCat("deleting issued application id ", Quoted(application_id));
  if (absl::Status s = ValidateRecordId("application_id", application_id); !s.ok()) {
    return In(what, s);
  }
  absl::StatusOr<bool> found = DeleteRecord(Table::kIssuedApplicationIds, application_id);
  if (!found.ok()) return In(what, found.status());
  if (!*found) return absl::NotFoundError(absl::StrCat(what, ": it is not recorded as issued"));
  return absl::OkStatus();
}

absl::StatusOr<int> RecordFederationStore::DeleteIssuedApplicationIdsBefore(int64_t before_ms) {
  const std::string what =
      absl::StrCat("deleting application ids issued before ", before_ms, " ms");
  absl::StatusOr<std::vector<std::string>> records = ListRecords(Table::kIssuedApplicationIds, "");
  if (!records.ok()) return In(what, records.status());
  int deleted = 0;
  for (const std::string& record : *records) {
    absl::StatusOr<v1::IssuedApplicationId> issued = Parse<v1::IssuedApplicationId>(record);
    if (!issued.ok()) return In(what, issued.status());
    if (issued->issued_ms() >= before_ms) continue;
    // An id is issued once (its RM's cluster timestamp is claimed), so the record read is the
    // one deleted; one deleted meanwhile (its app got a home) is not counted.
    absl::StatusOr<bool> found =
        DeleteRecord(Table::kIssuedApplicationIds, issued->application_id());
    if (!found.ok()) return In(what, found.status());
    if (*found) ++deleted;
  }
  return deleted;
}

}  // namespace weft::federation
