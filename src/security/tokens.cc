// Copyright Weft authors.
#include "security/tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace weft::security {
namespace {

constexpr char kContainerKind = 'C';
constexpr char kAmRmKind = 'A';

void CheckOrDie(bool condition, const char* message) {
  if (!condition) {
    std::fprintf(stderr, "weft/security/tokens: check failed: %s\n", message);
    std::abort();
  }
}

// Appends fixed-width big-endian integers and length-prefixed strings.
class Writer {
 public:
  explicit Writer(char kind) {
    out_.push_back(static_cast<char>(kTokenFormatVersion));
    out_.push_back(kind);
  }

  Writer& String(absl::string_view s) {
    CheckOrDie(s.size() <= std::numeric_limits<uint32_t>::max(), "token field over 4 GiB");
    Unsigned(s.size(), 4);
    out_.append(s.data(), s.size());
    return *this;
  }
  Writer& Int32(int32_t v) {
    Unsigned(static_cast<uint32_t>(v), 4);
    return *this;
  }
  Writer& Int64(int64_t v) {
    Unsigned(static_cast<uint64_t>(v), 8);
    return *this;
  }
  std::string Finish() { return std::move(out_); }

 private:
  void Unsigned(uint64_t v, int width) {
    for (int i = width - 1; i >= 0; --i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }

  std::string out_;
};

// Reads what Writer wrote from untrusted bytes. Every read checks the remaining length first;
// the first failure sticks and later reads do nothing.
class Reader {
 public:
  Reader(absl::string_view in, absl::string_view what) : in_(in), what_(what) {}

  // Consumes the version and kind bytes.
  void Header(char expected_kind) {
    if (in_.size() < 2) return Fail("header", "truncated");
    const auto version = static_cast<uint8_t>(in_[0]);
    if (version != kTokenFormatVersion) {
      return Fail("header", absl::StrCat("unknown format version ", version));
    }
    if (in_[1] != expected_kind) {
      return Fail("header", absl::StrCat("kind byte 0x", absl::Hex(static_cast<uint8_t>(in_[1])),
                                         " is not this kind of token"));
    }
    pos_ = 2;
  }
  void String(const char* field, std::string* out) {
    uint64_t length = 0;
    if (!Unsigned(field, 4, &length)) return;
    if (length > in_.size() - pos_) {
      return Fail(field, absl::StrCat("length ", length, " exceeds the ", in_.size() - pos_,
                                      " bytes left"));
    }
    out->assign(in_.data() + pos_, length);
    pos_ += length;
  }
  void Int32(const char* field, int32_t* out) {
    uint64_t v = 0;
    if (Unsigned(field, 4, &v)) *out = static_cast<int32_t>(static_cast<uint32_t>(v));
  }
  void Int64(const char* field, int64_t* out) {
    uint64_t v = 0;
    if (Unsigned(field, 8, &v)) *out = static_cast<int64_t>(v);
  }
  absl::Status Finish() {
    if (status_.ok() && pos_ != in_.size()) {
      Fail("end", absl::StrCat(in_.size() - pos_, " trailing bytes"));
    }
    return status_;
  }

 private:
  bool Unsigned(const char* field, size_t width, uint64_t* out) {
    if (!status_.ok()) return false;
    if (in_.size() - pos_ < width) {
      Fail(field, "truncated");
      return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) v = (v << 8) | static_cast<uint8_t>(in_[pos_ + i]);
    pos_ += width;
    *out = v;
    return true;
  }
  void Fail(absl::string_view field, absl::string_view reason) {
    if (!status_.ok()) return;
    status_ = absl::InvalidArgumentError(absl::StrCat("malformed ", what_, " identifier (",
                                                      in_.size(), " bytes): ", field, " at offset ",
                                                      pos_, ": ", reason));
  }

  absl::string_view in_;
  absl::string_view what_;
  size_t pos_ = 0;
  absl::Status status_;
};

// Identifier strings are untrusted until the signature is checked; keep them printable.
std::string Printable(absl::string_view s) { return absl::CHexEscape(s); }

}  // namespace

std::string HmacSha256(absl::string_view key, absl::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  CheckOrDie(key.size() <= static_cast<size_t>(std::numeric_limits<int>::max()),
             "HMAC key too long");
  const unsigned char* result = HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                                     reinterpret_cast<const unsigned char*>(message.data()),
                                     message.size(), digest, &digest_len);
  // HMAC fails only on allocation failure or a broken OpenSSL: nothing to recover.
  CheckOrDie(result != nullptr && digest_len == kTokenPasswordBytes, "HMAC-SHA256 failed");
  return std::string(reinterpret_cast<const char*>(digest), digest_len);
}

