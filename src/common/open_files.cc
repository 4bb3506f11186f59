#include "common/open_files.h"

#include <sys/resource.h>

#include <cerrno>

#include "common/errors.h"

namespace weft {
namespace {

uint64_t Limit(rlim_t v) { return v == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(v); }

}  // namespace

absl::StatusOr<OpenFilesLimit> RaiseOpenFilesLimit() {
  rlimit l{};
  if (getrlimit(RLIMIT_NOFILE, &l) != 0)
    return ErrnoError(errno, "reading the open files limit (RLIMIT_NOFILE)");
  if (l.rlim_cur != l.rlim_max) {
    rlimit raised = l;
    raised.rlim_cur = l.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0)
      return ErrnoError(errno, "raising the open files limit (RLIMIT_NOFILE) to its hard limit");
    l = raised;
  }
  return OpenFilesLimit{Limit(l.rlim_cur), Limit(l.rlim_max)};
}

}  // namespace weft
