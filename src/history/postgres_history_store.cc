// Copyright Weft authors.
#include "history/postgres_history_store.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft::history {
namespace {

// The advisory lock that serialises migrations of one database ("WeftHis\0" as an int64).
constexpr const char* kPgMigrationLock = "SELECT pg_advisory_xact_lock(6297552303564616448)";

// Rows per multi-row INSERT (PostgreSQL takes at most 65535 parameters per statement).
constexpr size_t kParamsPerStatement = 20000;

// Migration n (1-based) brings the schema from version n-1 to n: its statements run in order.
// Append; never edit. Column meanings as in the SQLite store (sqlite_history_store.cc).
const store::pg::Migrations& PgMigrations() {
  static const auto* migrations = new store::pg::Migrations{
      {
          R"sql(CREATE TABLE applications (
                  application_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
                  user_name TEXT COLLATE "C" NOT NULL,
                  queue TEXT COLLATE "C" NOT NULL,
                  final_state INTEGER NOT NULL,
                  finish_ms BIGINT NOT NULL,
                  memory_mb_rs BIGINT NOT NULL DEFAULT 0,
                  vcores_rs BIGINT NOT NULL DEFAULT 0,
                  memory_mb_seconds_used BIGINT NOT NULL DEFAULT 0,
                  cpu_time_ms BIGINT NOT NULL DEFAULT 0,
                  network_tx_bytes BIGINT NOT NULL DEFAULT 0,
                  peak_memory_bytes BIGINT NOT NULL DEFAULT 0,
                  record BYTEA NOT NULL))sql",
          R"sql(CREATE INDEX applications_by_user ON applications (user_name, finish_ms))sql",
          R"sql(CREATE INDEX applications_by_queue ON applications (queue, finish_ms))sql",
          // Covers QueueReport and UserReport (index-only scans once vacuumed).
          R"sql(CREATE INDEX applications_by_finish ON applications (finish_ms)
                  INCLUDE (queue, user_name, memory_mb_rs, vcores_rs, memory_mb_seconds_used,
                           cpu_time_ms, network_tx_bytes))sql",
          R"sql(CREATE TABLE attempts (
                  attempt_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
                  application_id TEXT COLLATE "C" NOT NULL,
                  record BYTEA NOT NULL))sql",
          R"sql(CREATE INDEX attempts_by_application ON attempts (application_id))sql",
          R"sql(CREATE TABLE containers (
                  container_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
                  application_id TEXT COLLATE "C" NOT NULL,
                  attempt_id TEXT COLLATE "C" NOT NULL,
                  memory_mb_rs BIGINT NOT NULL,
                  vcores_rs BIGINT NOT NULL,
                  memory_mb_seconds BIGINT NOT NULL,
                  cpu_time_ms BIGINT NOT NULL,
                  network_tx_bytes BIGINT NOT NULL,
                  max_rss_bytes BIGINT NOT NULL,
                  record BYTEA NOT NULL))sql",
          R"sql(CREATE INDEX containers_by_application
                  ON containers (application_id, container_id))sql",
          R"sql(CREATE INDEX containers_by_attempt ON containers (attempt_id, container_id))sql",
          R"sql(CREATE TABLE container_resource_seconds (
                  container_id TEXT COLLATE "C" NOT NULL,
                  application_id TEXT COLLATE "C" NOT NULL,
                  resource_type TEXT COLLATE "C" NOT NULL,
                  seconds BIGINT NOT NULL,
                  PRIMARY KEY (container_id, resource_type)))sql",
          R"sql(CREATE INDEX container_resource_seconds_by_application
                  ON container_resource_seconds (application_id))sql",
          // The history names every user, queue and application: the store's role only.
          R"sql(REVOKE ALL ON applications, attempts, containers, container_resource_seconds,
                  weft_history_schema FROM PUBLIC)sql",
      },
  };
  return *migrations;
}

constexpr absl::string_view kPgMemoryType = "memory-mb";
constexpr absl::string_view kPgVcoresType = "vcores";

// What Applications() reads from each row, in this order.
constexpr const char* kPgApplicationColumns =
    "record, memory_mb_rs, vcores_rs, memory_mb_seconds_used, cpu_time_ms, network_tx_bytes, "
    "peak_memory_bytes, application_id";

