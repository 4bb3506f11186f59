// Copyright Weft authors. Helpers shared by the trace loaders.
#include "sim/workload_common.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/errors.h"
#include "common/files.h"
#include "common/json_nesting.h"

namespace weft::sim::internal {
namespace {

using Json = nlohmann::json;

// fopen(path, "rb") that refuses directories (which fopen opens on Linux). On success
// *size_hint is the file's size when it is a regular file, else 0.
absl::StatusOr<std::FILE*> OpenForRead(absl::string_view path, size_t* size_hint) {
  std::string p(path);
  errno = 0;
  std::FILE* f = std::fopen(p.c_str(), "rb");
  if (f == nullptr) return ErrnoError(errno, absl::StrCat(path, ": cannot open"));
  struct stat st;
  *size_hint = 0;
  if (fstat(fileno(f), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      std::fclose(f);
      return ErrnoError(EISDIR, absl::StrCat(path, ": cannot open"));
    }
    if (S_ISREG(st.st_mode) && st.st_size > 0) *size_hint = static_cast<size_t>(st.st_size);
  }
  return f;
}

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Where the JSON lexer is: the line of the last character it consumed.
struct Cursor {
  int64_t line = 1;
  bool pending_newline = false;  // the last consumed character was '\n'
};

// A forward iterator over a char buffer that keeps a Cursor up to date as nlohmann's lexer
// consumes characters (its iterator adapter reads *it, then advances it once per character).
// That gives SAX callbacks the line of the token just read, which nlohmann does not expose.
class CountingIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator() = default;
  CountingIterator(const char* p, Cursor* cursor) : p_(p), cursor_(cursor) {}

  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    if (cursor_->pending_newline) ++cursor_->line;
    cursor_->pending_newline = *p_ == '\n';
    ++p_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  friend bool operator==(const CountingIterator& a, const CountingIterator& b) {
    return a.p_ == b.p_;
  }

 private:
  const char* p_ = nullptr;
  Cursor* cursor_ = nullptr;
};

// Builds the DOM like nlohmann's own SAX DOM parser and records the line of each '{'.
class LineRecordingSax {
 public:
  LineRecordingSax(JsonRecord* rec, const Cursor* cursor) : rec_(rec), cursor_(cursor) {}

  bool null() { return Place(Json(nullptr)) != nullptr; }
  bool boolean(bool v) { return Place(Json(v)) != nullptr; }
  bool number_integer(Json::number_integer_t v) { return Place(Json(v)) != nullptr; }
  bool number_unsigned(Json::number_unsigned_t v) { return Place(Json(v)) != nullptr; }
  bool number_float(Json::number_float_t v, const Json::string_t& /*text*/) {
    return Place(Json(v)) != nullptr;
  }
  bool string(Json::string_t& v) { return Place(Json(std::move(v))) != nullptr; }
  bool binary(Json::binary_t& v) { return Place(Json::binary(std::move(v))) != nullptr; }
  bool start_object(std::size_t /*elements*/) {
    Json* j = Place(Json(Json::value_t::object));
    rec_->object_lines[j->get_ptr<const Json::object_t*>()] = cursor_->line;
    stack_.push_back(j);
    return true;
  }
  bool key(Json::string_t& k) {
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) {
    stack_.push_back(Place(Json(Json::value_t::array)));
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    error_ = ex.what();
    error_line_ = cursor_->line;
    return false;
  }

  const std::string& error() const { return error_; }
  int64_t error_line() const { return error_line_; }

 private:
  // Stores `v` where the parser is (root, next array element or value of the last key).
  // Pointers on stack_ stay valid: a container only grows while it is the innermost open one.
  Json* Place(Json v) {
    if (stack_.empty()) {
      rec_->value = std::move(v);
      return &rec_->value;
    }
    Json* parent = stack_.back();
    if (parent->is_array()) {
      parent->get_ref<Json::array_t&>().push_back(std::move(v));
      return &parent->get_ref<Json::array_t&>().back();
    }
    Json& slot = parent->get_ref<Json::object_t&>()[key_];  // a repeated key: the last wins
    slot = std::move(v);
    return &slot;
  }

