// Copyright Weft authors. A private ZooKeeper server for tests: one standalone server per
// object, on a free loopback port, with its data in a fresh temporary directory. For tests only
// (library weft_store_test_zookeeper).
#ifndef WEFT_STORE_TEST_ZOOKEEPER_H_
#define WEFT_STORE_TEST_ZOOKEEPER_H_

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace weft::store {

// Runs org.apache.zookeeper.server.ZooKeeperServerMain from the Debian `zookeeper` package in a
// child process (java, the package's jars) with a generated zoo.cfg: dataDir in the temporary
// directory, clientPort a free port on 127.0.0.1 only, the AdminServer and four-letter-word
// commands off. Readiness is a session established through the C client, not a sleep.
//
// Works as root. Several may run at once (in one process or many): each has its own port and
// directory. The server dies with the thread that started it (PR_SET_PDEATHSIG), so a crashed
// test leaves no server behind; start it from the thread that outlives it (the test's).
//
// Thread-compatible.
class TestZooKeeper {
 public:
  struct Options {
    // The java binary. Empty: $JAVA_HOME/bin/java if set, else `java` on $PATH.
    std::string java;
    // The server's class path. Empty: $WEFT_ZOOKEEPER_CLASSPATH if set, else
    // /usr/share/java/zookeeper.jar (whose manifest names its dependencies) and, if present,
    // /usr/share/java/slf4j-simple.jar (so the server's log has text).
    std::string classpath;
    // How long Start() and Restart() wait for the server to accept a session.
    absl::Duration start_timeout = absl::Seconds(90);
    // ZooKeeper's tick in ms. The server grants session timeouts from 2 to 100 ticks
    // (400 ms to 20 s by default).
    int tick_ms = 200;
  };

  // Starts the server and waits until it accepts a session. FailedPrecondition naming what is
  // missing when java or the ZooKeeper jars are not installed ("install the Debian package
  // ...: scripts/install-deps.sh"); DeadlineExceeded or Internal, with the end of the server's
  // log, when it does not come up.
  static absl::StatusOr<std::unique_ptr<TestZooKeeper>> Start();
  static absl::StatusOr<std::unique_ptr<TestZooKeeper>> Start(Options options);

  // Kills the server and removes its directory.
  ~TestZooKeeper();
  TestZooKeeper(const TestZooKeeper&) = delete;
  TestZooKeeper& operator=(const TestZooKeeper&) = delete;

  // "127.0.0.1:<port>", for ZkStoreOptions::connect.
  std::string connect_string() const;
  int port() const { return port_; }
  // The temporary directory: zoo.cfg, data/, zookeeper.log.
  const std::string& dir() const { return dir_; }
  bool running() const { return pid_ > 0; }

  // The digest credential "weft-rm:<random>" the daemons under test authenticate with
  // (ZkStoreOptions::auth, HaOptions::zk_auth), and a 0600 file in dir() holding it (for
  // --ha-zk-auth-file and zk://...?auth-file=).
  const std::string& auth() const { return auth_; }
  std::string auth_file() const { return dir_ + "/zk-auth"; }

  // Kills the server (SIGKILL, like a crash; its fsynced transaction log keeps every committed
  // write) and waits for it to exit. Clients see their connections drop. Idempotent.
  absl::Status Stop();
  // Stop() if running, then starts the server again on the same port with the same data, and
  // waits until it accepts a session.
  absl::Status Restart();
  // SIGSTOP / SIGCONT: a paused server keeps its connections open but answers nothing, like a
  // hung or partitioned server.
  absl::Status Pause();
  absl::Status Resume();

  // The last `bytes` of the server's log (stdout and stderr of every run).
  std::string LogTail(size_t bytes = 4000) const;

 private:
  TestZooKeeper(Options options, std::string dir);

  // Writes zoo.cfg for port_, starts the server and waits until it is ready.
  absl::Status Launch();
  absl::Status WaitReady();

  const Options options_;
  const std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
  std::string auth_;
};

}  // namespace weft::store

#endif  // WEFT_STORE_TEST_ZOOKEEPER_H_