// ListApplications' order in SQL (history_store.h).
constexpr const char* kPgListOrder = " ORDER BY finish_ms DESC, application_id ASC";

// A text[] literal of `values` ({"a","b"}), for "= ANY($n::text[])".
std::string TextArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    for (char c : values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

// An int8 column of a binary-format result.
int64_t Int8(const PGresult* result, int row, int col) {
  if (PQgetlength(result, row, col) != 8) return 0;
  const auto* p = reinterpret_cast<const unsigned char*>(PQgetvalue(result, row, col));
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | p[i];
  return static_cast<int64_t>(value);
}

std::string Bytes(const PGresult* result, int row, int col) {
  return std::string(PQgetvalue(result, row, col), PQgetlength(result, row, col));
}

// The records of `records` whose id no later record repeats (a later Put wins), in order: one
// multi-row upsert may not touch a row twice.
template <typename T, typename IdOf>
std::vector<const T*> LastOfEach(const std::vector<T>& records, IdOf id_of) {
  absl::flat_hash_map<std::string, size_t> last;
  for (size_t i = 0; i < records.size(); ++i) last[id_of(records[i])] = i;
  std::vector<const T*> out;
  out.reserve(last.size());
  for (size_t i = 0; i < records.size(); ++i) {
    if (last[id_of(records[i])] == i) out.push_back(&records[i]);
  }
  return out;
}

void PgSetResourceSeconds(absl::string_view type, int64_t seconds,
                          v1::ApplicationHistoryRecord* app) {
  if (seconds != 0) (*app->mutable_resource_seconds())[std::string(type)] = seconds;
}

}  // namespace

PostgresHistoryStore::PostgresHistoryStore(std::string uri)
    : redacted_uri_(store::pg::RedactPostgresUri(uri)),
      conn_(std::move(uri), {.store = "history store"}) {}

absl::StatusOr<std::unique_ptr<PostgresHistoryStore>> PostgresHistoryStore::Open(
    absl::string_view uri) {
  if (absl::Status s = store::pg::CheckUri(uri, "history store URL"); !s.ok()) return s;
  std::unique_ptr<PostgresHistoryStore> store(new PostgresHistoryStore(std::string(uri)));
  absl::MutexLock lock(&store->mu_);
  if (absl::Status s = store->conn_.Connect(); !s.ok()) return s;
  if (absl::Status s = store->conn_.Migrate({.version_table = "weft_history_schema",
                                             .lock_sql = kPgMigrationLock,
                                             .version = kSchemaVersion,
                                             .migrations = &PgMigrations()});
      !s.ok()) {
    return s;
  }
  return store;
}

absl::StatusOr<PostgresHistoryStore::Result> PostgresHistoryStore::Exec(
    absl::string_view what, const std::string& sql, const std::vector<Param>& params) {
  std::vector<store::pg::Param> views;
  views.reserve(params.size());
  for (const Param& p : params) views.push_back({p.value, p.binary});
  return conn_.Exec(what, sql, views);
}

