// Copyright Weft authors.
#include "common/files.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace weft {
namespace {

// Writes all of `data` to `fd`; false with errno set on a failure.
bool WriteAll(int fd, absl::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, absl::StrCat(path, ": cannot open"));
  std::string contents;
  struct stat st;
  if (::fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return ErrnoError(EISDIR, absl::StrCat(path, ": cannot open"));
    }
    if (S_ISREG(st.st_mode) && st.st_size > 0) contents.reserve(static_cast<size_t>(st.st_size));
  }
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoError(err, absl::StrCat(path, ": cannot read"));
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return contents;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents, mode_t mode) {
  static std::atomic<uint64_t> next_temp{0};
  const std::string context = absl::StrCat("writing '", path, "'");
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp = absl::StrCat(path, ".tmp.", ::getpid(), ".", next_temp++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    // EEXIST: a file a crashed process with the same pid left; try the next name.
    if (fd < 0 && (errno != EEXIST || attempt >= 8)) {
      return ErrnoError(errno, absl::StrCat(context, ": creating '", tmp, "'"));
    }
  }
  auto fail = [&](absl::string_view step) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return ErrnoError(err, absl::StrCat(context, ": ", step, " '", tmp, "'"));
  };
  if (::fchmod(fd, mode) != 0) return fail("chmod");  // the umask may have narrowed it
  if (!WriteAll(fd, contents)) return fail("writing");
  if (::fsync(fd) != 0) return fail("syncing");
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return fail("closing");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("renaming into place");
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (absl::Status s = SyncDirectory(parent); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status SyncDirectory(const std::filesystem::path& dir) {
  const std::string name = dir.empty() ? std::string(".") : dir.string();
  const int fd = ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("opening directory '", name, "'"));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoError(err, absl::StrCat("syncing directory '", name, "'"));
  return absl::OkStatus();
}

absl::Status CreateParentDirectories(const std::filesystem::path& file) {
  namespace fs = std::filesystem;
  std::vector<fs::path> missing;  // deepest first
  for (fs::path dir = file.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    std::error_code ec;
    if (fs::exists(dir, ec) || dir == dir.parent_path()) break;
    missing.push_back(dir);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoError(errno, absl::StrCat("creating directory '", it->string(), "'"));
    }
  }
  for (const fs::path& dir : missing) {
    if (absl::Status s = SyncDirectory(dir.parent_path()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace weft
