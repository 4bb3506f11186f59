// Copyright Weft authors. The history store at scale (issue 31): loads finished applications
// with their containers into SQLite and PostgreSQL through PutBatch, then times what the
// Application History API and accounting ask most: one user's applications of the last 7 days,
// and the queue and user usage reports over 7 days. Prints each query's plan, so that a full
// scan shows. Results: docs/performance.md, "Application history store (issue 31)".
//
//   nice -n 19 build/src/history/history_bench [--applications=1000000]
//       [--containers_per_application=5] [--backends=sqlite,postgres] [--postgres_url=URL]
//       [--sqlite_path=/abs/path.db] [--batch=5000] [--repeats=7] [--skip_load]
//
// Without --postgres_url it starts a private server (federation/store/test_postgres.h). The data
// is generated from a fixed seed: 50 users, 20 queues, finish times uniform over the 90 days
// before a fixed "now", 1-600 s runs, 1-8 GB and 1-4 vcores per container.
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "federation/store/test_postgres.h"
#include "history/history_store.h"
#include "history/open_history_store.h"

namespace weft::history {
namespace {

constexpr int64_t kNowMs = 1'800'000'000'000;  // a fixed "now"
constexpr int64_t kDayMs = 24 * 3600 * 1000;

struct Options {
  int64_t applications = 1'000'000;
  int containers_per_application = 5;
  int users = 50;
  int queues = 20;
  int days = 90;
  int64_t batch = 5000;  // applications per PutBatch
  int repeats = 7;
  std::vector<std::string> backends = {"sqlite", "postgres"};
  std::string postgres_url;
  std::string sqlite_path;
  bool skip_load = false;  // query a store loaded by an earlier run (same flags)
};

bool ParseFlags(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    bool ok = true;
    if (name == "--applications") {
      ok = absl::SimpleAtoi(value, &o->applications);
    } else if (name == "--containers_per_application") {
      ok = absl::SimpleAtoi(value, &o->containers_per_application);
    } else if (name == "--batch") {
      ok = absl::SimpleAtoi(value, &o->batch) && o->batch > 0;
    } else if (name == "--repeats") {
      ok = absl::SimpleAtoi(value, &o->repeats) && o->repeats > 0;
    } else if (name == "--backends") {
      o->backends = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else if (name == "--postgres_url") {
      o->postgres_url = value;
    } else if (name == "--skip_load") {
      o->skip_load = true;
    } else if (name == "--sqlite_path") {
      o->sqlite_path = value;
    } else {
      ok = false;
    }
    if (!ok) {
      std::cerr << "history_bench: bad flag '" << arg << "'\n";
      return false;
    }
  }
  return true;
}

// Application i and its containers, from a generator seeded by i: the same data every run.
void Generate(const Options& o, int64_t i, HistoryBatch* batch) {
  std::mt19937_64 random(static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + 1);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(random);
  };
  const std::string id = absl::StrCat("application_1700000000000_", i);
  const int64_t finish = kNowMs - uniform(0, o.days * kDayMs - 1);
  const int64_t run_ms = uniform(1000, 600'000);
  v1::ApplicationHistoryRecord& app = batch->applications.emplace_back();
  app.set_application_id(id);
  app.set_user(absl::StrCat("user_", uniform(0, o.users - 1)));
  app.set_queue(absl::StrCat("root.queue_", uniform(0, o.queues - 1)));
  app.set_name(absl::StrCat("job ", i));
  app.set_application_type("MAPREDUCE");
  app.add_application_tags("bench");
  app.set_submit_time_ms(finish - run_ms - 2000);
  app.set_start_time_ms(finish - run_ms);
  app.set_finish_time_ms(finish);
  app.set_final_state(uniform(0, 9) == 0 ? v1::APP_FAILED : v1::APP_FINISHED);
  app.set_final_status(app.final_state() == v1::APP_FINISHED ? v1::FINAL_SUCCEEDED
                                                             : v1::FINAL_FAILED);
  app.set_current_attempt_id(id + "_000001");
  app.set_host(absl::StrCat("node", uniform(1, 1000), ".example.com"));
  app.set_rpc_port(static_cast<int32_t>(uniform(30000, 60000)));
  app.set_tracking_url(absl::StrCat("http://rm:8088/proxy/", id, "/"));
  for (int c = 1; c <= o.containers_per_application; ++c) {
    v1::ContainerHistoryRecord& container = batch->containers.emplace_back();
    container.set_container_id(absl::StrCat("container_1700000000000_", i, "_01_", c));
    container.set_application_id(id);
    container.set_attempt_id(id + "_000001");
    container.set_node_id(absl::StrCat("node", uniform(1, 1000), ".example.com:8041"));
    const int64_t memory_mb = 1024 * uniform(1, 8);
    (*container.mutable_allocated())["memory-mb"] = memory_mb;
    (*container.mutable_allocated())["vcores"] = uniform(1, 4);
    const int64_t start = app.start_time_ms() + uniform(0, run_ms / 2);
    const int64_t end = std::min(finish, start + uniform(1000, run_ms));
    container.set_start_time_ms(start);
    container.set_finish_time_ms(end);
    container.set_state(v1::CONTAINER_COMPLETE);
    const int64_t seconds = (end - start) / 1000;
    container.set_memory_mb_seconds(memory_mb * seconds * uniform(20, 90) / 100);
    container.set_vcore_seconds(seconds);
    container.set_max_rss_bytes(memory_mb * uniform(200'000, 1'000'000));
    container.set_cpu_time_ms((end - start) * uniform(10, 100) / 100);
    container.set_network_tx_bytes(uniform(0, 1'000'000'000));
    container.set_node_http_address("node:8042");
    container.set_user(app.user());
  }
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

absl::Status Load(const Options& o, HistoryStore& store) {
  const auto start = std::chrono::steady_clock::now();
  for (int64_t first = 0; first < o.applications; first += o.batch) {
    HistoryBatch batch;
    const int64_t last = std::min(o.applications, first + o.batch);
    for (int64_t i = first; i < last; ++i) Generate(o, i, &batch);
    if (absl::Status s = store.PutBatch(batch); !s.ok()) return s;
    if ((last / o.batch) % 20 == 0 || last == o.applications) {
      std::printf("  loaded %lld applications in %.0f s\n", static_cast<long long>(last),
                  Seconds(start));
      std::fflush(stdout);
    }
  }
  return absl::OkStatus();
}

// Runs `query` once to warm up, then o.repeats times; prints min and median in ms.
void Time(const Options& o, const std::string& backend, const std::string& what,
          const std::function<int64_t()>& query) {
  const int64_t rows = query();
  std::vector<double> ms;
  for (int r = 0; r < o.repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    query();
    ms.push_back(Seconds(start) * 1000);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-8s %-58s rows=%-6lld min=%7.1f ms  median=%7.1f ms  max=%7.1f ms\n",
              backend.c_str(), what.c_str(), static_cast<long long>(rows), ms.front(),
              ms[ms.size() / 2], ms.back());
  std::fflush(stdout);
}

void Queries(const Options& o, const std::string& backend, HistoryStore& store) {
  const int64_t since = kNowMs - 7 * kDayMs, until = kNowMs + 1;
  Time(o, backend, "(a) ListApplications user=user_7, last 7 days, limit 0", [&]() -> int64_t {
    auto apps = store.ListApplications({.user = "user_7", .finished_since_ms = since});
    if (!apps.ok()) std::cerr << apps.status() << "\n";
    return apps.ok() ? static_cast<int64_t>(apps->size()) : -1;
  });
  Time(o, backend, "(a') the same, limit 100", [&]() -> int64_t {
    auto apps =
        store.ListApplications({.user = "user_7", .finished_since_ms = since, .limit = 100});
    return apps.ok() ? static_cast<int64_t>(apps->size()) : -1;
  });
  Time(o, backend, "(b) QueueReport, last 7 days", [&]() -> int64_t {
    auto lines = store.QueueReport(since, until);
    if (!lines.ok()) std::cerr << lines.status() << "\n";
    int64_t apps = 0;
    if (lines.ok()) {
      for (const UsageLine& line : *lines) apps += line.applications;
    }
    return apps;
  });
  Time(o, backend, "(c) UserReport, last 7 days", [&]() -> int64_t {
    auto lines = store.UserReport(since, until);
    int64_t apps = 0;
    if (lines.ok()) {
      for (const UsageLine& line : *lines) apps += line.applications;
    }
    return apps;
  });
}

// The plans of the store's queries (the same SQL as sqlite_history_store.cc issues).
void SqlitePlans(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return;
  const std::string since = absl::StrCat(kNowMs - 7 * kDayMs);
  for (const std::string& sql :
       {absl::StrCat("SELECT record FROM applications WHERE 1 AND user = 'user_7' AND finish_ms "
                     ">= ",
                     since, " ORDER BY finish_ms DESC, application_id ASC"),
        absl::StrCat("SELECT queue, count(*), sum(memory_mb_rs) FROM applications WHERE "
                     "finish_ms >= ",
                     since, " AND finish_ms < ", kNowMs + 1, " GROUP BY queue ORDER BY queue")}) {
    sqlite3_stmt* stmt = nullptr;
    const std::string explain = "EXPLAIN QUERY PLAN " + sql;
    if (sqlite3_prepare_v2(db, explain.c_str(), -1, &stmt, nullptr) != SQLITE_OK) continue;
    std::printf("sqlite plan: %s\n", sql.c_str());
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      std::printf("    %s\n", reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3)));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
}

// Runs `sql` on `url`, printing what it returns (plans) when `print`.
void PostgresRun(const std::string& url, const std::string& sql, bool print) {
  PGconn* conn = PQconnectdb(url.c_str());
  PGresult* result = PQexec(conn, sql.c_str());
  if (PQresultStatus(result) != PGRES_COMMAND_OK && PQresultStatus(result) != PGRES_TUPLES_OK) {
    std::printf("postgres: %s: %s\n", sql.c_str(), PQresultErrorMessage(result));
  }
  if (print) {
    std::printf("postgres plan: %s\n", sql.c_str());
    for (int row = 0; row < PQntuples(result); ++row) {
      std::printf("    %s\n", PQgetvalue(result, row, 0));
    }
  }
  PQclear(result);
  PQfinish(conn);
}

int Run(const Options& o) {
  std::printf("history_bench: %lld applications x %d containers, %d users, %d queues, %d days\n",
              static_cast<long long>(o.applications), o.containers_per_application, o.users,
              o.queues, o.days);
  std::unique_ptr<federation::TestPostgres> server;
  for (const std::string& backend : o.backends) {
    std::string url;
    std::filesystem::path temp_dir;
    if (backend == "sqlite") {
      url = o.sqlite_path;
      if (url.empty()) {
        temp_dir = std::filesystem::temp_directory_path() /
                   absl::StrCat("weft-history-bench-", ::getpid());
        url = (temp_dir / "history.db").string();
      }
    } else if (backend == "postgres") {
      url = o.postgres_url;
      if (url.empty()) {
        absl::StatusOr<std::unique_ptr<federation::TestPostgres>> started =
            federation::TestPostgres::Start();
        if (!started.ok()) {
          std::cerr << started.status() << "\n";
          return 1;
        }
        server = *std::move(started);
        url = server->uri();
      }
    } else {
      std::cerr << "history_bench: unknown back-end '" << backend << "'\n";
      return 2;
    }
    absl::StatusOr<std::unique_ptr<HistoryStore>> store = OpenHistoryStore(url);
    if (!store.ok()) {
      std::cerr << store.status() << "\n";
      return 1;
    }
    std::printf("%s: loading into %s\n", backend.c_str(), (*store)->Describe().c_str());
    const auto start = std::chrono::steady_clock::now();
    if (absl::Status s = o.skip_load ? absl::OkStatus() : Load(o, **store); !s.ok()) {
      std::cerr << s << "\n";
      return 1;
    }
    std::printf("%s: loaded in %.0f s\n", backend.c_str(), Seconds(start));
    if (backend == "postgres") {
      // What autovacuum does after a bulk load: statistics, and the visibility map that lets
      // the report index be read without the table.
      const auto vacuum = std::chrono::steady_clock::now();
      PostgresRun(url, "VACUUM ANALYZE", false);
      std::printf("postgres: VACUUM ANALYZE in %.0f s\n", Seconds(vacuum));
      const std::string since = absl::StrCat(kNowMs - 7 * kDayMs);
      PostgresRun(url,
                  absl::StrCat("EXPLAIN SELECT record FROM applications WHERE user_name = "
                               "'user_7' AND finish_ms >= ",
                               since, " ORDER BY finish_ms DESC, application_id"),
                  true);
      PostgresRun(
          url,
          absl::StrCat("EXPLAIN SELECT queue, count(*), sum(memory_mb_rs) FROM "
                       "applications WHERE finish_ms >= ",
                       since, " AND finish_ms < ", kNowMs + 1, " GROUP BY queue ORDER BY queue"),
          true);
    } else {
      SqlitePlans(url);
    }
    Queries(o, backend, **store);
    store->reset();
    if (!temp_dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(temp_dir, ec);
    }
  }
  return 0;
}

}  // namespace
}  // namespace weft::history

int main(int argc, char** argv) {
  weft::history::Options options;
  if (!weft::history::ParseFlags(argc, argv, &options)) return 2;
  return weft::history::Run(options);
}
