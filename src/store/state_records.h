// Copyright Weft authors. The state store's records as bytes: each record (store/state_store.h)
// serialized as its proto (proto/weft/v1/state_store.proto). The one encoding the state store
// back-ends write; see the proto file for how it evolves.
#ifndef WEFT_STORE_STATE_RECORDS_H_
#define WEFT_STORE_STATE_RECORDS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/state_store.h"
#include "weft/v1/state_store.pb.h"

namespace weft::store {

// Record <-> proto, field by field; exact for every byte string.
v1::StoredApplication ToProto(const ApplicationRecord& app);
v1::StoredAttempt ToProto(const AttemptRecord& attempt);
v1::StoredMasterKey ToProto(const MasterKeyRecord& key);
v1::StoredNodeAdmin ToProto(const NodeAdminRecord& node);
ApplicationRecord FromProto(const v1::StoredApplication& proto);
AttemptRecord FromProto(const v1::StoredAttempt& proto);
MasterKeyRecord FromProto(const v1::StoredMasterKey& proto);
NodeAdminRecord FromProto(const v1::StoredNodeAdmin& proto);

// The serialized proto. Equal records give equal bytes. The result of the three record
// encoders never starts with byte 0x01 (their first field, never empty for a valid record, is
// tag 0x0A), which tells them from the pre-proto ZooKeeper records (store/zk_legacy_format.h).
std::string EncodeApplication(const ApplicationRecord& app);
std::string EncodeAttempt(const AttemptRecord& attempt);
std::string EncodeMasterKey(const MasterKeyRecord& key);
std::string EncodeNodeAdmin(const NodeAdminRecord& node);
std::string EncodeEpoch(int64_t epoch);

// Parse what the Encode* functions wrote (fields they do not know are ignored). DataLoss
// "<kind> record: not a valid serialized proto" for bytes that do not parse. They do not
// validate field values (see Validate*Record in store/state_store.h).
absl::StatusOr<ApplicationRecord> DecodeApplication(absl::string_view data);
absl::StatusOr<AttemptRecord> DecodeAttempt(absl::string_view data);
absl::StatusOr<MasterKeyRecord> DecodeMasterKey(absl::string_view data);
absl::StatusOr<NodeAdminRecord> DecodeNodeAdmin(absl::string_view data);
// Also DataLoss for a negative epoch.
absl::StatusOr<int64_t> DecodeEpoch(absl::string_view data);

}  // namespace weft::store

#endif  // WEFT_STORE_STATE_RECORDS_H_
