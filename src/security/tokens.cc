// Copyright Weft authors.
#include "security/tokens.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>

#include <limits>
#include <optional>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "weft/v1/tokens.pb.h"

namespace weft::security {
namespace {

constexpr char kContainerKind = 'C';
constexpr char kAmRmKind = 'A';

// The two header bytes, then the message in protobuf's deterministic encoding.
std::string Serialize(char kind, const google::protobuf::MessageLite& message) {
  std::string out;
  out.push_back(static_cast<char>(kTokenFormatVersion));
  out.push_back(kind);
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    CheckOrDie(message.SerializeToCodedStream(&coded), "serializing a token identifier");
  }
  return out;
}

// Parses `in` as Serialize(expected_kind, *message) wrote it: the header, a message that
// parses, and nothing but its canonical encoding (no reordered, repeated, default-valued or
// unknown fields, no trailing bytes).
absl::Status Parse(absl::string_view in, char expected_kind, absl::string_view what,
                   google::protobuf::Message* message) {
  auto fail = [&](absl::string_view reason) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed ", what, " identifier (", in.size(), " bytes): ", reason));
  };
  if (in.size() < 2) return fail("header truncated");
  const auto version = static_cast<uint8_t>(in[0]);
  if (version != kTokenFormatVersion) {
    return fail(absl::StrCat("header: unknown format version ", version));
  }
  if (in[1] != expected_kind) {
    return fail(absl::StrCat("header: kind byte 0x", absl::Hex(static_cast<uint8_t>(in[1])),
                             " is not this kind of token"));
  }
  const absl::string_view body = in.substr(2);
  if (body.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !message->ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return fail("body does not parse (truncated, trailing or corrupt bytes)");
  }
  message->DiscardUnknownFields();  // so that an unknown field fails the comparison below
  if (Serialize(expected_kind, *message) != in) {
    return fail(
        "body is not in canonical encoding (trailing, unknown, repeated or reordered fields)");
  }
  return absl::OkStatus();
}

// Identifier strings are untrusted until the signature is checked; keep them printable.
std::string Printable(absl::string_view s) { return absl::CHexEscape(s); }

// This thread's HMAC-SHA256 context, its digest set once, and the key it was last given.
// OpenSSL 3's one-shot HMAC() fetches the HMAC algorithm and SHA-256 by name on every call
// (EVP_Q_mac): about 1.7 µs of each container the RM allocates (its token). Setting a key
// hashes its inner and outer pads again; a call with the key the context already holds only
// restarts from the inner pad's state (HMAC_Init_ex with no key), which is what nearly every
// call sees: a master key signs every token for hours.
struct HmacContext {
  EVP_MAC_CTX* ctx = nullptr;
  std::string key;  // the key ctx holds (a copy of a secret: wiped when replaced or freed)
};

void WipeKey(std::string* key) {
  if (!key->empty()) OPENSSL_cleanse(key->data(), key->size());
  key->clear();
}

HmacContext* ThreadHmacSha256() {
  struct Context : HmacContext {
    Context() {
      EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
      if (mac == nullptr) return;
      ctx = EVP_MAC_CTX_new(mac);
      EVP_MAC_free(mac);  // the context holds its own reference
      char digest[] = "SHA256";
      const OSSL_PARAM params[] = {
          OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
          OSSL_PARAM_construct_end()};
      if (ctx != nullptr && EVP_MAC_CTX_set_params(ctx, params) != 1) {
        EVP_MAC_CTX_free(ctx);
        ctx = nullptr;
      }
    }
    ~Context() {
      WipeKey(&key);
      EVP_MAC_CTX_free(ctx);
    }
  };
  thread_local Context context;
  return &context;
}

// Readies the context to MAC under `key` (not empty), keyed again only for a different key.
bool InitHmac(HmacContext* c, absl::string_view key) {
  if (c->key.size() == key.size() && CRYPTO_memcmp(c->key.data(), key.data(), key.size()) == 0)
    return EVP_MAC_init(c->ctx, nullptr, 0, nullptr) == 1;
  WipeKey(&c->key);  // a failed keying leaves no key that a later call could take as set
  if (EVP_MAC_init(c->ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                   nullptr) != 1)
    return false;
  c->key.assign(key.data(), key.size());
  return true;
}

}  // namespace

std::string HmacSha256(absl::string_view key, absl::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  size_t digest_len = 0;
  CheckOrDie(key.size() <= static_cast<size_t>(std::numeric_limits<int>::max()),
             "HMAC key too long");
  const auto* data = reinterpret_cast<const unsigned char*>(message.data());
  bool ok;
  if (HmacContext* c = ThreadHmacSha256(); c->ctx != nullptr && !key.empty()) {
    ok = InitHmac(c, key) && EVP_MAC_update(c->ctx, data, message.size()) == 1 &&
         EVP_MAC_final(c->ctx, digest, &digest_len, sizeof(digest)) == 1;
  } else {  // an empty key (EVP_MAC_init would keep the last one) or no context
    unsigned int len = 0;
    ok = HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data, message.size(), digest,
              &len) != nullptr;
    digest_len = len;
  }
  // HMAC fails only on allocation failure or a broken OpenSSL: nothing to recover.
  CheckOrDie(ok && digest_len == kTokenPasswordBytes, "HMAC-SHA256 failed");
  return std::string(reinterpret_cast<const char*>(digest), digest_len);
}

