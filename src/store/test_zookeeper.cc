// Copyright Weft authors.
#include "store/test_zookeeper.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/free_port.h"
#include "store/zk_client.h"

namespace weft::store {
namespace {

constexpr const char* kDefaultServerJar = "/usr/share/java/zookeeper.jar";
constexpr const char* kDefaultLoggerJar = "/usr/share/java/slf4j-simple.jar";
constexpr const char* kInstallHint =
    "install the Debian package 'zookeeper', which brings a Java runtime, e.g. with "
    "scripts/install-deps.sh";
// How many ports Start() tries when another process takes the free port it picked first.
constexpr int kPortAttempts = 5;

std::string GetEnv(const char* name) {
  const char* value = ::getenv(name);
  return value != nullptr ? value : "";
}

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

absl::StatusOr<std::string> FindJava(const std::string& configured) {
  if (!configured.empty()) {
    if (IsExecutable(configured)) return configured;
    return absl::FailedPreconditionError(absl::StrCat("cannot start ZooKeeper for tests: java '",
                                                      configured, "' is not an executable file (",
                                                      kInstallHint, ")"));
  }
  if (std::string home = GetEnv("JAVA_HOME"); !home.empty()) {
    std::string java = home + "/bin/java";
    if (IsExecutable(java)) return java;
  }
  for (absl::string_view dir : absl::StrSplit(GetEnv("PATH"), ':', absl::SkipEmpty())) {
    std::string java = absl::StrCat(dir, "/java");
    if (IsExecutable(java)) return java;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot start ZooKeeper for tests: no java found ($JAVA_HOME/bin/java or java on $PATH; ",
      kInstallHint, ")"));
}

absl::StatusOr<std::string> FindClasspath(const std::string& configured) {
  std::string classpath = configured.empty() ? GetEnv("WEFT_ZOOKEEPER_CLASSPATH") : configured;
  if (classpath.empty()) {
    classpath = kDefaultServerJar;
    if (::access(kDefaultLoggerJar, R_OK) == 0) absl::StrAppend(&classpath, ":", kDefaultLoggerJar);
  }
  for (absl::string_view entry : absl::StrSplit(classpath, ':', absl::SkipEmpty())) {
    if (::access(std::string(entry).c_str(), R_OK) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot start ZooKeeper for tests: '", entry, "' on its class path does not exist (",
          kInstallHint, ", or set $WEFT_ZOOKEEPER_CLASSPATH)"));
    }
  }
  return classpath;
}

std::string TempBase() {
  for (const char* name : {"TEST_TMPDIR", "TMPDIR"}) {
    if (std::string dir = GetEnv(name); !dir.empty()) return dir;
  }
  return "/tmp";
}

}  // namespace

TestZooKeeper::TestZooKeeper(Options options, std::string dir)
    : options_(std::move(options)), dir_(std::move(dir)) {}

absl::StatusOr<std::unique_ptr<TestZooKeeper>> TestZooKeeper::Start() { return Start(Options()); }

absl::StatusOr<std::unique_ptr<TestZooKeeper>> TestZooKeeper::Start(Options options) {
  absl::StatusOr<std::string> java = FindJava(options.java);
  if (!java.ok()) return java.status();
  absl::StatusOr<std::string> classpath = FindClasspath(options.classpath);
  if (!classpath.ok()) return classpath.status();
  options.java = *java;
  options.classpath = *classpath;
  if (options.tick_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tick_ms ", options.tick_ms, " is not positive"));
  }

  std::string pattern = TempBase() + "/weft-zk.XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return ErrnoError(errno, absl::StrCat("mkdtemp(", pattern, ")"));
  }
  std::unique_ptr<TestZooKeeper> zk(new TestZooKeeper(std::move(options), pattern));
  {
    // Not secret from the test, but unguessable by other users of the machine.
    unsigned char bytes[12];
    std::ifstream urandom("/dev/urandom", std::ios::binary);
    urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
    if (!urandom) return absl::InternalError("reading /dev/urandom");
    zk->auth_ = "weft-rm:";
    for (unsigned char b : bytes) absl::StrAppend(&zk->auth_, absl::Hex(b, absl::kZeroPad2));
    const int fd = ::open(zk->auth_file().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return absl::InternalError(absl::StrCat("creating ", zk->auth_file()));
    const bool written = ::write(fd, zk->auth_.data(), zk->auth_.size()) ==
                         static_cast<ssize_t>(zk->auth_.size());
    ::close(fd);
    if (!written) return absl::InternalError(absl::StrCat("writing ", zk->auth_file()));
  }
  absl::Status status;
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    absl::StatusOr<int> port = FreeLoopbackPort();
    if (!port.ok()) return port.status();
    zk->port_ = *port;
    status = zk->Launch();
    if (status.ok()) return zk;
    // Another process may have taken the port between our pick and the server's bind.
    if (zk->LogTail().find("Address already in use") == std::string::npos) break;
  }
  return status;
}

