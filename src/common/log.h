// Copyright Weft authors. The one logger of every Weft daemon: spdlog underneath, one line per
// event in logfmt style so that people read it and tools parse it:
//
//   2026-11-24T22:31:07.412Z INFO  rm node_registered node=127.0.0.1:40211 vcores=8
//
// An event is a short snake_case name; its context travels as key=value fields, never inside
// the name. Values with spaces, quotes or '=' are quoted with C escapes.
//
// Thread-safe: any thread may log. Before Init() the logger writes INFO and above to stderr as
// component "weft".
#ifndef WEFT_COMMON_LOG_H_
#define WEFT_COMMON_LOG_H_

#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace weft::log {

enum class Level { kDebug, kInfo, kWarn, kError, kOff };

// "debug", "info", "warn", "error" or "off" (case-insensitive); InvalidArgument naming the text
// otherwise.
absl::StatusOr<Level> ParseLevel(absl::string_view text);
const char* LevelName(Level level);

// Names the process's component ("rm", "nm", "dev", ...) and sets the threshold. May be called
// again (the last call wins).
void Init(absl::string_view component, Level level);
Level CurrentLevel();

// One key=value pair. Numbers, strings and statuses convert implicitly.
struct Field {
  template <typename T>
  Field(absl::string_view k, const T& v) : key(k), value(absl::StrCat(v)) {}
  Field(absl::string_view k, const absl::Status& s) : key(k), value(s.ToString()) {}
  Field(absl::string_view k, const std::string& v) : key(k), value(v) {}
  Field(absl::string_view k, absl::string_view v) : key(k), value(v) {}
  Field(absl::string_view k, const char* v) : key(k), value(v) {}
  Field(absl::string_view k, bool v) : key(k), value(v ? "true" : "false") {}
  absl::string_view key;
  std::string value;
};

// The line an event is written as, without time, level and component (tests check it).
std::string Format(absl::string_view event, std::initializer_list<Field> fields);

// Writes the event if `level` is at or above the threshold.
void Write(Level level, absl::string_view event, std::initializer_list<Field> fields);

inline void Debug(absl::string_view event, std::initializer_list<Field> fields = {}) {
  Write(Level::kDebug, event, fields);
}
inline void Info(absl::string_view event, std::initializer_list<Field> fields = {}) {
  Write(Level::kInfo, event, fields);
}
inline void Warn(absl::string_view event, std::initializer_list<Field> fields = {}) {
  Write(Level::kWarn, event, fields);
}
inline void Error(absl::string_view event, std::initializer_list<Field> fields = {}) {
  Write(Level::kError, event, fields);
}

// For an error nothing can act on (a clean-up on the way out, a best-effort removal): logged
// at warn as `event` with the error and `fields`, never silently dropped. Returns `s.ok()`.
bool WarnIfError(const absl::Status& s, absl::string_view event,
                 std::initializer_list<Field> fields = {});

}  // namespace weft::log

#endif  // WEFT_COMMON_LOG_H_