template <typename T>
absl::StatusOr<T> PostgresHistoryStore::Read(absl::string_view what,
                                             absl::FunctionRef<absl::StatusOr<T>()> read) {
  std::optional<T> out;
  absl::Status status =
      conn_.WithConnection(what, [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        absl::StatusOr<T> value = read();
        if (!value.ok()) return value.status();
        out = *std::move(value);
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return *std::move(out);
}

absl::Status PostgresHistoryStore::WriteBatch(const HistoryBatch& batch) {
  // Inserts `rows` (each `width` parameters) with "<head> VALUES (...), ... <tail>", as few
  // statements as the parameter limit allows. `casts` are the columns' types.
  auto insert_rows = [&](absl::string_view what, const std::string& head,
                         const std::vector<const char*>& casts, const std::string& tail,
                         std::vector<Param> params)
                         ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    const size_t width = casts.size();
    const size_t rows_per_statement = kParamsPerStatement / width;
    const size_t rows = params.size() / width;
    for (size_t first = 0; first < rows; first += rows_per_statement) {
      const size_t count = std::min(rows_per_statement, rows - first);
      std::string sql = head + " VALUES ";
      for (size_t r = 0; r < count; ++r) {
        absl::StrAppend(&sql, r == 0 ? "(" : ", (");
        for (size_t c = 0; c < width; ++c) {
          absl::StrAppend(&sql, c == 0 ? "" : ", ", "$", r * width + c + 1, "::", casts[c]);
        }
        absl::StrAppend(&sql, ")");
      }
      absl::StrAppend(&sql, " ", tail);
      std::vector<Param> chunk(std::make_move_iterator(params.begin() + first * width),
                               std::make_move_iterator(params.begin() + (first + count) * width));
      if (absl::Status s = Exec(what, sql, chunk).status(); !s.ok()) return s;
    }
    return absl::OkStatus();
  };

  std::set<std::string> dirty;
  // Containers: the applications they were under before count as changed too.
  const std::vector<const v1::ContainerHistoryRecord*> containers =
      LastOfEach(batch.containers, [](const auto& c) { return c.container_id(); });
  if (!containers.empty()) {
    std::vector<std::string> ids;
    ids.reserve(containers.size());
    for (const auto* c : containers) ids.push_back(c->container_id());
    const std::string id_array = TextArray(ids);
    absl::StatusOr<Result> old =
        Exec("reading the containers' applications",
             "SELECT DISTINCT application_id FROM containers WHERE container_id = ANY($1::text[])",
             {{id_array}});
    if (!old.ok()) return old.status();
    for (int row = 0; row < PQntuples(old->get()); ++row) dirty.insert(Bytes(old->get(), row, 0));
    std::vector<Param> params;
    std::vector<Param> others;
    params.reserve(containers.size() * 10);
    for (const v1::ContainerHistoryRecord* c : containers) {
      dirty.insert(c->application_id());
      const ContainerContribution contribution = ContributionOf(*c);
      int64_t memory = 0, vcores = 0;
      for (const auto& [type, seconds] : contribution.resource_seconds) {
        if (type == kPgMemoryType) {
          memory = seconds;
        } else if (type == kPgVcoresType) {
          vcores = seconds;
        } else if (seconds != 0) {
          others.push_back({c->container_id()});
          others.push_back({c->application_id()});
          others.push_back({type});
          others.push_back({absl::StrCat(seconds)});
        }
      }
      params.push_back({c->container_id()});
      params.push_back({c->application_id()});
      params.push_back({c->attempt_id()});
      params.push_back({absl::StrCat(memory)});
      params.push_back({absl::StrCat(vcores)});
      params.push_back({absl::StrCat(contribution.memory_mb_seconds_used)});
      params.push_back({absl::StrCat(contribution.cpu_time_ms)});
      params.push_back({absl::StrCat(contribution.network_tx_bytes)});
      params.push_back({absl::StrCat(contribution.peak_memory_bytes)});
      params.push_back({c->SerializeAsString(), true});
    }
    if (absl::Status s = insert_rows(
            "writing containers",
            "INSERT INTO containers (container_id, application_id, attempt_id, memory_mb_rs, "
            "vcores_rs, memory_mb_seconds, cpu_time_ms, network_tx_bytes, max_rss_bytes, record)",
            {"text", "text", "text", "bigint", "bigint", "bigint", "bigint", "bigint", "bigint",
             "bytea"},
            "ON CONFLICT (container_id) DO UPDATE SET application_id = EXCLUDED.application_id, "
            "attempt_id = EXCLUDED.attempt_id, memory_mb_rs = EXCLUDED.memory_mb_rs, vcores_rs = "
            "EXCLUDED.vcores_rs, memory_mb_seconds = EXCLUDED.memory_mb_seconds, cpu_time_ms = "
            "EXCLUDED.cpu_time_ms, network_tx_bytes = EXCLUDED.network_tx_bytes, max_rss_bytes = "
            "EXCLUDED.max_rss_bytes, record = EXCLUDED.record",
            std::move(params));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = Exec("writing containers' other resource types",
                              "DELETE FROM container_resource_seconds WHERE container_id = "
                              "ANY($1::text[])",
                              {{id_array}})
                             .status();
        !s.ok()) {
      return s;
    }
    if (!others.empty()) {
      if (absl::Status s = insert_rows("writing containers' other resource types",
                                       "INSERT INTO container_resource_seconds (container_id, "
                                       "application_id, resource_type, seconds)",
                                       {"text", "text", "text", "bigint"}, "", std::move(others));
          !s.ok()) {
        return s;
      }
    }
  }

  const std::vector<const v1::AttemptHistoryRecord*> attempts =
      LastOfEach(batch.attempts, [](const auto& a) { return a.attempt_id(); });
  if (!attempts.empty()) {
    std::vector<Param> params;
    for (const v1::AttemptHistoryRecord* a : attempts) {
      params.push_back({a->attempt_id()});
      params.push_back({a->application_id()});
      params.push_back({a->SerializeAsString(), true});
    }
    if (absl::Status s = insert_rows(
            "writing attempts", "INSERT INTO attempts (attempt_id, application_id, record)",
            {"text", "text", "bytea"},
            "ON CONFLICT (attempt_id) DO UPDATE SET application_id = EXCLUDED.application_id, "
            "record = EXCLUDED.record",
            std::move(params));
        !s.ok()) {
      return s;
    }
  }

  const std::vector<const v1::ApplicationHistoryRecord*> apps =
      LastOfEach(batch.applications, [](const auto& a) { return a.application_id(); });
  if (!apps.empty()) {
    std::vector<Param> params;
    for (const v1::ApplicationHistoryRecord* a : apps) {
      dirty.insert(a->application_id());
      params.push_back({a->application_id()});
      params.push_back({a->user()});
      params.push_back({a->queue()});
      params.push_back({absl::StrCat(static_cast<int>(a->final_state()))});
      params.push_back({absl::StrCat(a->finish_time_ms())});
      params.push_back({a->SerializeAsString(), true});
    }
    // The aggregate columns are left alone: the recomputation below derives them.
    if (absl::Status s = insert_rows(
            "writing applications",
            "INSERT INTO applications (application_id, user_name, queue, final_state, finish_ms, "
            "record)",
            {"text", "text", "text", "integer", "bigint", "bytea"},
            "ON CONFLICT (application_id) DO UPDATE SET user_name = EXCLUDED.user_name, queue = "
            "EXCLUDED.queue, final_state = EXCLUDED.final_state, finish_ms = EXCLUDED.finish_ms, "
            "record = EXCLUDED.record",
            std::move(params));
        !s.ok()) {
      return s;
    }
  }

  if (dirty.empty()) return absl::OkStatus();
  return Exec("summing the applications' containers",
              "UPDATE applications a SET (memory_mb_rs, vcores_rs, memory_mb_seconds_used, "
              "cpu_time_ms, network_tx_bytes, peak_memory_bytes) = (SELECT "
              "coalesce(sum(c.memory_mb_rs), 0)::bigint, coalesce(sum(c.vcores_rs), 0)::bigint, "
              "coalesce(sum(c.memory_mb_seconds), 0)::bigint, "
              "coalesce(sum(c.cpu_time_ms), 0)::bigint, "
              "coalesce(sum(c.network_tx_bytes), 0)::bigint, coalesce(max(c.max_rss_bytes), 0) "
              "FROM containers c WHERE c.application_id = a.application_id) "
              "WHERE a.application_id = ANY($1::text[])",
              {{TextArray(std::vector<std::string>(dirty.begin(), dirty.end()))}})
      .status();
}

absl::Status PostgresHistoryStore::DoPutBatch(const HistoryBatch& batch) {
  absl::MutexLock lock(&mu_);
  return conn_.WithConnection("writing", [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return conn_.InTransaction(
        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return WriteBatch(batch); });
  });
}

