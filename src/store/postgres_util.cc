// Copyright Weft authors.
#include "store/postgres_util.h"

#include <cstdint>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "store/libpq.h"

namespace weft::store::pg {

std::string RedactPostgresUri(absl::string_view uri) {
  std::string out(uri);
  // The user info: scheme://user:password@host...
  const size_t authority = out.find("://");
  if (authority != std::string::npos) {
    const size_t start = authority + 3;
    const size_t end = out.find_first_of("/?", start);
    const size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (at != std::string::npos && at >= start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // A password= parameter.
  for (size_t pos = out.find("password="); pos != std::string::npos;
       pos = out.find("password=", pos + 1)) {
    if (pos > 0 && out[pos - 1] != '?' && out[pos - 1] != '&') continue;
    const size_t value = pos + 9;
    const size_t end = out.find('&', value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
  }
  return out;
}

absl::StatusCode CodeForSqlState(absl::string_view state) {
  if (absl::StartsWith(state, "08") || absl::StartsWith(state, "57P")) {
    return absl::StatusCode::kUnavailable;  // connection exception, server shutting down
  }
  if (absl::StartsWith(state, "53")) return absl::StatusCode::kResourceExhausted;
  if (absl::StartsWith(state, "40")) return absl::StatusCode::kAborted;  // deadlock, serialization
  if (absl::StartsWith(state, "28") || state == "42501") {
    return absl::StatusCode::kPermissionDenied;
  }
  if (absl::StartsWith(state, "23")) return absl::StatusCode::kFailedPrecondition;
  return absl::StatusCode::kInternal;
}

absl::Status CheckUri(absl::string_view uri, absl::string_view name) {
  const std::string redacted = RedactPostgresUri(uri);
  if (absl::Status loaded = LoadLibpq(); !loaded.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, " '", redacted, "': ", loaded.message()));
  }
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(std::string(uri).c_str(), &error);
  if (options == nullptr) {
    std::string why = error != nullptr ? error : "out of memory";
    PQfreemem(error);
    return absl::InvalidArgumentError(
        absl::StrCat(name, " '", redacted, "': ", absl::StripAsciiWhitespace(why)));
  }
  bool has_password = false;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (absl::string_view(o->keyword) == "password" && o->val != nullptr && *o->val != '\0') {
      has_password = true;
    }
  }
  PQconninfoFree(options);
  if (has_password) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " '", redacted,
        "': holds a password, which every local user could read in the daemon's command line; "
        "put it in a passfile (?passfile=/etc/weft/pgpass, mode 0600, "
        "host:port:database:user:password) instead"));
  }
  return absl::OkStatus();
}

Connection::Connection(std::string uri, Options options)
    : uri_(std::move(uri)), redacted_uri_(RedactPostgresUri(uri_)), options_(std::move(options)) {}

Connection::~Connection() { PQfinish(conn_); }

