// Copyright Weft authors. Helpers shared by the trace loaders of sim/workload.h.
//
// Internal to the weft_sim_workload library (and its tests): not a stable API.
#ifndef WEFT_SIM_WORKLOAD_COMMON_H_
#define WEFT_SIM_WORKLOAD_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/workload.h"

namespace weft::sim::internal {

// The largest time or duration any loader accepts, in ms (2^52 ms, about 142,000 years; epoch
// milliseconds of today are ~2^40). Keeps every sum of times far from int64 overflow; larger
// values are malformed.
inline constexpr int64_t kMaxTimeMs = int64_t{1} << 52;
// kMaxTimeMs in seconds, for formats that count in seconds.
inline constexpr int64_t kMaxTimeS = kMaxTimeMs / 1000;

// The most tasks with per-task durations or hosts that one job of a trace (SLS, Rumen) may
// expand to; beyond it the job is malformed. Bounds memory on hostile input.
inline constexpr int64_t kMaxTraceTasksPerJob = 1'000'000;

// Reads a whole file. Errors name the file: it cannot be opened or read, or it is empty (no
// byte other than whitespace and a UTF-8 byte-order mark).
absl::StatusOr<std::string> ReadFileToString(absl::string_view path);

// Whole-text decimal integer: optional '-', digits, nothing else (no spaces, no '+').
bool ParseInt64(absl::string_view text, int64_t* out);
// Whole-text finite floating-point number (decimal or exponent form; no nan/inf).
bool ParseDouble(absl::string_view text, double* out);

// The host of a topology path: the part after the last '/' ("/default-rack/node1" -> "node1",
// "node1" -> "node1", "" -> "").
std::string HostOfPath(absl::string_view path);

// The byte-order mark some editors put at the start of UTF-8 files.
inline constexpr absl::string_view kUtf8Bom = "\xEF\xBB\xBF";

// One malformed record: the line it is reported at and what was wrong (no file name).
struct RecordError {
  int64_t line = 0;
  std::string what;
};

// Collects the jobs of one load and applies LoadOptions: strict versus skip-and-warn for
// malformed records, max_jobs, unique job ids, the final sort by submit time.
class WorkloadBuilder {
 public:
  WorkloadBuilder(absl::string_view path, const LoadOptions& opts);

  const std::string& path() const { return path_; }
  // "path:line".
  std::string Where(int64_t line) const;

  // Reports a malformed record. Strict: returns InvalidArgument "path:line: what" and the
  // load must fail with it. Otherwise adds the warning "path:line: what; skipped", counts the
  // record in skipped_records and returns OK.
  absl::Status Malformed(int64_t line, absl::string_view what);
  absl::Status Malformed(const RecordError& e) { return Malformed(e.line, e.what); }

  // Adds a warning line as is (summaries that are not malformed records).
  void Warn(std::string line) { warnings_.push_back(std::move(line)); }

  // True once opts.max_jobs jobs have been added (never when max_jobs is 0).
  bool Full() const;

  // Adds `job` read at `line` and sets its source to "path:line". A job id already used is a
  // malformed record (the job is not added); the returned status is Malformed()'s.
  absl::Status AddJob(Job job, int64_t line);

  int64_t job_count() const { return static_cast<int64_t>(jobs_.size()); }
  // The jobs added so far, in file order, for post-processing (e.g. making times relative).
  std::vector<Job>& jobs() { return jobs_; }

  // Sorts the jobs by submit_ms (stable: ties keep file order) and hands the workload over.
  Workload Finish();

