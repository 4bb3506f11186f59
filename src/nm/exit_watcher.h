// Copyright Weft authors. Hears at once that a process ended, so that the NodeManager reaps a
// container when it exits instead of at its next reap tick: one pidfd (pidfd_open(2), Linux
// 5.3) per watched process, all in one epoll set waited on by one thread.
#ifndef WEFT_NM_EXIT_WATCHER_H_
#define WEFT_NM_EXIT_WATCHER_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace weft::nm {

// Thread-safe. `on_exit` runs on the watcher's own thread, once for each watched process that
// ended (several may end before it runs: it is a wake-up, not a count); it must not block and
// must not call back into the watcher. The process is not reaped here: its parent still waits
// for it. The destructor stops the thread: no `on_exit` runs after it returns.
class ExitWatcher {
 public:
  // Errors: what epoll_create1/eventfd said (e.g. no file descriptors left).
  static absl::StatusOr<std::unique_ptr<ExitWatcher>> Start(std::function<void()> on_exit);
  ~ExitWatcher();
  ExitWatcher(const ExitWatcher&) = delete;
  ExitWatcher& operator=(const ExitWatcher&) = delete;

  // Watches `pid` (any process this one may see, child or not). NotFound when it has already
  // ended and been reaped (nothing to hear); Unimplemented on a kernel without pidfd_open, where
  // the caller's periodic reap stays the only way. `on_exit` runs once it ends, or at once if it
  // already ended (a zombie).
  absl::Status Watch(pid_t pid);
  // Processes watched now (their end not yet heard).
  size_t watched() const;

 private:
  ExitWatcher(int epoll_fd, int stop_fd, std::function<void()> on_exit);
  void Run();

  const int epoll_fd_;
  const int stop_fd_;  // an eventfd: written once by the destructor
  const std::function<void()> on_exit_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<int> pidfds_ ABSL_GUARDED_BY(mu_);  // open, in the epoll set
  std::thread thread_;
};

}  // namespace weft::nm

#endif  // WEFT_NM_EXIT_WATCHER_H_
