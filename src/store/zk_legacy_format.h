// Copyright Weft authors. READING THE PRE-PROTO FORMAT ONLY. Before issue 28 the ZooKeeper state
// store (marker "weft-rm-state 1") kept each record in a hand-made binary encoding. This decodes
// such records so that an old store still loads and can be migrated to protos when it is opened
// (store/zk_store.h). Nothing writes this format any more; do not add an encoder.
// Internal to store/zk_store.cc and its tests.
#ifndef WEFT_STORE_ZK_LEGACY_FORMAT_H_
#define WEFT_STORE_ZK_LEGACY_FORMAT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/state_store.h"

namespace weft::store::zk::legacy {

// The pre-proto record encoding, version 1: byte 0 the format version (1); byte 1 the kind
// ('A' application, 'T' attempt, 'K' master key); then the record's fields in declaration order
// (store/state_store.h), each string as a 4-byte big-endian length and its bytes, each integer
// (32- or 64-bit) as 8 bytes big-endian two's complement; nothing after the last field.
inline constexpr uint8_t kRecordFormatVersion = 1;

// Whether `data` is in the pre-proto encoding: its first byte is the format version. A proto
// record (store/state_records.h) never starts with it.
bool IsLegacyRecord(absl::string_view data);

// DataLoss naming the problem ("truncated in field 'queue'", "unknown record format 7",
// "trailing bytes", "attempt_id 4294967296 does not fit in 32 bits", ...) for bytes the old
// encoder could not have produced. Field values are not validated.
absl::StatusOr<ApplicationRecord> DecodeApplication(absl::string_view data);
absl::StatusOr<AttemptRecord> DecodeAttempt(absl::string_view data);
absl::StatusOr<MasterKeyRecord> DecodeMasterKey(absl::string_view data);

// Whether an epoch node's data is in the pre-proto form: it starts with a decimal digit. A
// proto epoch (store/state_records.h) is empty or starts with byte 0x08.
bool IsLegacyEpoch(absl::string_view data);

// The pre-proto epoch node: the epoch in decimal ("0" in a new store). DataLoss unless it is a
// non-negative decimal integer.
absl::StatusOr<int64_t> DecodeEpoch(absl::string_view data);

// Decode a node's data: the proto (store/state_records.h) or, with `allow_legacy`, also the
// pre-proto form, told apart by IsLegacyRecord / IsLegacyEpoch. `legacy` says which it was.
absl::StatusOr<ApplicationRecord> DecodeAnyApplication(absl::string_view data, bool allow_legacy,
                                                       bool& legacy);
absl::StatusOr<AttemptRecord> DecodeAnyAttempt(absl::string_view data, bool allow_legacy,
                                               bool& legacy);
absl::StatusOr<MasterKeyRecord> DecodeAnyMasterKey(absl::string_view data, bool allow_legacy,
                                                   bool& legacy);
absl::StatusOr<int64_t> DecodeAnyEpoch(absl::string_view data, bool allow_legacy, bool& legacy);

}  // namespace weft::store::zk::legacy

#endif  // WEFT_STORE_ZK_LEGACY_FORMAT_H_
