// Copyright Weft authors. A private PostgreSQL server for tests: one server per object, on a
// free loopback port, with its cluster in a fresh temporary directory. For tests only (library
// weft_federation_test_postgres).
#ifndef WEFT_FEDERATION_STORE_TEST_POSTGRES_H_
#define WEFT_FEDERATION_STORE_TEST_POSTGRES_H_

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace weft::federation {

// Runs `initdb` and then `postgres` from the Debian `postgresql` package: the cluster in
// <dir>/data (superuser "postgres" with a random password, scram-sha-256 authentication for
// every connection, C locale), listening on a free port
// of 127.0.0.1 only, its unix socket in <dir>, fsync off (a test server need not survive a
// host crash), its log in <dir>/postgres.log. Readiness is a successful PQping, not a sleep.
//
// PostgreSQL refuses to run as root: as root, the server runs as the `postgres` system user
// (which owns <dir>); otherwise as the caller. <dir> is under $TMPDIR (default /tmp), which
// that user must be able to enter. The server dies with the thread that started it
// (PR_SET_PDEATHSIG), so a crashed test leaves no server behind; start it from the thread that
// outlives it (the test's).
//
// Thread-compatible.
class TestPostgres {
 public:
  struct Options {
    // The directory of initdb and postgres. Empty: /usr/lib/postgresql/15/bin if present, else
    // the newest /usr/lib/postgresql/<version>/bin.
    std::string bin_dir;
    // How long Start() and Restart() wait for the server to answer.
    absl::Duration start_timeout = absl::Seconds(60);
  };

  // Creates the cluster, starts the server and waits until it accepts connections.
  // FailedPrecondition naming what is missing when PostgreSQL is not installed ("run
  // scripts/install-deps.sh") or there is no `postgres` user to run it as root;
  // DeadlineExceeded or Internal, naming the log file and with its end, when it does not come up.
  static absl::StatusOr<std::unique_ptr<TestPostgres>> Start();
  static absl::StatusOr<std::unique_ptr<TestPostgres>> Start(Options options);

  // Stops the server (fast shutdown) and removes its directory.
  ~TestPostgres();
  TestPostgres(const TestPostgres&) = delete;
  TestPostgres& operator=(const TestPostgres&) = delete;

  // "postgresql://postgres@127.0.0.1:<port>/<dbname>".
  // The password comes from passfile() (libpq's ?passfile=), never from the URI.
  std::string uri(absl::string_view dbname = "postgres") const;
  // The same server with no password to offer: the server must refuse it.
  std::string uri_without_password(absl::string_view dbname = "postgres") const;
  // A 0600 file in libpq's passfile format with the superuser's password.
  std::string passfile() const { return dir_ + "/pgpass"; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  std::string log_path() const { return dir_ + "/postgres.log"; }
  bool running() const { return pid_ > 0; }

  // Fast shutdown (SIGINT: clients are disconnected, committed data is kept); waits for the
  // server to exit. Idempotent.
  absl::Status Stop();
  // Stop() if running, then starts the server again on the same port with the same data and
  // waits until it accepts connections.
  absl::Status Restart();

  // The last `bytes` of the server's log.
  std::string LogTail(size_t bytes = 4000) const;

 private:
  TestPostgres(Options options, std::string dir, uid_t uid, gid_t gid)
      : options_(std::move(options)), dir_(std::move(dir)), uid_(uid), gid_(gid) {}

  // Runs `args` as the server's user with output appended to `log`; returns the child's pid.
  absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& args, const std::string& log);
  absl::Status InitCluster();
  absl::Status Launch();
  absl::Status WaitReady();

  const Options options_;
  const std::string dir_;
  const uid_t uid_;  // whom initdb and postgres run as
  std::string password_;  // the superuser's
  const gid_t gid_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_STORE_TEST_POSTGRES_H_