  JsonRecord* rec_;
  const Cursor* cursor_;
  std::vector<Json*> stack_;
  std::string key_;
  std::string error_;
  int64_t error_line_ = 0;
};

// "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." ->
// "syntax error ...": the position is reported as the file's line instead.
std::string CleanJsonError(const std::string& what) {
  size_t column = what.find("column ");
  if (column != std::string::npos) {
    size_t colon = what.find(": ", column);
    if (colon != std::string::npos) return what.substr(colon + 2);
  }
  size_t bracket = what.find("] ");
  if (bracket != std::string::npos) return what.substr(bracket + 2);
  return what;
}

}  // namespace

absl::StatusOr<std::string> ReadFileToString(absl::string_view path) {
  absl::StatusOr<std::string> data = ReadFile(std::string(path));
  if (!data.ok()) return data.status();
  absl::string_view content = *data;
  absl::ConsumePrefix(&content, kUtf8Bom);
  if (absl::StripAsciiWhitespace(content).empty())
    return absl::InvalidArgumentError(absl::StrCat(path, ": file is empty"));
  return data;
}

bool ParseInt64(absl::string_view text, int64_t* out) {
  if (text.empty()) return false;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return false;
  *out = v;
  return true;
}

bool ParseDouble(absl::string_view text, double* out) {
  if (text.empty()) return false;
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::string HostOfPath(absl::string_view path) {
  size_t slash = path.rfind('/');
  if (slash != absl::string_view::npos) path.remove_prefix(slash + 1);
  return std::string(path);
}

// ---------------------------------------------------------------------------------------------

WorkloadBuilder::WorkloadBuilder(absl::string_view path, const LoadOptions& opts)
    : path_(path), opts_(opts) {}

std::string WorkloadBuilder::Where(int64_t line) const { return absl::StrCat(path_, ":", line); }

absl::Status WorkloadBuilder::Malformed(int64_t line, absl::string_view what) {
  if (opts_.strict) return absl::InvalidArgumentError(absl::StrCat(Where(line), ": ", what));
  warnings_.push_back(absl::StrCat(Where(line), ": ", what, "; skipped"));
  ++skipped_;
  return absl::OkStatus();
}

bool WorkloadBuilder::Full() const {
  return opts_.max_jobs > 0 && static_cast<int64_t>(jobs_.size()) >= opts_.max_jobs;
}

absl::Status WorkloadBuilder::AddJob(Job job, int64_t line) {
  auto [it, inserted] = id_lines_.emplace(job.id, line);
  if (!inserted) {
    return Malformed(
        line, absl::StrCat("duplicate job id '", job.id, "' (first at line ", it->second, ")"));
  }
  job.source = Where(line);
  jobs_.push_back(std::move(job));
  return absl::OkStatus();
}

Workload WorkloadBuilder::Finish() {
  std::stable_sort(jobs_.begin(), jobs_.end(),
                   [](const Job& a, const Job& b) { return a.submit_ms < b.submit_ms; });
  Workload w;
  w.jobs = std::move(jobs_);
  w.warnings = std::move(warnings_);
  w.skipped_records = skipped_;
  jobs_.clear();
  warnings_.clear();
  id_lines_.clear();
  skipped_ = 0;
  return w;
}

absl::Status CheckWorkload(const Workload& w) {
  std::unordered_map<std::string, size_t> ids;
  for (size_t j = 0; j < w.jobs.size(); ++j) {
    const Job& job = w.jobs[j];
    auto bad = [&](absl::string_view what) {
      return absl::InternalError(
          absl::StrCat("job ", j, " '", job.id, "' (", job.source, "): ", what));
    };
    if (job.id.empty()) return bad("empty id");
    if (!ids.emplace(job.id, j).second) return bad("duplicate id");
    if (job.submit_ms < 0) return bad("negative submit_ms");
    if (j > 0 && job.submit_ms < w.jobs[j - 1].submit_ms) return bad("not sorted by submit_ms");
    if (job.groups.empty()) return bad("no task groups");
    for (size_t g = 0; g < job.groups.size(); ++g) {
      const TaskGroup& group = job.groups[g];
      std::string where = absl::StrCat("group ", g, " '", group.name, "': ");
      if (group.count < 1) return bad(absl::StrCat(where, "count ", group.count, " < 1"));
      if (group.duration_ms < 1) return bad(absl::StrCat(where, "duration_ms < 1"));
      if (group.resource.AnyNegative()) return bad(absl::StrCat(where, "negative resource"));
      if (!group.task_durations_ms.empty()) {
        if (static_cast<int64_t>(group.task_durations_ms.size()) != group.count)
          return bad(absl::StrCat(where, "task_durations_ms size != count"));
        for (int64_t d : group.task_durations_ms) {
          if (d < 1) return bad(absl::StrCat(where, "a task duration < 1"));
        }
      }
      if (!group.task_hosts.empty() && static_cast<int64_t>(group.task_hosts.size()) != group.count)
        return bad(absl::StrCat(where, "task_hosts size != count"));
      for (int dep : group.depends_on) {
        if (dep < 0 || static_cast<size_t>(dep) >= g)
          return bad(absl::StrCat(where, "depends on group ", dep));
      }
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------

int64_t JsonRecord::LineOf(const nlohmann::json& obj) const {
  if (!obj.is_object()) return line;
  auto it = object_lines.find(obj.get_ptr<const Json::object_t*>());
  return it == object_lines.end() ? line : it->second;
}

absl::StatusOr<std::unique_ptr<JsonStreamReader>> JsonStreamReader::Open(absl::string_view path) {
  std::unique_ptr<JsonStreamReader> r(new JsonStreamReader(std::string(path)));
  size_t size_hint = 0;
  absl::StatusOr<std::FILE*> opened = OpenForRead(path, &size_hint);
  if (!opened.ok()) return opened.status();
  r->file_.reset(*opened);
  r->buf_.resize(1 << 16);
  return r;
}

bool JsonStreamReader::Fill() {
  if (pos_ < len_) return true;
  if (file_ == nullptr || read_error_) return false;
  pos_ = 0;
  len_ = std::fread(buf_.data(), 1, buf_.size(), file_.get());
  if (len_ == 0) {
    if (std::ferror(file_.get())) {
      read_error_ = true;
      read_errno_ = errno;
    }
    return false;
  }
  return true;
}

absl::Status JsonStreamReader::FinalStatus() const {
  if (read_error_) return ErrnoError(read_errno_, absl::StrCat(path_, ": cannot read"));
  if (!saw_content_) return absl::InvalidArgumentError(absl::StrCat(path_, ": file is empty"));
  return absl::OkStatus();
}

bool JsonStreamReader::Next(JsonRecord* rec) {
  *rec = JsonRecord();
  if (at_start_) {
    at_start_ = false;
    if (Fill() && len_ - pos_ >= kUtf8Bom.size() &&
        absl::string_view(buf_.data() + pos_, kUtf8Bom.size()) == kUtf8Bom) {
      pos_ += kUtf8Bom.size();
    }
  }
  while (true) {
    if (!Fill()) return false;
    char c = buf_[pos_];
    if (!IsJsonSpace(c)) break;
    if (c == '\n') ++line_;
    ++pos_;
  }
  saw_content_ = true;
  rec->line = line_;

  if (buf_[pos_] != '{') {
    // Stray text: report it once (with its start) and go on at the next '{'.
    std::string snippet;
    int64_t first_line = line_;
    while (Fill() && buf_[pos_] != '{') {
      char c = buf_[pos_++];
      if (c == '\n') ++line_;
      if (line_ == first_line && snippet.size() < 24 && c != '\r')
        snippet.push_back(absl::ascii_isprint(static_cast<unsigned char>(c)) ? c : '?');
    }
    rec->error_line = first_line;
    rec->error = absl::StrCat("unexpected text outside a JSON object: '", snippet, "'");
    return true;
  }

  std::string text;
  JsonNestingScanner nesting;
  bool too_deep = false;
  bool closed = false;
  while (!closed && Fill()) {
    // Scan the buffered run, then append it in one go.
    size_t start = pos_;
    while (pos_ < len_) {
      char c = buf_[pos_++];
      if (c == '\n') ++line_;
      if (nesting.Feed(c)) {
        closed = true;
        break;
      }
      if (nesting.max_depth() > kMaxDepth) too_deep = true;
    }
    if (!too_deep) text.append(buf_.data() + start, pos_ - start);
  }
  if (!closed) {
    rec->error_line = rec->line;
    rec->error = "JSON object is not closed before the end of the file";
    return true;
  }
  if (too_deep) {
    rec->error_line = rec->line;
    rec->error = absl::StrCat("JSON nested deeper than ", kMaxDepth, " levels");
    return true;
  }
  Parse(std::move(text), rec);
  return true;
}

void JsonStreamReader::Parse(std::string text, JsonRecord* rec) {
  Cursor cursor;
  cursor.line = rec->line;
  LineRecordingSax sax(rec, &cursor);
  bool ok = false;
  std::string error;
  try {
    ok = Json::sax_parse(CountingIterator(text.data(), &cursor),
                         CountingIterator(text.data() + text.size(), &cursor), &sax);
    if (!ok) error = sax.error();
  } catch (const std::exception& e) {  // nlohmann reports through the SAX; this is a backstop
    ok = false;
    error = e.what();
  }
  if (!ok) {
    rec->value = Json();
    rec->object_lines.clear();
    rec->error_line = sax.error_line() > 0 ? sax.error_line() : rec->line;
    rec->error = absl::StrCat("invalid JSON: ", CleanJsonError(error));
  }
}

// ---------------------------------------------------------------------------------------------

bool JsonFields::Has(const char* key) const { return Find(key) != nullptr; }

const nlohmann::json* JsonFields::Find(const char* key) const {
  if (!obj_.is_object()) return nullptr;
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonFields::Fail(std::string what) {
  err_->line = line_;
  err_->what = std::move(what);
  return false;
}

bool JsonFields::Int(const char* key, bool required, int64_t* out) {
  if (!obj_.is_object())
    return Fail(absl::StrCat("expected a JSON object, got ", obj_.type_name()));
  const Json* v = Find(key);
  if (v == nullptr) return required ? Fail(absl::StrCat("missing ", key)) : true;
  switch (v->type()) {
    case Json::value_t::number_integer:
      *out = v->get<int64_t>();
      return true;
    case Json::value_t::number_unsigned: {
      uint64_t u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return Fail(absl::StrCat(key, ": ", u, " is out of range"));
      *out = static_cast<int64_t>(u);
      return true;
    }
    case Json::value_t::number_float: {
      double d = v->get<double>();
      // 2^62 bounds the cast; any time that large is rejected by the range checks anyway.
      if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 4.6e18)
        return Fail(absl::StrCat(key, ": ", v->dump(), " is not an integer"));
      *out = static_cast<int64_t>(d);
      return true;
    }
    case Json::value_t::string: {
      const std::string& s = v->get_ref<const std::string&>();
      if (ParseInt64(absl::StripAsciiWhitespace(s), out)) return true;
      return Fail(absl::StrCat(key, ": '", s.substr(0, 40), "' is not an integer"));
    }
    default:
      return Fail(absl::StrCat(key, ": expected an integer, got ", v->type_name()));
  }
}

bool JsonFields::IntIn(const char* key, bool required, int64_t lo, int64_t hi, int64_t* out) {
  int64_t v = *out;
  if (!Int(key, required, &v)) return false;
  if (!Has(key)) return true;
  if (v < lo) {
    return Fail(lo == 0 ? absl::StrCat(key, ": ", v, " is negative")
                        : absl::StrCat(key, ": ", v, " must be >= ", lo));
  }
  if (v > hi) return Fail(absl::StrCat(key, ": ", v, " is out of range"));
  *out = v;
  return true;
}

bool JsonFields::String(const char* key, bool required, std::string* out) {
  if (!obj_.is_object())
    return Fail(absl::StrCat("expected a JSON object, got ", obj_.type_name()));
  const Json* v = Find(key);
  if (v == nullptr) return required ? Fail(absl::StrCat("missing ", key)) : true;
  if (v->is_string()) {
    *out = v->get<std::string>();
    return true;
  }
  if (v->is_number()) {
    *out = v->dump();
    return true;
  }
  return Fail(absl::StrCat(key, ": expected a string, got ", v->type_name()));
}

absl::Status ValidateDefaults(const DefaultTaskResources& defaults,
                              const ResourceTypeRegistry& registry) {
  for (const auto& [name, r] :
       {std::pair{"map", &defaults.map}, std::pair{"reduce", &defaults.reduce}}) {
    if (absl::Status s = registry.Normalize(*r).status(); !s.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("DefaultTaskResources.", name, ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace weft::sim::internal
