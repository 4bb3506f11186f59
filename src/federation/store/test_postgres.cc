// Copyright Weft authors.
#include "federation/store/test_postgres.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "absl/time/clock.h"
#include "common/free_port.h"
#include "store/libpq.h"

namespace weft::federation {
namespace {

constexpr const char* kInstallHint =
    "install the Debian packages 'postgresql' and 'libpq-dev': run scripts/install-deps.sh";
constexpr const char* kPostgresRoot = "/usr/lib/postgresql";
// How many ports Start() tries when another process takes the free port it picked first.
constexpr int kPortAttempts = 5;
// How often WaitReady() asks the server whether it accepts connections.
constexpr absl::Duration kPollInterval = absl::Milliseconds(20);

std::string GetEnv(const char* name) {
  const char* value = ::getenv(name);
  return value != nullptr ? value : "";
}

absl::StatusOr<std::string> FindBinDir(const std::string& configured) {
  if (!configured.empty()) {
    if (::access((configured + "/initdb").c_str(), X_OK) == 0) return configured;
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot start PostgreSQL for tests: no initdb in '", configured, "' (", kInstallHint, ")"));
  }
  const std::string preferred = absl::StrCat(kPostgresRoot, "/15/bin");
  if (::access((preferred + "/initdb").c_str(), X_OK) == 0) return preferred;
  int best = -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kPostgresRoot, ec)) {
    int version = 0;
    if (absl::SimpleAtoi(entry.path().filename().string(), &version) && version > best &&
        ::access((entry.path() / "bin/initdb").c_str(), X_OK) == 0) {
      best = version;
    }
  }
  if (best < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start PostgreSQL for tests: there is no ", kPostgresRoot,
                     "/*/bin/initdb (", kInstallHint, ")"));
  }
  return absl::StrCat(kPostgresRoot, "/", best, "/bin");
}

std::string Tail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return log.size() > bytes ? log.substr(log.size() - bytes) : log;
}

std::string DescribeExit(int wstatus) {
  return WIFEXITED(wstatus) ? absl::StrCat("status ", WEXITSTATUS(wstatus))
                            : absl::StrCat("signal ", WTERMSIG(wstatus));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TestPostgres>> TestPostgres::Start() { return Start(Options()); }

absl::StatusOr<std::unique_ptr<TestPostgres>> TestPostgres::Start(Options options) {
  // Readiness is asked through libpq: without it no server is started.
  if (absl::Status loaded = store::LoadLibpq(); !loaded.ok()) return loaded;
  absl::StatusOr<std::string> bin_dir = FindBinDir(options.bin_dir);
  if (!bin_dir.ok()) return bin_dir.status();
  options.bin_dir = *bin_dir;

  uid_t uid = ::geteuid();
  gid_t gid = ::getegid();
  if (uid == 0) {  // PostgreSQL refuses to run as root.
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot start PostgreSQL for tests as root: there is no 'postgres' user to run it as (",
          kInstallHint, ", which creates it)"));
    }
    uid = pw->pw_uid;
    gid = pw->pw_gid;
  }

  const std::string base = GetEnv("TMPDIR").empty() ? "/tmp" : GetEnv("TMPDIR");
  std::string pattern = base + "/weft-pg.XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return ErrnoError(errno, absl::StrCat("mkdtemp(", pattern, ")"));
  }
  std::unique_ptr<TestPostgres> pg(new TestPostgres(std::move(options), pattern, uid, gid));
  if (::chown(pattern.c_str(), uid, gid) != 0) {
    return ErrnoError(errno, absl::StrCat("chown(", pattern, ")"));
  }
  if (absl::Status s = pg->InitCluster(); !s.ok()) return s;
  absl::Status status;
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    absl::StatusOr<int> port = FreeLoopbackPort();
    if (!port.ok()) return port.status();
    pg->port_ = *port;
    status = pg->Launch();
    if (status.ok()) return pg;
    // Another process may have taken the port between our pick and the server's bind.
    if (pg->LogTail().find("could not bind") == std::string::npos) break;
  }
  return status;
}

TestPostgres::~TestPostgres() {
  Stop().IgnoreError();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string TestPostgres::uri(absl::string_view dbname) const {
  return absl::StrCat("postgresql://postgres@127.0.0.1:", port_, "/", dbname,
                      "?passfile=", passfile());
}

std::string TestPostgres::uri_without_password(absl::string_view dbname) const {
  return absl::StrCat("postgresql://postgres@127.0.0.1:", port_, "/", dbname,
                      "?passfile=/dev/null");
}

absl::StatusOr<pid_t> TestPostgres::Spawn(const std::vector<std::string>& args,
                                          const std::string& log) {
  // Everything the child needs is prepared before fork(): after it, only async-signal-safe
  // calls (raw system calls for the credentials: this process may have other threads).
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  char env_locale[] = "LC_ALL=C";
  char env_path[] = "PATH=/usr/bin:/bin";
  char env_tz[] = "TZ=UTC";
  char* envp[] = {env_locale, env_path, env_tz, nullptr};
  const bool change_user = ::geteuid() != uid_;
  const uid_t uid = uid_;
  const gid_t gid = gid_;
  const pid_t parent = ::getpid();
  const char* dir = dir_.c_str();

  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoError(errno, "fork");
  if (pid == 0) {
    if (change_user && (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
                        ::syscall(SYS_setresgid, gid, gid, gid) != 0 ||
                        ::syscall(SYS_setresuid, uid, uid, uid) != 0)) {
      ::_exit(125);
    }
    // After the credentials change, which clears the parent-death signal.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);  // The parent died before prctl.
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int null = ::open("/dev/null", O_RDONLY);
    if (out < 0 || null < 0 || ::chdir(dir) != 0) ::_exit(126);
    ::dup2(null, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::syscall(SYS_close_range, 3U, ~0U, 0U);  // The test's sockets stay with the test.
    ::execve(argv[0], argv.data(), envp);
    static const char kExecFailed[] = "exec failed\n";
    (void)!::write(2, kExecFailed, sizeof(kExecFailed) - 1);
    ::_exit(127);
  }
  return pid;
}

// Writes `text` to a new file `path` with mode 0600, owned by `uid`:`gid`.
static absl::Status WritePrivate(const std::string& path, const std::string& text, uid_t uid, gid_t gid) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("creating ", path));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool owned = ::fchown(fd, uid, gid) == 0;
  ::close(fd);
  if (!written || !owned) return absl::InternalError(absl::StrCat("writing ", path));
  return absl::OkStatus();
}

