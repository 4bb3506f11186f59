// Copyright Weft authors. FOR TESTS: a private munged on its own socket and key.
#ifndef WEFT_SECURITY_TEST_MUNGED_H_
#define WEFT_SECURITY_TEST_MUNGED_H_

#include <string>

#include "absl/status/statusor.h"

namespace weft::security {

// Starts /usr/sbin/munged in the foreground with a fresh random key, socket, pid, seed and log
// file in a new temporary directory (mode 0755, so other local users can reach the socket),
// and waits until it answers an encode (readiness, up to 10 s). The destructor stops it and
// removes the directory. Needs the Debian package `munge` (scripts/install-deps.sh).
class TestMunged {
 public:
  static absl::StatusOr<std::unique_ptr<TestMunged>> Start();
  ~TestMunged();
  TestMunged(const TestMunged&) = delete;
  TestMunged& operator=(const TestMunged&) = delete;

  const std::string& socket() const { return socket_; }

 private:
  TestMunged() = default;
  std::string dir_;
  std::string socket_;
  int pid_ = -1;
};

}  // namespace weft::security

#endif  // WEFT_SECURITY_TEST_MUNGED_H_
