// Copyright Weft authors.
#include "nm/exit_watcher.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace weft::nm {
absl::StatusOr<std::unique_ptr<ExitWatcher>> ExitWatcher::Start(std::function<void()> on_exit) {
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) return ErrnoError(errno, "exit watcher: epoll_create1");
  const int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    const int err = errno;
    close(epoll_fd);
    return ErrnoError(err, "exit watcher: eventfd");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = stop_fd;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, stop_fd, &ev) != 0) {
    const int err = errno;
    close(stop_fd);
    close(epoll_fd);
    return ErrnoError(err, "exit watcher: epoll_ctl");
  }
  return std::unique_ptr<ExitWatcher>(new ExitWatcher(epoll_fd, stop_fd, std::move(on_exit)));
}

ExitWatcher::ExitWatcher(int epoll_fd, int stop_fd, std::function<void()> on_exit)
    : epoll_fd_(epoll_fd), stop_fd_(stop_fd), on_exit_(std::move(on_exit)) {
  thread_ = std::thread([this] { Run(); });
}

ExitWatcher::~ExitWatcher() {
  const uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof(one));
  thread_.join();
  absl::MutexLock lock(&mu_);
  for (int fd : pidfds_) close(fd);
  close(stop_fd_);
  close(epoll_fd_);
}

absl::Status ExitWatcher::Watch(pid_t pid) {
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    const int err = errno;
    if (err == ESRCH) return absl::NotFoundError(absl::StrCat("pid ", pid, " has ended"));
    if (err == ENOSYS) return absl::UnimplementedError("pidfd_open: not in this kernel");
    return ErrnoError(err, absl::StrCat("pidfd_open(", pid, ")"));
  }
  // Close-on-exec: pidfd_open sets it (Linux documents O_CLOEXEC on every pidfd).
  absl::MutexLock lock(&mu_);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoError(err, "exit watcher: epoll_ctl");
  }
  pidfds_.insert(fd);
  return absl::OkStatus();
}

size_t ExitWatcher::watched() const {
  absl::MutexLock lock(&mu_);
  return pidfds_.size();
}

void ExitWatcher::Run() {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // only a bad epoll fd fails here: the destructor's close
    }
    bool ended = false;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == stop_fd_) return;
      // Readable: the process ended, and its pidfd is done. Taken out of the epoll set before
      // it is closed: a forked child of this process may hold a copy of the descriptor for a
      // while (until it execs or closes it), and the set would keep reporting it till then.
      absl::MutexLock lock(&mu_);
      if (pidfds_.erase(fd) > 0) {
        (void)epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        close(fd);
        ended = true;
      }
    }
    if (ended) on_exit_();
  }
}

}  // namespace weft::nm