absl::Status TestPostgres::InitCluster() {
  // The superuser's password: random, unguessable by other users of the machine; the server
  // asks every connection for it (scram-sha-256), as a production server must.
  {
    unsigned char bytes[16];
    std::ifstream urandom("/dev/urandom", std::ios::binary);
    urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
    if (!urandom) return absl::InternalError("reading /dev/urandom");
    for (unsigned char b : bytes) absl::StrAppend(&password_, absl::Hex(b, absl::kZeroPad2));
  }
  const std::string pwfile = dir_ + "/initdb-password";
  if (absl::Status s = WritePrivate(pwfile, password_ + "\n", uid_, gid_); !s.ok()) return s;
  if (absl::Status s = WritePrivate(passfile(), absl::StrCat("*:*:*:postgres:", password_, "\n"),
                                    ::geteuid(), ::getegid());
      !s.ok()) {
    return s;
  }
  const std::string log = dir_ + "/initdb.log";
  absl::StatusOr<pid_t> pid =
      Spawn({options_.bin_dir + "/initdb", "-D", dir_ + "/data", "-U", "postgres",
             "--auth=scram-sha-256", "--pwfile=" + pwfile, "--encoding=UTF8", "--locale=C",
             "--no-sync"},
            log);
  if (!pid.ok()) return pid.status();
  int wstatus = 0;
  while (::waitpid(*pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  ::unlink(pwfile.c_str());
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return absl::InternalError(absl::StrCat("initdb for the test PostgreSQL failed (",
                                            DescribeExit(wstatus), "); ", log, " ends with:\n",
                                            Tail(log, 4000)));
  }
  // Passwords (scram-sha-256) on the unix socket and 127.0.0.1 only: no trust.
  const std::string hba = dir_ + "/data/pg_hba.conf";
  std::ofstream out(hba, std::ios::trunc);
  out << "local all all scram-sha-256\nhost all all 127.0.0.1/32 scram-sha-256\n";
  out.close();
  if (!out || ::chown(hba.c_str(), uid_, gid_) != 0) {
    return absl::InternalError(absl::StrCat("writing ", hba));
  }
  return absl::OkStatus();
}

absl::Status TestPostgres::Launch() {
  absl::StatusOr<pid_t> pid =
      Spawn({options_.bin_dir + "/postgres", "-D", dir_ + "/data", "-p", absl::StrCat(port_), "-k",
             dir_, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c",
             "max_connections=50", "-c", "shared_buffers=16MB", "-c", "logging_collector=off"},
            log_path());
  if (!pid.ok()) return pid.status();
  pid_ = *pid;
  if (absl::Status s = WaitReady(); !s.ok()) {
    Stop().IgnoreError();
    return s;
  }
  return absl::OkStatus();
}

absl::Status TestPostgres::WaitReady() {
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  const std::string conninfo = absl::StrCat("host=127.0.0.1 port=", port_,
                                            " user=postgres dbname=postgres connect_timeout=5");
  for (;;) {
    if (PQping(conninfo.c_str()) == PQPING_OK) return absl::OkStatus();
    int wstatus = 0;
    if (::waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError(absl::StrCat("PostgreSQL for tests exited (",
                                              DescribeExit(wstatus),
                                              ") before accepting connections on 127.0.0.1:", port_,
                                              "; ", log_path(), " ends with:\n", LogTail()));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("PostgreSQL for tests did not accept connections on 127.0.0.1:", port_,
                       " within ", absl::FormatDuration(options_.start_timeout), "; ", log_path(),
                       " ends with:\n", LogTail()));
    }
    absl::SleepFor(kPollInterval);  // Between readiness checks, not a guess at start-up time.
  }
}

absl::Status TestPostgres::Stop() {
  if (pid_ <= 0) return absl::OkStatus();
  ::kill(pid_, SIGINT);  // Fast shutdown.
  int wstatus = 0;
  while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return absl::OkStatus();
}

absl::Status TestPostgres::Restart() {
  if (absl::Status s = Stop(); !s.ok()) return s;
  return Launch();
}

std::string TestPostgres::LogTail(size_t bytes) const { return Tail(log_path(), bytes); }

}  // namespace weft::federation
