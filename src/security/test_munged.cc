// Copyright Weft authors.
#include "security/test_munged.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "security/munge.h"
#include "security/secret_source.h"

namespace weft::security {

absl::StatusOr<std::unique_ptr<TestMunged>> TestMunged::Start() {
  const char* munged = "/usr/sbin/munged";
  if (access(munged, X_OK) != 0)
    return absl::FailedPreconditionError(
        "/usr/sbin/munged is missing: install the Debian package munge (scripts/install-deps.sh)");
  char tmpl[] = "/tmp/weft-munge-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp failed");
  std::unique_ptr<TestMunged> m(new TestMunged());
  m->dir_ = tmpl;
  chmod(tmpl, 0755);
  m->socket_ = m->dir_ + "/munge.socket";
  std::string key_path = m->dir_ + "/munge.key";
  OpenSslSecretSource rand;
  absl::StatusOr<std::string> key = rand.Generate(128);
  if (!key.ok()) return key.status();
  int fd = open(key_path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0 || write(fd, key->data(), key->size()) != static_cast<ssize_t>(key->size()))
    return absl::InternalError("writing the test munge key");
  close(fd);
  std::string socket_arg = "--socket=" + m->socket_;
  std::string key_arg = "--key-file=" + key_path;
  std::string pid_arg = "--pid-file=" + m->dir_ + "/munged.pid";
  std::string seed_arg = "--seed-file=" + m->dir_ + "/munged.seed";
  std::string log_arg = "--log-file=" + m->dir_ + "/munged.log";
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    execl(munged, munged, "--foreground", "--force", socket_arg.c_str(), key_arg.c_str(),
          pid_arg.c_str(), seed_arg.c_str(), log_arg.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  m->pid_ = pid;
  // Readiness: munged answers an encode.
  absl::Status last;
  for (int i = 0; i < 1000; ++i) {
    absl::StatusOr<std::string> c = MungeEncode(m->socket_, "ready?");
    if (c.ok()) return m;
    last = c.status();
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      m->pid_ = -1;
      return absl::InternalError(absl::StrCat("test munged exited (status ", status, "); see ",
                                              m->dir_, "/munged.log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return absl::DeadlineExceededError(absl::StrCat("test munged not ready: ", last.message()));
}

TestMunged::~TestMunged() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace weft::security
