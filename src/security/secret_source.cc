// Copyright Weft authors.
#include "security/secret_source.h"

#include <openssl/err.h>
#include <openssl/rand.h>

#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::security {

absl::StatusOr<std::string> OpenSslSecretSource::Generate(size_t num_bytes) {
  if (num_bytes > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("secret source: cannot generate ", num_bytes, " bytes in one call"));
  }
  std::string out(num_bytes, '\0');
  if (num_bytes == 0) return out;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(num_bytes)) != 1) {
    const unsigned long err = ERR_get_error();  // NOLINT(runtime/int): OpenSSL's type.
    char reason[256] = "unknown error";
    if (err != 0) ERR_error_string_n(err, reason, sizeof(reason));
    return absl::InternalError(absl::StrCat("secret source: RAND_bytes failed to produce ",
                                            num_bytes, " bytes: ", reason));
  }
  return out;
}

absl::StatusOr<std::string> FakeSecretSource::Generate(size_t num_bytes) {
  if (fail_next_.has_value()) {
    absl::Status status = std::move(*fail_next_);
    fail_next_.reset();
    if (status.ok()) status = absl::InternalError("fake secret source: injected failure");
    return status;
  }
  std::string out;
  out.reserve(num_bytes);
  while (out.size() < num_bytes) {
    // splitmix64.
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    for (int i = 0; i < 8 && out.size() < num_bytes; ++i) {
      out.push_back(static_cast<char>((z >> (8 * i)) & 0xff));
    }
  }
  ++calls_;
  return out;
}

}  // namespace weft::security
