// Copyright Weft authors. How the ZooKeeper state store spells its records: node names that
// carry arbitrary bytes, and a small binary encoding of the records kept as node data.
// Internal to store/zk_store.cc (and its tests); see docs/reliability.md for the layout.
#ifndef WEFT_STORE_ZK_CODEC_H_
#define WEFT_STORE_ZK_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/state_store.h"

namespace weft::store::zk {

// A ZooKeeper node name for arbitrary bytes (e.g. an app_id): the bytes A-Z a-z 0-9 '_' '-' are
// kept, every other byte becomes "%XX" (two upper-case hex digits). The result is never empty
// for a non-empty input, never "." or "..", and holds no '/', '.' or character ZooKeeper
// refuses, so names of different inputs never collide and '.' is free as a separator.
std::string EscapeNodeName(absl::string_view bytes);

// The inverse of EscapeNodeName. InvalidArgument for a name EscapeNodeName cannot produce.
absl::StatusOr<std::string> UnescapeNodeName(absl::string_view name);

// Record encoding, version 1. A record is
//   byte 0: the format version (1); byte 1: the kind ('A' application, 'T' attempt,
//   'K' master key); then the record's fields in declaration order (store/state_store.h), each
//   string as a 4-byte big-endian length and its bytes, each integer (32- or 64-bit) as 8 bytes
//   big-endian two's complement.
// Nothing may follow the last field. The encoding is exact: every byte string, including NUL
// and non-UTF-8 bytes, round-trips.
inline constexpr uint8_t kRecordFormatVersion = 1;

std::string EncodeApplication(const ApplicationRecord& app);
std::string EncodeAttempt(const AttemptRecord& attempt);
std::string EncodeMasterKey(const MasterKeyRecord& key);

// Decode a record. DataLoss naming the problem ("truncated in field 'queue'", "unknown record
// format 7", "trailing bytes", "attempt_id 4294967296 does not fit in 32 bits", ...) for data
// the matching Encode* function cannot produce. They do not validate field values (see
// Validate*Record in store/state_store.h).
absl::StatusOr<ApplicationRecord> DecodeApplication(absl::string_view data);
absl::StatusOr<AttemptRecord> DecodeAttempt(absl::string_view data);
absl::StatusOr<MasterKeyRecord> DecodeMasterKey(absl::string_view data);

}  // namespace weft::store::zk

#endif  // WEFT_STORE_ZK_CODEC_H_
