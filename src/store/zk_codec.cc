// Copyright Weft authors.
#include "store/zk_codec.h"

#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace weft::store::zk {
namespace {

constexpr char kHexDigits[] = "0123456789ABCDEF";

bool KeptInNodeName(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // Lower-case digits are not produced, so not accepted: one spelling per name.
}

constexpr char kKindApplication = 'A';
constexpr char kKindAttempt = 'T';
constexpr char kKindMasterKey = 'K';

class Writer {
 public:
  explicit Writer(char kind) {
    out_.push_back(static_cast<char>(kRecordFormatVersion));
    out_.push_back(kind);
  }

  Writer& Bytes(absl::string_view value) {
    const uint32_t size = static_cast<uint32_t>(value.size());
    for (int shift = 24; shift >= 0; shift -= 8) out_.push_back(static_cast<char>(size >> shift));
    out_.append(value.data(), value.size());
    return *this;
  }

  Writer& Int(int64_t value) {
    const uint64_t bits = static_cast<uint64_t>(value);
    for (int shift = 56; shift >= 0; shift -= 8) out_.push_back(static_cast<char>(bits >> shift));
    return *this;
  }

  std::string Finish() { return std::move(out_); }

 private:
  std::string out_;
};

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
    return absl::DataLossError(absl::StrCat(what_, ": ", problem_));
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

std::string EscapeNodeName(absl::string_view bytes) {
  std::string name;
  name.reserve(bytes.size());
  for (char ch : bytes) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (KeptInNodeName(c)) {
      name.push_back(ch);
    } else {
      name.push_back('%');
      name.push_back(kHexDigits[c >> 4]);
      name.push_back(kHexDigits[c & 0xf]);
    }
  }
  return name;
}

absl::StatusOr<std::string> UnescapeNodeName(absl::string_view name) {
  std::string bytes;
  bytes.reserve(name.size());
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (KeptInNodeName(c)) {
      bytes.push_back(name[i]);
      continue;
    }
    if (c == '%' && i + 2 < name.size()) {
      const int high = HexValue(name[i + 1]);
      const int low = HexValue(name[i + 2]);
      const unsigned char decoded = static_cast<unsigned char>(high * 16 + low);
      if (high >= 0 && low >= 0 && !KeptInNodeName(decoded)) {
        bytes.push_back(static_cast<char>(decoded));
        i += 2;
        continue;
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("node name '", name, "' is not an escaped name (at offset ", i, ")"));
  }
  return bytes;
}

std::string EncodeApplication(const ApplicationRecord& app) {
  return Writer(kKindApplication)
      .Bytes(app.app_id)
      .Bytes(app.name)
      .Bytes(app.queue)
      .Bytes(app.user)
      .Int(app.priority)
      .Bytes(app.state)
      .Bytes(app.final_status)
      .Bytes(app.diagnostics)
      .Int(app.submit_ms)
      .Int(app.start_ms)
      .Int(app.finish_ms)
      .Int(app.max_attempts)
      .Bytes(app.submission)
      .Finish();
}

std::string EncodeAttempt(const AttemptRecord& attempt) {
  return Writer(kKindAttempt)
      .Bytes(attempt.app_id)
      .Int(attempt.attempt_id)
      .Bytes(attempt.state)
      .Bytes(attempt.am_container_id)
      .Bytes(attempt.node)
      .Int(attempt.exit_status)
      .Bytes(attempt.diagnostics)
      .Int(attempt.start_ms)
      .Int(attempt.finish_ms)
      .Finish();
}

std::string EncodeMasterKey(const MasterKeyRecord& key) {
  return Writer(kKindMasterKey)
      .Bytes(key.purpose)
      .Int(key.key_id)
      .Bytes(key.secret)
      .Int(key.created_ms)
      .Int(key.expires_ms)
      .Finish();
}

absl::StatusOr<ApplicationRecord> DecodeApplication(absl::string_view data) {
  Reader r(data, kKindApplication, "application record");
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
  Reader r(data, kKindAttempt, "attempt record");
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
  Reader r(data, kKindMasterKey, "master key record");
  MasterKeyRecord key;
  key.purpose = r.Bytes("purpose");
  key.key_id = r.Int32("key_id");
  key.secret = r.Bytes("secret");
  key.created_ms = r.Int64("created_ms");
  key.expires_ms = r.Int64("expires_ms");
  if (absl::Status s = r.Finish(); !s.ok()) return s;
  return key;
}

}  // namespace weft::store::zk
