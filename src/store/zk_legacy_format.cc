// Copyright Weft authors. Reading the pre-proto ZooKeeper record format only.
#include "store/zk_legacy_format.h"

#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "store/state_records.h"

namespace weft::store::zk::legacy {
namespace {

// Reads fields in order; the first problem is kept and later reads return empty values.
class Reader {
 public:
  Reader(absl::string_view data, char kind, absl::string_view what) : data_(data), what_(what) {
    if (data_.size() < 2) {
      Fail("record is shorter than its 2-byte header");
    } else if (static_cast<uint8_t>(data_[0]) != kRecordFormatVersion) {
      Fail(absl::StrCat("unknown record format ", static_cast<int>(static_cast<uint8_t>(data_[0])),
                        " (this binary reads format ", kRecordFormatVersion, ")"));
    } else if (data_[1] != kind) {
      Fail(absl::StrCat("record kind '", absl::string_view(&data_[1], 1), "' is not '",
                        absl::string_view(&kind, 1), "'"));
    }
    pos_ = 2;
  }

  std::string Bytes(absl::string_view field) {
    if (!ok()) return "";
    if (data_.size() - pos_ < 4) {
      Fail(absl::StrCat("truncated in field '", field, "'"));
      return "";
    }
    uint32_t size = 0;
    for (int i = 0; i < 4; ++i) size = (size << 8) | static_cast<uint8_t>(data_[pos_ + i]);
    pos_ += 4;
    if (data_.size() - pos_ < size) {
      Fail(absl::StrCat("truncated in field '", field, "'"));
      return "";
    }
    std::string value(data_.substr(pos_, size));
    pos_ += size;
    return value;
  }

  int64_t Int64(absl::string_view field) {
    if (!ok()) return 0;
    if (data_.size() - pos_ < 8) {
      Fail(absl::StrCat("truncated in field '", field, "'"));
      return 0;
    }
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<uint8_t>(data_[pos_ + i]);
    pos_ += 8;
    return static_cast<int64_t>(bits);
  }

  int32_t Int32(absl::string_view field) {
    const int64_t value = Int64(field);
    if (ok() && (value < std::numeric_limits<int32_t>::min() ||
                 value > std::numeric_limits<int32_t>::max())) {
      Fail(absl::StrCat(field, " ", value, " does not fit in 32 bits"));
      return 0;
    }
    return static_cast<int32_t>(value);
  }

  // OK if every field was read and nothing follows; else DataLoss naming the problem.
  absl::Status Finish() {
    if (ok() && pos_ != data_.size()) {
      Fail(absl::StrCat(data_.size() - pos_, " trailing bytes after the last field"));
    }
    if (ok()) return absl::OkStatus();
    return absl::DataLossError(absl::StrCat(what_, " (pre-proto format): ", problem_));
  }

 private:
  bool ok() const { return problem_.empty(); }
  void Fail(std::string problem) {
    if (ok()) problem_ = std::move(problem);
  }

  absl::string_view data_;
  absl::string_view what_;
  size_t pos_ = 0;
  std::string problem_;
};

}  // namespace

bool IsLegacyRecord(absl::string_view data) {
  return !data.empty() && static_cast<uint8_t>(data[0]) == kRecordFormatVersion;
}

absl::StatusOr<ApplicationRecord> DecodeApplication(absl::string_view data) {
  Reader r(data, 'A', "application record");
  ApplicationRecord app;
  app.app_id = r.Bytes("app_id");
  app.name = r.Bytes("name");
  app.queue = r.Bytes("queue");
  app.user = r.Bytes("user");
  app.priority = r.Int32("priority");
  app.state = r.Bytes("state");
  app.final_status = r.Bytes("final_status");
  app.diagnostics = r.Bytes("diagnostics");
  app.submit_ms = r.Int64("submit_ms");
  app.start_ms = r.Int64("start_ms");
  app.finish_ms = r.Int64("finish_ms");
  app.max_attempts = r.Int32("max_attempts");
  app.submission = r.Bytes("submission");
  if (absl::Status s = r.Finish(); !s.ok()) return s;
  return app;
}

absl::StatusOr<AttemptRecord> DecodeAttempt(absl::string_view data) {
  Reader r(data, 'T', "attempt record");
  AttemptRecord attempt;
  attempt.app_id = r.Bytes("app_id");
  attempt.attempt_id = r.Int32("attempt_id");
  attempt.state = r.Bytes("state");
  attempt.am_container_id = r.Bytes("am_container_id");
  attempt.node = r.Bytes("node");
  attempt.exit_status = r.Int32("exit_status");
  attempt.diagnostics = r.Bytes("diagnostics");
  attempt.start_ms = r.Int64("start_ms");
  attempt.finish_ms = r.Int64("finish_ms");
  if (absl::Status s = r.Finish(); !s.ok()) return s;
  return attempt;
}

absl::StatusOr<MasterKeyRecord> DecodeMasterKey(absl::string_view data) {
  Reader r(data, 'K', "master key record");
  MasterKeyRecord key;
  key.purpose = r.Bytes("purpose");
  key.key_id = r.Int32("key_id");
  key.secret = r.Bytes("secret");
  key.created_ms = r.Int64("created_ms");
  key.expires_ms = r.Int64("expires_ms");
  if (absl::Status s = r.Finish(); !s.ok()) return s;
  return key;
}

bool IsLegacyEpoch(absl::string_view data) {
  return !data.empty() && data[0] >= '0' && data[0] <= '9';
}

absl::StatusOr<int64_t> DecodeEpoch(absl::string_view data) {
  int64_t epoch = 0;
  if (!absl::SimpleAtoi(data, &epoch) || epoch < 0) {
    return absl::DataLossError(absl::StrCat("epoch (pre-proto format): '", absl::CHexEscape(data),
                                            "' is not a non-negative integer"));
  }
  return epoch;
}

absl::StatusOr<ApplicationRecord> DecodeAnyApplication(absl::string_view data, bool allow_legacy,
                                                       bool& legacy) {
  legacy = allow_legacy && IsLegacyRecord(data);
  return legacy ? DecodeApplication(data) : store::DecodeApplication(data);
}

absl::StatusOr<AttemptRecord> DecodeAnyAttempt(absl::string_view data, bool allow_legacy,
                                               bool& legacy) {
  legacy = allow_legacy && IsLegacyRecord(data);
  return legacy ? DecodeAttempt(data) : store::DecodeAttempt(data);
}

absl::StatusOr<MasterKeyRecord> DecodeAnyMasterKey(absl::string_view data, bool allow_legacy,
                                                   bool& legacy) {
  legacy = allow_legacy && IsLegacyRecord(data);
  return legacy ? DecodeMasterKey(data) : store::DecodeMasterKey(data);
}

absl::StatusOr<int64_t> DecodeAnyEpoch(absl::string_view data, bool allow_legacy, bool& legacy) {
  legacy = allow_legacy && IsLegacyEpoch(data);
  return legacy ? DecodeEpoch(data) : store::DecodeEpoch(data);
}

}  // namespace weft::store::zk::legacy
