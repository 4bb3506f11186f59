// Copyright Weft authors. What every PostgreSQL-backed store in Weft shares, through libpq: the
// URI rules (no password in it; redacted in messages), one connection that reconnects once when
// it broke, parameterised statements with SQLSTATEs as absl::Status codes, transactions and
// versioned schema migrations. Internal to the stores (the federation state store and the
// history store); not a general PostgreSQL client.
#ifndef WEFT_STORE_POSTGRES_UTIL_H_
#define WEFT_STORE_POSTGRES_UTIL_H_

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace weft::store::pg {

// `uri` with the password (in the user info or a password= parameter) replaced by "***", for
// logs and error messages.
std::string RedactPostgresUri(absl::string_view uri);

// The absl code for a failed statement, from its SQLSTATE: connection exceptions and a server
// shutting down -> Unavailable, insufficient resources -> ResourceExhausted, deadlocks and
// serialization failures -> Aborted, authorization -> PermissionDenied, integrity constraints
// -> FailedPrecondition, anything else -> Internal.
absl::StatusCode CodeForSqlState(absl::string_view state);

// Checks a libpq URI ("postgresql://user@host:port/db?..." or "postgres://...") before anything
// connects: InvalidArgument "<name> '<redacted uri>': ..." (`name` e.g. "federation store URI")
// when libpq cannot parse it, or when it holds a password, which every local user could read
// in the daemon's command line (/proc/PID/cmdline); the password belongs in a passfile
// (?passfile=PATH, mode 0600) or ~/.pgpass. FailedPrecondition when libpq cannot be loaded
// (store/libpq.h); Connection::Connect() says the same.
absl::Status CheckUri(absl::string_view uri, absl::string_view name);

struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// A query parameter: text, or binary (BYTEA) bytes. Points into the caller's memory, which must
// stay valid until the statement has run; an empty value is an empty string, never SQL NULL.
struct Param {
  absl::string_view value;
  bool binary = false;
};

// Migration n (1-based) brings a schema from version n-1 to n: its statements run in order.
using Migrations = std::vector<std::vector<const char*>>;

// One store's connection to its server. Errors name the store and its redacted URI:
// "<store> '<redacted uri>': <what>: <libpq's or the server's message>". Not thread-safe: the
// store keeps it behind its mutex.
class Connection {
 public:
  struct Options {
    // Names the store in errors, e.g. "federation store".
    std::string store;
    // Refuses (FailedPrecondition) a server that admits the connection over TCP without a
    // password or TLS (trust authentication in pg_hba.conf): any local user could then read
    // `secrets` (e.g. "the routers' master keys"). Peer authentication over the Unix socket
    // asks for no password and is accepted.
    bool refuse_trust_authentication = false;
    std::string secrets;
  };

  // Connects nothing yet: Connect() does. `uri` should have passed CheckUri().
  Connection(std::string uri, Options options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects (default connect_timeout 10 s; the URI's own wins), or resets a connection that
  // broke. Unavailable with libpq's message when the server cannot be reached;
  // FailedPrecondition for trust authentication where Options refuse it.
  absl::Status Connect();

  // Runs one parameterised statement; its rows come back in binary format. Errors:
  // "<what>: <message>" with the code of its SQLSTATE (CodeForSqlState), or Unavailable when
  // the connection broke or the statement got no SQLSTATE.
  absl::StatusOr<Result> Exec(absl::string_view what, const std::string& sql,
                              absl::Span<const Param> params);

  // Runs `body` in BEGIN ... COMMIT, rolling back if anything fails.
  absl::Status InTransaction(absl::FunctionRef<absl::Status()> body);

  // Runs `attempt` on a good connection: connects first if the connection is bad, and once more
  // if the connection broke during the attempt (`resuming` then tells the attempt that the
  // first one's outcome is unknown). Errors get the store's name, its redacted URI and `what`.
  absl::Status WithConnection(absl::string_view what,
                              absl::FunctionRef<absl::Status(bool resuming)> attempt);

  // A store's versioned schema.
  struct Schema {
    // The table recording each applied version (one row per version), created on first use.
    const char* version_table;
    // A statement taking the transaction-scoped advisory lock that serialises migrations of
    // one database ("SELECT pg_advisory_xact_lock(N)"), so that several daemons may start at
    // once.
    const char* lock_sql;
    // The version this binary migrates to and understands; `migrations` holds at least that
    // many.
    int version;
    const Migrations* migrations;
  };
  // Applies the migrations the database lacks, in order, in one transaction under the lock.
  // FailedPrecondition when the database's schema is newer than `schema.version`; DataLoss
  // when its version table holds something else than a number.
  absl::Status Migrate(const Schema& schema);

  const std::string& redacted_uri() const { return redacted_uri_; }

 private:
  const std::string uri_;
  const std::string redacted_uri_;
  const Options options_;
  PGconn* conn_ = nullptr;
};

}  // namespace weft::store::pg

#endif  // WEFT_STORE_POSTGRES_UTIL_H_