 private:
  std::string path_;
  LoadOptions opts_;
  std::vector<Job> jobs_;
  std::unordered_map<std::string, int64_t> id_lines_;  // job id -> line it was first read at
  std::vector<std::string> warnings_;
  int64_t skipped_ = 0;
};

// Checks the promises of sim/workload.h on a loaded workload: ids unique and non-empty,
// submit_ms >= 0 and sorted, every job has groups, count >= 1, durations >= 1, per-task
// vectors empty or `count` long, dependencies on earlier groups only, no negative resource.
// Used by the tests; cheap enough for a simulator to call on untrusted input.
absl::Status CheckWorkload(const Workload& w);

// Checks that the default map and reduce resources normalise under `registry`; the error names
// the field ("DefaultTaskResources.map: ...").
absl::Status ValidateDefaults(const DefaultTaskResources& defaults,
                              const ResourceTypeRegistry& registry);

// ---------------------------------------------------------------------------------------------
// Streams of concatenated JSON objects (SLS native and Rumen traces).

// One top-level record of a concatenated-JSON file.
struct JsonRecord {
  int64_t line = 0;        // line of the record's first character
  nlohmann::json value;    // the parsed object, when `error` is empty
  std::string error;       // non-empty: the record is malformed (bad syntax, stray text)
  int64_t error_line = 0;  // where the error was found
  // Line of the '{' that opened each object of `value`, keyed by its object_t address.
  std::unordered_map<const void*, int64_t> object_lines;

  // Line of the '{' of `obj` (an object inside `value`); `line` when unknown.
  int64_t LineOf(const nlohmann::json& obj) const;
};

// Reads a file of concatenated JSON objects one record at a time, in 64 KiB chunks: memory
// holds one record, never the whole file. Text outside objects and objects that do not parse
// become records with `error` set, and reading goes on with the next '{'.
class JsonStreamReader {
 public:
  // Fails (naming the file) when the file cannot be opened.
  static absl::StatusOr<std::unique_ptr<JsonStreamReader>> Open(absl::string_view path);

  // Reads the next record into *rec. Returns false at the end of the input.
  bool Next(JsonRecord* rec);

  // After Next() returned false: OK, or the file-level error (read failure, empty file).
  absl::Status FinalStatus() const;

  // Objects nested deeper than this are malformed records (bounds recursion and memory).
  static constexpr int kMaxDepth = 512;

 private:
  explicit JsonStreamReader(std::string path) : path_(std::move(path)) {}
  // Makes buf_[pos_] readable; false at end of input (or on a read error).
  bool Fill();
  void Parse(std::string text, JsonRecord* rec);

  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  std::string path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::vector<char> buf_;
  size_t pos_ = 0;
  size_t len_ = 0;
  int64_t line_ = 1;
  bool at_start_ = true;  // nothing read yet (a byte-order mark may follow)
  bool saw_content_ = false;
  bool read_error_ = false;
  int read_errno_ = 0;  // errno of the failed read
};

// Typed access to the fields of one JSON object of a trace, reporting problems as one
// RecordError naming the field. SLS reads every field with toString() and parses it, so
// integers may also be given as strings ("20"); integral floats (20.0) are accepted too.
class JsonFields {
 public:
  // `obj` must outlive this; a non-object makes every access report an error.
  JsonFields(const nlohmann::json& obj, int64_t line, RecordError* err)
      : obj_(obj), line_(line), err_(err) {}

  // True when the key is present and not null.
  bool Has(const char* key) const;
  // The field as an int64. Absent or null: leaves *out unchanged and returns !required.
  // Present but not an integer (or out of int64 range): sets the error and returns false.
  bool Int(const char* key, bool required, int64_t* out);
  // Int(), then checks lo <= value <= hi ("key: -1 is negative", "key: 0 must be >= 1",
  // "key: ... is out of range").
  bool IntIn(const char* key, bool required, int64_t lo, int64_t hi, int64_t* out);
  // The field as a string (numbers are printed). Same contract as Int().
  bool String(const char* key, bool required, std::string* out);
  // Sets the error to "what" at this object's line and returns false.
  bool Fail(std::string what);

  int64_t line() const { return line_; }

 private:
  const nlohmann::json* Find(const char* key) const;

  const nlohmann::json& obj_;
  int64_t line_;
  RecordError* err_;
};

}  // namespace weft::sim::internal

#endif  // WEFT_SIM_WORKLOAD_COMMON_H_