bool PasswordMatches(const Token& token, const MasterKey& key) {
  const std::string expected = HmacSha256(key.secret, token.identifier);
  // The length of a valid password is public; only the bytes need constant-time comparison.
  if (token.password.size() != expected.size()) return false;
  return CRYPTO_memcmp(token.password.data(), expected.data(), expected.size()) == 0;
}

std::string EncodeContainerTokenIdentifier(const ContainerTokenData& data) {
  return Writer(kContainerKind)
      .String(data.container_id)
      .String(data.node_id)
      .String(data.user)
      .String(data.resource)
      .Int64(data.expiry_ms)
      .Int32(data.master_key_id)
      .Int64(data.rm_epoch)
      .String(data.app_id)
      .Finish();
}

std::string EncodeAmRmTokenIdentifier(const AmRmTokenData& data) {
  return Writer(kAmRmKind)
      .String(data.app_attempt_id)
      .Int32(data.master_key_id)
      .Int64(data.expiry_ms)
      .Finish();
}

absl::StatusOr<ContainerTokenData> DecodeContainerToken(absl::string_view identifier) {
  ContainerTokenData data;
  Reader r(identifier, "container token");
  r.Header(kContainerKind);
  r.String("container_id", &data.container_id);
  r.String("node_id", &data.node_id);
  r.String("user", &data.user);
  r.String("resource", &data.resource);
  r.Int64("expiry_ms", &data.expiry_ms);
  r.Int32("master_key_id", &data.master_key_id);
  r.Int64("rm_epoch", &data.rm_epoch);
  r.String("app_id", &data.app_id);
  if (absl::Status s = r.Finish(); !s.ok()) return s;
  return data;
}

absl::StatusOr<AmRmTokenData> DecodeAmRmToken(absl::string_view identifier) {
  AmRmTokenData data;
  Reader r(identifier, "AMRM token");
  r.Header(kAmRmKind);
  r.String("app_attempt_id", &data.app_attempt_id);
  r.Int32("master_key_id", &data.master_key_id);
  r.Int64("expiry_ms", &data.expiry_ms);
  if (absl::Status s = r.Finish(); !s.ok()) return s;
  return data;
}

Token IssueContainerToken(const ContainerTokenData& data, const MasterKey& key) {
  ContainerTokenData signed_data = data;
  signed_data.master_key_id = key.id;
  Token token;
  token.identifier = EncodeContainerTokenIdentifier(signed_data);
  token.password = HmacSha256(key.secret, token.identifier);
  return token;
}

Token IssueAmRmToken(const AmRmTokenData& data, const MasterKey& key) {
  AmRmTokenData signed_data = data;
  signed_data.master_key_id = key.id;
  Token token;
  token.identifier = EncodeAmRmTokenIdentifier(signed_data);
  token.password = HmacSha256(key.secret, token.identifier);
  return token;
}

absl::StatusOr<AmRmTokenData> VerifyAmRmToken(const Token& token, const MasterKeyManager& keys,
                                              absl::string_view expected_attempt_id,
                                              int64_t now_ms) {
  absl::StatusOr<AmRmTokenData> data = DecodeAmRmToken(token.identifier);
  if (!data.ok()) {
    return absl::PermissionDeniedError(data.status().message());
  }
  const std::string prefix = absl::StrCat("AMRM token for ", Printable(data->app_attempt_id), ": ");
  const MasterKey* key = keys.Find(data->master_key_id);
  if (key == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat(prefix, "unknown master key ", data->master_key_id));
  }
  if (!PasswordMatches(token, *key)) {
    return absl::PermissionDeniedError(absl::StrCat(prefix, "bad signature"));
  }
  if (now_ms >= key->expires_ms) {
    return absl::PermissionDeniedError(absl::StrCat(prefix, "master key ", key->id, " expired at ",
                                                    key->expires_ms, " (now ", now_ms, ")"));
  }
  if (now_ms >= data->expiry_ms) {
    return absl::PermissionDeniedError(
        absl::StrCat(prefix, "expired at ", data->expiry_ms, " (now ", now_ms, ")"));
  }
  if (data->app_attempt_id != expected_attempt_id) {
    return absl::PermissionDeniedError(absl::StrCat(prefix, "issued for ",
                                                    Printable(data->app_attempt_id), ", expected ",
                                                    Printable(expected_attempt_id)));
  }
  return data;
}

}  // namespace weft::security