absl::Status PostgresHistoryStore::DoPutApplication(const v1::ApplicationHistoryRecord& record) {
  HistoryBatch batch;
  batch.applications.push_back(record);
  return DoPutBatch(batch);
}

absl::Status PostgresHistoryStore::DoPutAttempt(const v1::AttemptHistoryRecord& record) {
  HistoryBatch batch;
  batch.attempts.push_back(record);
  return DoPutBatch(batch);
}

absl::Status PostgresHistoryStore::DoPutContainer(const v1::ContainerHistoryRecord& record) {
  HistoryBatch batch;
  batch.containers.push_back(record);
  return DoPutBatch(batch);
}

template <typename T>
absl::StatusOr<std::vector<T>> PostgresHistoryStore::Records(absl::string_view what,
                                                             const std::string& sql,
                                                             const std::vector<Param>& params) {
  absl::StatusOr<Result> result = Exec(what, sql, params);
  if (!result.ok()) return result.status();
  std::vector<T> out;
  const int rows = PQntuples(result->get());
  out.reserve(rows);
  for (int row = 0; row < rows; ++row) {
    if (!out.emplace_back().ParseFromArray(PQgetvalue(result->get(), row, 0),
                                           PQgetlength(result->get(), row, 0))) {
      return absl::DataLossError(
          absl::StrCat(what, ": a stored ", T::descriptor()->name(), " does not parse"));
    }
  }
  return out;
}

absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> PostgresHistoryStore::Applications(
    absl::string_view what, const std::string& sql, const std::vector<Param>& params) {
  absl::StatusOr<Result> result = Exec(what, sql, params);
  if (!result.ok()) return result.status();
  const PGresult* r = result->get();
  std::vector<v1::ApplicationHistoryRecord> out;
  std::map<std::string, size_t> index;
  const int rows = PQntuples(r);
  out.reserve(rows);
  for (int row = 0; row < rows; ++row) {
    v1::ApplicationHistoryRecord& app = out.emplace_back();
    if (!app.ParseFromArray(PQgetvalue(r, row, 0), PQgetlength(r, row, 0))) {
      return absl::DataLossError(
          absl::StrCat(what, ": a stored ApplicationHistoryRecord does not parse"));
    }
    app.clear_resource_seconds();
    PgSetResourceSeconds(kPgMemoryType, Int8(r, row, 1), &app);
    PgSetResourceSeconds(kPgVcoresType, Int8(r, row, 2), &app);
    app.set_memory_mb_seconds_used(Int8(r, row, 3));
    app.set_cpu_time_ms(Int8(r, row, 4));
    app.set_network_tx_bytes(Int8(r, row, 5));
    app.set_peak_memory_bytes(Int8(r, row, 6));
    index[Bytes(r, row, 7)] = static_cast<size_t>(row);
  }
  if (out.empty()) return out;
  std::vector<std::string> ids;
  ids.reserve(index.size());
  for (const auto& [id, i] : index) ids.push_back(id);
  absl::StatusOr<Result> others =
      Exec(what,
           "SELECT application_id, resource_type, sum(seconds)::bigint FROM "
           "container_resource_seconds WHERE application_id = ANY($1::text[]) GROUP BY 1, 2",
           {{TextArray(ids)}});
  if (!others.ok()) return others.status();
  for (int row = 0; row < PQntuples(others->get()); ++row) {
    auto it = index.find(Bytes(others->get(), row, 0));
    if (it == index.end()) continue;
    PgSetResourceSeconds(Bytes(others->get(), row, 1), Int8(others->get(), row, 2),
                         &out[it->second]);
  }
  return out;
}

absl::StatusOr<std::optional<v1::ApplicationHistoryRecord>> PostgresHistoryStore::DoGetApplication(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  using Found = std::optional<v1::ApplicationHistoryRecord>;
  return Read<Found>(
      "reading an application", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::StatusOr<Found> {
        auto apps = Applications("reading",
                                 absl::StrCat("SELECT ", kPgApplicationColumns,
                                              " FROM applications WHERE application_id = $1"),
                                 {{id}});
        if (!apps.ok()) return apps.status();
        if (apps->empty()) return Found();
        return Found(std::move(apps->front()));
      });
}