absl::Status Connection::Connect() {
  if (absl::Status loaded = LoadLibpq(); !loaded.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(options_.store, " '", redacted_uri_, "': ", loaded.message()));
  }
  if (conn_ == nullptr) {
    // The URI's own connect_timeout, if any, overrides the default (later values win).
    const char* keywords[] = {"connect_timeout", "dbname", nullptr};
    const char* values[] = {"10", uri_.c_str(), nullptr};
    conn_ = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
    if (conn_ == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat(options_.store, " '", redacted_uri_, "': connecting: out of memory"));
    }
    // Notices (e.g. "relation already exists, skipping") are not errors: drop them.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
  } else {
    PQreset(conn_);
  }
  if (PQstatus(conn_) != CONNECTION_OK) {
    return absl::UnavailableError(
        absl::StrCat(options_.store, " '", redacted_uri_,
                     "': connecting: ", absl::StripAsciiWhitespace(PQerrorMessage(conn_))));
  }
  if (!options_.refuse_trust_authentication) return absl::OkStatus();
  // A server that let us in over TCP without asking for a password (trust authentication) lets
  // every local user in. Peer authentication over the Unix socket asks for none and is fine.
  const char* host = PQhost(conn_);
  const bool unix_socket = host != nullptr && host[0] == '/';
  if (!unix_socket && !PQconnectionUsedPassword(conn_) && !PQsslInUse(conn_)) {
    PQfinish(conn_);
    conn_ = nullptr;
    return absl::FailedPreconditionError(absl::StrCat(
        options_.store, " '", redacted_uri_,
        "': the server let this connection in without a password (trust authentication in "
        "pg_hba.conf), so any local user could read ",
        options_.secrets,
        "; use scram-sha-256 with a role and a passfile, or peer authentication over the Unix "
        "socket"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Result> Connection::Exec(absl::string_view what, const std::string& sql,
                                        absl::Span<const Param> params) {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  values.reserve(params.size());
  lengths.reserve(params.size());
  formats.reserve(params.size());
  // Text parameters must be NUL-terminated: copy them.
  std::vector<std::string> texts;
  texts.reserve(params.size());
  for (const Param& p : params) {
    if (p.binary) {
      values.push_back(p.value.empty() ? "" : p.value.data());  // null would be SQL NULL
    } else {
      values.push_back(texts.emplace_back(p.value).c_str());
    }
    lengths.push_back(static_cast<int>(p.value.size()));
    formats.push_back(p.binary ? 1 : 0);
  }
  Result result(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()),
                             /*paramTypes=*/nullptr, values.data(), lengths.data(), formats.data(),
                             /*resultFormat=*/1));
  const ExecStatusType status =
      result != nullptr ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
  const char* state =
      result != nullptr ? PQresultErrorField(result.get(), PG_DIAG_SQLSTATE) : nullptr;
  const absl::StatusCode code = PQstatus(conn_) != CONNECTION_OK || state == nullptr
                                    ? absl::StatusCode::kUnavailable
                                    : CodeForSqlState(state);
  const char* message =
      result != nullptr ? PQresultErrorMessage(result.get()) : PQerrorMessage(conn_);
  if (message == nullptr || *message == '\0') message = PQerrorMessage(conn_);
  return absl::Status(code, absl::StrCat(what, ": ", absl::StripAsciiWhitespace(message)));
}

absl::Status Connection::InTransaction(absl::FunctionRef<absl::Status()> body) {
  absl::StatusOr<Result> begin = Exec("beginning a transaction", "BEGIN", {});
  if (!begin.ok()) return begin.status();
  absl::Status status = body();
  if (status.ok()) status = Exec("committing", "COMMIT", {}).status();
  if (!status.ok() && PQstatus(conn_) == CONNECTION_OK &&
      PQtransactionStatus(conn_) != PQTRANS_IDLE) {
    Exec("rolling back", "ROLLBACK", {}).IgnoreError();
  }
  return status;
}

absl::Status Connection::WithConnection(absl::string_view what,
                                        absl::FunctionRef<absl::Status(bool resuming)> attempt) {
  absl::Status status;
  for (int round = 0; round < 2; ++round) {
    if (PQstatus(conn_) != CONNECTION_OK) {
      if (absl::Status s = Connect(); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat(s.message(), " (", what, ")"));
      }
    }
    status = attempt(/*resuming=*/round > 0);
    // Repeat only on a connection that broke under the attempt.
    if (status.ok() || PQstatus(conn_) == CONNECTION_OK) break;
  }
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(options_.store, " '", redacted_uri_, "': ", what,
                                                  ": ", status.message()));
}

absl::Status Connection::Migrate(const Schema& schema) {
  return WithConnection("migrating the schema", [&](bool) {
    return InTransaction([&]() -> absl::Status {
      if (absl::Status s = Exec("locking", schema.lock_sql, {}).status(); !s.ok()) return s;
      if (absl::Status s = Exec(absl::StrCat("creating ", schema.version_table),
                                absl::StrCat("CREATE TABLE IF NOT EXISTS ", schema.version_table,
                                             " (version INTEGER NOT NULL PRIMARY KEY, "
                                             "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"),
                                {})
                               .status();
          !s.ok()) {
        return s;
      }
      absl::StatusOr<Result> read = Exec(
          "reading the schema version",
          absl::StrCat("SELECT coalesce(max(version), 0)::text FROM ", schema.version_table), {});
      if (!read.ok()) return read.status();
      int64_t version = 0;
      if (!absl::SimpleAtoi(PQgetvalue(read->get(), 0, 0), &version)) {
        return absl::DataLossError(absl::StrCat(schema.version_table, " holds version '",
                                                PQgetvalue(read->get(), 0, 0), "'"));
      }
      if (version > schema.version) {
        return absl::FailedPreconditionError(absl::StrCat("its schema version ", version,
                                                          " is newer than this binary's (",
                                                          schema.version, "); use a newer weft"));
      }
      const std::string insert =
          absl::StrCat("INSERT INTO ", schema.version_table, " (version) VALUES ($1)");
      for (int64_t next = version + 1; next <= schema.version; ++next) {
        const std::string what = absl::StrCat("migrating to version ", next);
        for (const char* statement : (*schema.migrations)[next - 1]) {
          if (absl::Status s = Exec(what, statement, {}).status(); !s.ok()) return s;
        }
        const std::string text = absl::StrCat(next);
        if (absl::Status s = Exec(what, insert, {{text}}).status(); !s.ok()) return s;
      }
      return absl::OkStatus();
    });
  });
}

}  // namespace weft::store::pg
