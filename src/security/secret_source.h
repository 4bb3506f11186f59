// Copyright Weft authors. Where the secret bytes of new master keys come from.
#ifndef WEFT_SECURITY_SECRET_SOURCE_H_
#define WEFT_SECURITY_SECRET_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace weft::security {

// A source of secret random bytes, injected wherever keys are made so that the key logic
// never reads global randomness and tests are deterministic.
class SecretSource {
 public:
  virtual ~SecretSource() = default;

  // Returns `num_bytes` fresh secret bytes. Fails (never aborts) when the source cannot
  // deliver: the caller must not make a key from anything else.
  virtual absl::StatusOr<std::string> Generate(size_t num_bytes) = 0;
};

// Cryptographically secure bytes from OpenSSL's RAND_bytes. Thread-safe.
class OpenSslSecretSource final : public SecretSource {
 public:
  // InternalError (with OpenSSL's reason) when RAND_bytes fails, e.g. an unseeded DRBG;
  // InvalidArgument when `num_bytes` exceeds what RAND_bytes accepts in one call.
  absl::StatusOr<std::string> Generate(size_t num_bytes) override;
};

// FOR TESTS ONLY: a deterministic, NOT secret, byte stream (splitmix64 from `seed`).
// Two fakes with the same seed produce the same bytes. Thread-compatible.
class FakeSecretSource final : public SecretSource {
 public:
  explicit FakeSecretSource(uint64_t seed = 1) : state_(seed) {}

  absl::StatusOr<std::string> Generate(size_t num_bytes) override;

  // Makes the next Generate() call fail with `status` (an OK status becomes InternalError).
  void FailNext(absl::Status status) { fail_next_ = std::move(status); }

  // Number of successful Generate() calls so far.
  int calls() const { return calls_; }

 private:
  uint64_t state_;
  std::optional<absl::Status> fail_next_;
  int calls_ = 0;
};

}  // namespace weft::security

#endif  // WEFT_SECURITY_SECRET_SOURCE_H_