absl::StatusOr<std::optional<v1::AttemptHistoryRecord>> PostgresHistoryStore::DoGetAttempt(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  using Found = std::optional<v1::AttemptHistoryRecord>;
  return Read<Found>("reading an attempt",
                     [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::StatusOr<Found> {
                       auto records = Records<v1::AttemptHistoryRecord>(
                           "reading", "SELECT record FROM attempts WHERE attempt_id = $1", {{id}});
                       if (!records.ok()) return records.status();
                       if (records->empty()) return Found();
                       return Found(std::move(records->front()));
                     });
}

absl::StatusOr<std::optional<v1::ContainerHistoryRecord>> PostgresHistoryStore::DoGetContainer(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  using Found = std::optional<v1::ContainerHistoryRecord>;
  return Read<Found>(
      "reading a container", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::StatusOr<Found> {
        auto records = Records<v1::ContainerHistoryRecord>(
            "reading", "SELECT record FROM containers WHERE container_id = $1", {{id}});
        if (!records.ok()) return records.status();
        if (records->empty()) return Found();
        return Found(std::move(records->front()));
      });
}

absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> PostgresHistoryStore::DoListApplications(
    const ApplicationFilter& filter) {
  std::string sql = absl::StrCat("SELECT ", kPgApplicationColumns, " FROM applications WHERE TRUE");
  std::vector<Param> params;
  auto next = [&](std::string value, absl::string_view cast) {
    params.push_back({std::move(value)});
    return absl::StrCat("$", params.size(), "::", cast);
  };
  if (!filter.user.empty()) absl::StrAppend(&sql, " AND user_name = ", next(filter.user, "text"));
  if (!filter.queue.empty()) absl::StrAppend(&sql, " AND queue = ", next(filter.queue, "text"));
  if (!filter.states.empty()) {
    std::vector<std::string> states;
    for (v1::ApplicationState state : filter.states) {
      states.push_back(absl::StrCat(static_cast<int>(state)));
    }
    absl::StrAppend(&sql, " AND final_state = ANY(",
                    next(absl::StrCat("{", absl::StrJoin(states, ","), "}"), "integer[]"), ")");
  }
  if (filter.finished_since_ms) {
    absl::StrAppend(&sql,
                    " AND finish_ms >= ", next(absl::StrCat(*filter.finished_since_ms), "bigint"));
  }
  if (filter.finished_until_ms) {
    absl::StrAppend(&sql, " AND finish_ms < ",
                    next(absl::StrCat(*filter.finished_until_ms), "bigint"));
  }
  absl::StrAppend(&sql, kPgListOrder);
  if (filter.limit > 0)
    absl::StrAppend(&sql, " LIMIT ", next(absl::StrCat(filter.limit), "bigint"));
  absl::MutexLock lock(&mu_);
  using Apps = std::vector<v1::ApplicationHistoryRecord>;
  return Read<Apps>("listing applications", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return Applications("listing", sql, params);
  });
}

absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> PostgresHistoryStore::DoListAttempts(
    const std::string& application_id) {
  absl::MutexLock lock(&mu_);
  using Attempts = std::vector<v1::AttemptHistoryRecord>;
  return Read<Attempts>("listing attempts", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return Records<v1::AttemptHistoryRecord>(
        "listing", "SELECT record FROM attempts WHERE application_id = $1 ORDER BY attempt_id",
        {{application_id}});
  });
}

absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> PostgresHistoryStore::DoListContainers(
    const std::string& application_id, const std::string& attempt_id) {
  std::string sql = "SELECT record FROM containers WHERE TRUE";
  std::vector<Param> params;
  if (!application_id.empty()) {
    params.push_back({application_id});
    absl::StrAppend(&sql, " AND application_id = $", params.size());
  }
  if (!attempt_id.empty()) {
    params.push_back({attempt_id});
    absl::StrAppend(&sql, " AND attempt_id = $", params.size());
  }
  absl::StrAppend(&sql, " ORDER BY container_id");
  absl::MutexLock lock(&mu_);
  using Containers = std::vector<v1::ContainerHistoryRecord>;
  return Read<Containers>("listing containers", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return Records<v1::ContainerHistoryRecord>("listing", sql, params);
  });
}

