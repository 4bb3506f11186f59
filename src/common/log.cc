// Copyright Weft authors.
#include "common/log.h"

#include <atomic>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace weft::log {
namespace {

std::atomic<Level> g_level{Level::kInfo};

spdlog::level::level_enum ToSpd(Level level) {
  switch (level) {
    case Level::kDebug: return spdlog::level::debug;
    case Level::kInfo: return spdlog::level::info;
    case Level::kWarn: return spdlog::level::warn;
    case Level::kError: return spdlog::level::err;
    case Level::kOff: return spdlog::level::off;
  }
  return spdlog::level::info;
}

// The process's logger; replaced by Init. Guarded so that Init may race with writers.
absl::Mutex g_mu;
std::shared_ptr<spdlog::logger>& Logger() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) {
  static auto* logger = new std::shared_ptr<spdlog::logger>();
  return *logger;
}

std::shared_ptr<spdlog::logger> MakeLogger(absl::string_view component, Level level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(std::string(component), std::move(sink));
  // UTC ISO 8601 with milliseconds, the level, the component, then the event line.
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %-5l %n %v", spdlog::pattern_time_type::utc);
  logger->set_level(ToSpd(level));
  logger->flush_on(spdlog::level::trace);
  return logger;
}

std::shared_ptr<spdlog::logger> Current() {
  absl::MutexLock lock(&g_mu);
  auto& logger = Logger();
  if (!logger) logger = MakeLogger("weft", g_level.load());
  return logger;
}

bool NeedsQuotes(absl::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || !absl::ascii_isprint(c)) return true;
  }
  return false;
}

void AppendValue(std::string* out, absl::string_view v) {
  if (!NeedsQuotes(v)) {
    out->append(v.data(), v.size());
    return;
  }
  out->push_back('"');
  for (char c : v) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (absl::ascii_isprint(c) || (static_cast<unsigned char>(c) >= 0x80)) {
          out->push_back(c);
        } else {
          absl::StrAppend(out, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
        }
    }
  }
  out->push_back('"');
}

}  // namespace

absl::StatusOr<Level> ParseLevel(absl::string_view text) {
  std::string t = absl::AsciiStrToLower(text);
  if (t == "debug") return Level::kDebug;
  if (t == "info") return Level::kInfo;
  if (t == "warn" || t == "warning") return Level::kWarn;
  if (t == "error") return Level::kError;
  if (t == "off") return Level::kOff;
  return absl::InvalidArgumentError(
      absl::StrCat("log level '", text, "' is not one of debug, info, warn, error, off"));
}

const char* LevelName(Level level) {
  switch (level) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
    case Level::kOff: return "off";
  }
  return "info";
}

void Init(absl::string_view component, Level level) {
  g_level.store(level);
  auto logger = MakeLogger(component, level);
  absl::MutexLock lock(&g_mu);
  Logger() = std::move(logger);
}

Level CurrentLevel() { return g_level.load(); }

std::string Format(absl::string_view event, std::initializer_list<Field> fields) {
  std::string line(event);
  for (const Field& f : fields) {
    line.push_back(' ');
    line.append(f.key.data(), f.key.size());
    line.push_back('=');
    AppendValue(&line, f.value);
  }
  return line;
}

void Write(Level level, absl::string_view event, std::initializer_list<Field> fields) {
  if (level < g_level.load() || level == Level::kOff) return;
  Current()->log(ToSpd(level), "{}", Format(event, fields));
}

bool WarnIfError(const absl::Status& s, absl::string_view event,
                 std::initializer_list<Field> fields) {
  if (s.ok()) return true;
  if (Level::kWarn < g_level.load()) return false;
  std::string line = Format(event, fields);
  line.append(" error=");
  AppendValue(&line, s.ToString());
  Current()->log(ToSpd(Level::kWarn), "{}", line);
  return false;
}

}  // namespace weft::log
