// Copyright Weft authors. Helpers shared by the state store tests.
#ifndef WEFT_STORE_STORE_TEST_UTIL_H_
#define WEFT_STORE_STORE_TEST_UTIL_H_

#include <stdlib.h>

#include <filesystem>
#include <ostream>
#include <string>
#include <system_error>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "store/state_store.h"

namespace weft::store {

// A fresh directory under the test temp dir, removed with everything in it on destruction.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string pattern = absl::StrCat(::testing::TempDir(), "weft_store_test.XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp(" << pattern << ") failed";
      return;
    }
    path_ = pattern;
  }
  ~ScopedTempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Readable failure messages for the records (bytes are C-escaped).
inline void PrintTo(const ApplicationRecord& a, std::ostream* os) {
  *os << "{app_id=\"" << absl::CHexEscape(a.app_id) << "\" name=\"" << absl::CHexEscape(a.name)
      << "\" queue=\"" << absl::CHexEscape(a.queue) << "\" user=\"" << absl::CHexEscape(a.user)
      << "\" priority=" << a.priority << " state=" << a.state << " final_status=" << a.final_status
      << " diagnostics=\"" << absl::CHexEscape(a.diagnostics) << "\" submit_ms=" << a.submit_ms
      << " start_ms=" << a.start_ms << " finish_ms=" << a.finish_ms
      << " max_attempts=" << a.max_attempts << " submission=\"" << absl::CHexEscape(a.submission)
      << "\"}";
}

inline void PrintTo(const AttemptRecord& a, std::ostream* os) {
  *os << "{app_id=\"" << absl::CHexEscape(a.app_id) << "\" attempt_id=" << a.attempt_id
      << " state=" << a.state << " am_container_id=\"" << absl::CHexEscape(a.am_container_id)
      << "\" node=\"" << absl::CHexEscape(a.node) << "\" exit_status=" << a.exit_status
      << " diagnostics=\"" << absl::CHexEscape(a.diagnostics) << "\" start_ms=" << a.start_ms
      << " finish_ms=" << a.finish_ms << "}";
}

inline void PrintTo(const MasterKeyRecord& k, std::ostream* os) {
  *os << "{purpose=" << k.purpose << " key_id=" << k.key_id << " secret=\""
      << absl::CHexEscape(k.secret) << "\" created_ms=" << k.created_ms
      << " expires_ms=" << k.expires_ms << "}";
}

inline void PrintTo(const RmState& s, std::ostream* os) {
  *os << "{epoch=" << s.epoch << " apps=" << ::testing::PrintToString(s.apps)
      << " attempts=" << ::testing::PrintToString(s.attempts)
      << " keys=" << ::testing::PrintToString(s.keys) << "}";
}

// An application with every field set to a non-default value; `submission` holds NUL bytes.
inline ApplicationRecord FullApplication(const std::string& app_id) {
  ApplicationRecord app;
  app.app_id = app_id;
  app.name = std::string("word\0count \xc3\xa9", 13);
  app.queue = "root.prod";
  app.user = "alice";
  app.priority = -7;
  app.state = "RUNNING";
  app.final_status = "UNDEFINED";
  app.diagnostics = "line 1\nline 2 'quoted' \"double\"";
  app.submit_ms = 1'700'000'000'123;
  app.start_ms = INT64_MAX;
  app.finish_ms = INT64_MIN;
  app.max_attempts = 4;
  app.submission = std::string("\0\x01\xff\0bytes\0", 10);
  return app;
}

inline AttemptRecord FullAttempt(const std::string& app_id, int32_t attempt_id) {
  AttemptRecord attempt;
  attempt.app_id = app_id;
  attempt.attempt_id = attempt_id;
  attempt.state = "LAUNCHED";
  attempt.am_container_id = absl::StrCat("container_3_", app_id, "_", attempt_id, "_000001");
  attempt.node = "node-7.rack-2:8041";
  attempt.exit_status = -143;
  attempt.diagnostics = std::string("killed\0by RM", 12);
  attempt.start_ms = 1'700'000'000'456;
  attempt.finish_ms = 1'700'000'009'999;
  return attempt;
}

inline MasterKeyRecord FullMasterKey(const std::string& purpose, int32_t key_id) {
  MasterKeyRecord key;
  key.purpose = purpose;
  key.key_id = key_id;
  key.secret = std::string("\0s3cr\0t\xfe", 8);
  key.created_ms = 1'700'000'000'000;
  key.expires_ms = 1'700'086'400'000;
  return key;
}

}  // namespace weft::store

#endif  // WEFT_STORE_STORE_TEST_UTIL_H_