bool PasswordMatches(const Token& token, const MasterKey& key) {
  const std::string expected = HmacSha256(key.secret, token.identifier);
  // The length of a valid password is public; only the bytes need constant-time comparison.
  if (token.password.size() != expected.size()) return false;
  return CRYPTO_memcmp(token.password.data(), expected.data(), expected.size()) == 0;
}

std::string EncodeContainerTokenIdentifier(const ContainerTokenData& data) {
  v1::ContainerTokenIdentifierProto p;
  p.set_container_id(data.container_id);
  p.set_node_id(data.node_id);
  p.set_user(data.user);
  p.set_resource(data.resource);
  p.set_expiry_ms(data.expiry_ms);
  p.set_master_key_id(data.master_key_id);
  p.set_rm_epoch(data.rm_epoch);
  p.set_app_id(data.app_id);
  p.set_view_acl(data.view_acl);
  p.set_version(data.version);
  for (const std::string& tag : data.allocation_tags) p.add_allocation_tags(tag);
  for (const std::string& d : data.devices) p.add_devices(d);
  return Serialize(kContainerKind, p);
}

std::string EncodeAmRmTokenIdentifier(const AmRmTokenData& data) {
  v1::AMRMTokenIdentifierProto p;
  p.set_app_attempt_id(data.app_attempt_id);
  p.set_master_key_id(data.master_key_id);
  p.set_expiry_ms(data.expiry_ms);
  return Serialize(kAmRmKind, p);
}

absl::StatusOr<ContainerTokenData> DecodeContainerToken(absl::string_view identifier) {
  v1::ContainerTokenIdentifierProto p;
  if (absl::Status s = Parse(identifier, kContainerKind, "container token", &p); !s.ok()) {
    return s;
  }
  ContainerTokenData data;
  data.container_id = p.container_id();
  data.node_id = p.node_id();
  data.user = p.user();
  data.resource = p.resource();
  data.expiry_ms = p.expiry_ms();
  data.master_key_id = p.master_key_id();
  data.rm_epoch = p.rm_epoch();
  data.app_id = p.app_id();
  data.view_acl = p.view_acl();
  data.version = p.version();
  data.allocation_tags.assign(p.allocation_tags().begin(), p.allocation_tags().end());
  data.devices.assign(p.devices().begin(), p.devices().end());
  return data;
}

absl::StatusOr<AmRmTokenData> DecodeAmRmToken(absl::string_view identifier) {
  v1::AMRMTokenIdentifierProto p;
  if (absl::Status s = Parse(identifier, kAmRmKind, "AMRM token", &p); !s.ok()) return s;
  AmRmTokenData data;
  data.app_attempt_id = p.app_attempt_id();
  data.master_key_id = p.master_key_id();
  data.expiry_ms = p.expiry_ms();
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

namespace {

// VerifyAmRmToken over `find`, which returns the key with an id or nullptr; without
// `expected_attempt_id`, any attempt's token is accepted.
absl::StatusOr<AmRmTokenData> VerifyAmRmTokenWith(
    const Token& token, absl::FunctionRef<const MasterKey*(int32_t)> find,
    std::optional<absl::string_view> expected_attempt_id, int64_t now_ms) {
  absl::StatusOr<AmRmTokenData> data = DecodeAmRmToken(token.identifier);
  if (!data.ok()) {
    return absl::PermissionDeniedError(data.status().message());
  }
  const std::string prefix = absl::StrCat("AMRM token for ", Printable(data->app_attempt_id), ": ");
  const MasterKey* key = find(data->master_key_id);
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
  if (expected_attempt_id.has_value() && data->app_attempt_id != *expected_attempt_id) {
    return absl::PermissionDeniedError(absl::StrCat(prefix, "issued for ",
                                                    Printable(data->app_attempt_id), ", expected ",
                                                    Printable(*expected_attempt_id)));
  }
  return data;
}

}  // namespace

absl::StatusOr<AmRmTokenData> VerifyAmRmToken(const Token& token, const MasterKeyManager& keys,
                                              absl::string_view expected_attempt_id,
                                              int64_t now_ms) {
  return VerifyAmRmTokenWith(
      token, [&keys](int32_t id) { return keys.Find(id); }, expected_attempt_id, now_ms);
}

absl::StatusOr<AmRmTokenData> VerifyAmRmTokenOfAnyAttempt(const Token& token,
                                                          const std::vector<MasterKey>& keys,
                                                          int64_t now_ms) {
  auto find = [&keys](int32_t id) -> const MasterKey* {
    for (const MasterKey& k : keys)
      if (k.id == id) return &k;
    return nullptr;
  };
  return VerifyAmRmTokenWith(token, find, std::nullopt, now_ms);
}

}  // namespace weft::security