TestZooKeeper::~TestZooKeeper() {
  Stop().IgnoreError();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string TestZooKeeper::connect_string() const { return absl::StrCat("127.0.0.1:", port_); }

absl::Status TestZooKeeper::Launch() {
  const std::string config = dir_ + "/zoo.cfg";
  {
    std::ofstream out(config, std::ios::trunc);
    out << "tickTime=" << options_.tick_ms << "\n"
        << "dataDir=" << dir_ << "/data\n"
        << "clientPort=" << port_ << "\n"
        << "clientPortAddress=127.0.0.1\n"
        << "maxClientCnxns=0\n"
        << "minSessionTimeout=" << 2 * options_.tick_ms << "\n"
        << "maxSessionTimeout=" << 100 * options_.tick_ms << "\n"
        << "admin.enableServer=false\n"
        << "4lw.commands.whitelist=\n";
    if (!out) return absl::InternalError(absl::StrCat("writing ", config));
  }
  const std::string log_path = dir_ + "/zookeeper.log";
  const std::vector<std::string> args = {
      options_.java,
      "-Xms16m",
      "-Xmx256m",
      "-XX:+UseSerialGC",
      "-XX:TieredStopAtLevel=1",
      "-Djava.net.preferIPv4Stack=true",
      "-Dzookeeper.admin.enableServer=false",
      "-Dzookeeper.4lw.commands.whitelist=",
      "-Dzookeeper.preAllocSize=1024",
      "-Dzookeeper.snapshot.trust.empty=true",
      "-Dorg.slf4j.simpleLogger.showDateTime=true",
      "-cp",
      options_.classpath,
      "org.apache.zookeeper.server.ZooKeeperServerMain",
      config,
  };
  // Everything the child needs is prepared before fork(): after it, only async-signal-safe calls.
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) return ErrnoError(errno, "fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);  // The parent died before prctl.
    int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int null = ::open("/dev/null", O_RDONLY);
    if (log < 0 || null < 0) ::_exit(126);
    ::dup2(null, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    ::syscall(SYS_close_range, 3U, ~0U, 0U);  // The test's sockets stay with the test.
    ::execv(argv[0], argv.data());
    static const char kExecFailed[] = "exec of java failed\n";
    (void)!::write(2, kExecFailed, sizeof(kExecFailed) - 1);
    ::_exit(127);
  }
  pid_ = pid;
  paused_ = false;
  if (absl::Status s = WaitReady(); !s.ok()) {
    Stop().IgnoreError();
    return s;
  }
  return absl::OkStatus();
}

absl::Status TestZooKeeper::WaitReady() {
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  absl::StatusOr<std::unique_ptr<zk::ZkClient>> client =
      zk::ZkClient::Create(connect_string(), 20 * options_.tick_ms);
  if (!client.ok()) return client.status();
  for (;;) {
    // Wait for the session in short slices, checking in between that the server still runs.
    const absl::Time slice = std::min(deadline, absl::Now() + absl::Milliseconds(100));
    if ((*client)->Connect(slice).ok()) return absl::OkStatus();
    int wstatus = 0;
    if (::waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError(absl::StrCat("ZooKeeper server for tests exited (",
                                              WIFEXITED(wstatus)
                                                  ? absl::StrCat("status ", WEXITSTATUS(wstatus))
                                                  : absl::StrCat("signal ", WTERMSIG(wstatus)),
                                              ") before accepting a session on ", connect_string(),
                                              "; its log ends with:\n", LogTail()));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "ZooKeeper server for tests did not accept a session on ", connect_string(), " within ",
          absl::FormatDuration(options_.start_timeout), "; its log ends with:\n", LogTail()));
    }
  }
}

absl::Status TestZooKeeper::Stop() {
  if (pid_ <= 0) return absl::OkStatus();
  ::kill(pid_, SIGKILL);  // Also ends a paused (stopped) server.
  int wstatus = 0;
  while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  paused_ = false;
  return absl::OkStatus();
}

absl::Status TestZooKeeper::Restart() {
  if (absl::Status s = Stop(); !s.ok()) return s;
  return Launch();
}

absl::Status TestZooKeeper::Pause() {
  if (pid_ <= 0) return absl::FailedPreconditionError("the ZooKeeper server is not running");
  if (::kill(pid_, SIGSTOP) != 0)
    return ErrnoError(errno, "SIGSTOP");
  // Wait until it is actually stopped, so the test's next step meets a silent server.
  int wstatus = 0;
  if (::waitpid(pid_, &wstatus, WUNTRACED) != pid_ || !WIFSTOPPED(wstatus)) {
    return absl::InternalError("the ZooKeeper server did not stop on SIGSTOP");
  }
  paused_ = true;
  return absl::OkStatus();
}

absl::Status TestZooKeeper::Resume() {
  if (pid_ <= 0) return absl::FailedPreconditionError("the ZooKeeper server is not running");
  if (::kill(pid_, SIGCONT) != 0)
    return ErrnoError(errno, "SIGCONT");
  paused_ = false;
  return absl::OkStatus();
}

std::string TestZooKeeper::LogTail(size_t bytes) const {
  std::ifstream in(dir_ + "/zookeeper.log", std::ios::binary);
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return log.size() > bytes ? log.substr(log.size() - bytes) : log;
}

}  // namespace weft::store