absl::StatusOr<int64_t> PostgresHistoryStore::DoPrune(int64_t older_than_ms,
                                                      std::optional<int64_t> keep_at_most) {
  std::string choose = "SELECT application_id FROM applications WHERE finish_ms < $1::bigint";
  std::vector<Param> params = {{absl::StrCat(older_than_ms)}};
  if (keep_at_most.has_value()) {
    absl::StrAppend(&choose,
                    " UNION SELECT application_id FROM (SELECT application_id FROM applications",
                    kPgListOrder, " OFFSET $2::bigint) AS over_count");
    params.push_back({absl::StrCat(*keep_at_most)});
  }
  absl::MutexLock lock(&mu_);
  int64_t removed = 0;
  absl::Status status =
      conn_.WithConnection("pruning", [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return conn_.InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
          absl::StatusOr<Result> chosen = Exec("choosing applications", choose, params);
          if (!chosen.ok()) return chosen.status();
          std::vector<std::string> doomed;
          for (int row = 0; row < PQntuples(chosen->get()); ++row) {
            doomed.push_back(Bytes(chosen->get(), row, 0));
          }
          removed = static_cast<int64_t>(doomed.size());
          if (doomed.empty()) return absl::OkStatus();
          const std::string ids = TextArray(doomed);
          for (const char* table :
               {"container_resource_seconds", "containers", "attempts", "applications"}) {
            if (absl::Status s = Exec(absl::StrCat("deleting from ", table),
                                      absl::StrCat("DELETE FROM ", table,
                                                   " WHERE application_id = ANY($1::text[])"),
                                      {{ids}})
                                     .status();
                !s.ok()) {
              return s;
            }
          }
          return absl::OkStatus();
        });
      });
  if (!status.ok()) return status;
  return removed;
}

absl::StatusOr<std::vector<UsageLine>> PostgresHistoryStore::DoReport(ReportKey key,
                                                                      int64_t since_ms,
                                                                      int64_t until_ms) {
  const char* column = key == ReportKey::kQueue ? "queue" : "user_name";
  const std::vector<Param> params = {{absl::StrCat(since_ms)}, {absl::StrCat(until_ms)}};
  const std::string totals = absl::StrCat(
      "SELECT ", column,
      ", count(*), coalesce(sum(memory_mb_rs), 0)::bigint, coalesce(sum(vcores_rs), 0)::bigint, "
      "coalesce(sum(memory_mb_seconds_used), 0)::bigint, coalesce(sum(cpu_time_ms), 0)::bigint, "
      "coalesce(sum(network_tx_bytes), 0)::bigint FROM applications WHERE finish_ms >= "
      "$1::bigint AND finish_ms < $2::bigint GROUP BY ",
      column, " ORDER BY ", column);
  const std::string others = absl::StrCat(
      "SELECT a.", column,
      ", r.resource_type, sum(r.seconds)::bigint FROM container_resource_seconds r JOIN "
      "applications a ON a.application_id = r.application_id WHERE a.finish_ms >= $1::bigint "
      "AND a.finish_ms < $2::bigint GROUP BY 1, 2");
  absl::MutexLock lock(&mu_);
  using Lines = std::vector<UsageLine>;
  return Read<Lines>(
      key == ReportKey::kQueue ? "reporting usage by queue" : "reporting usage by user",
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::StatusOr<Lines> {
        absl::StatusOr<Result> sums = Exec("summing", totals, params);
        if (!sums.ok()) return sums.status();
        const PGresult* r = sums->get();
        Lines report;
        for (int row = 0; row < PQntuples(r); ++row) {
          UsageLine& line = report.emplace_back();
          line.key = Bytes(r, row, 0);
          line.applications = Int8(r, row, 1);
          if (int64_t v = Int8(r, row, 2); v != 0) {
            line.resource_seconds[std::string(kPgMemoryType)] = v;
          }
          if (int64_t v = Int8(r, row, 3); v != 0) {
            line.resource_seconds[std::string(kPgVcoresType)] = v;
          }
          line.memory_mb_seconds_used = Int8(r, row, 4);
          line.cpu_time_ms = Int8(r, row, 5);
          line.network_tx_bytes = Int8(r, row, 6);
        }
        absl::StatusOr<Result> other = Exec("summing other resource types", others, params);
        if (!other.ok()) return other.status();
        const PGresult* o = other->get();
        for (int row = 0; row < PQntuples(o); ++row) {
          const std::string name = Bytes(o, row, 0);
          auto it = std::lower_bound(
              report.begin(), report.end(), name,
              [](const UsageLine& line, const std::string& n) { return line.key < n; });
          if (it == report.end() || it->key != name) continue;
          if (int64_t v = Int8(o, row, 2); v != 0) it->resource_seconds[Bytes(o, row, 1)] = v;
        }
        return report;
      });
}

}  // namespace weft::history
