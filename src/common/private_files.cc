// Copyright Weft authors.
#include "common/private_files.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/errors.h"

namespace weft {
namespace {

std::string Octal(mode_t mode) { return absl::StrFormat("%04o", mode & 07777); }

}  // namespace

absl::Status MakePrivateDirectories(const std::string& dir) {
  std::filesystem::path prefix;
  for (const std::filesystem::path& part : std::filesystem::path(dir)) {
    prefix /= part;
    const std::string p = prefix.string();
    if (p.empty() || p == "/") continue;
    if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoError(errno, absl::StrCat("creating directory '", p, "'"));
    }
  }
  return absl::OkStatus();
}

mode_t SetDaemonUmask() { return ::umask(077); }

bool DirectoryModeIsOpen(mode_t mode) { return (mode & 066) != 0; }

absl::Status EnsurePrivateDirectory(const std::string& dir, absl::string_view what,
                                    mode_t create_mode) {
  if (DirectoryModeIsOpen(create_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", dir, "': mode ", Octal(create_mode), " is not private"));
  }
  if (dir.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": empty path"));
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoError(errno, absl::StrCat(what, " '", dir, "'"));
    if (absl::Status s = MakePrivateDirectories(dir); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
    }
    if (::chmod(dir.c_str(), create_mode) != 0) {
      return ErrnoError(errno, absl::StrCat(what, ": chmod '", dir, "'"));
    }
    if (::lstat(dir.c_str(), &st) != 0) {
      return ErrnoError(errno, absl::StrCat(what, " '", dir, "'"));
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " '", dir, "' is not a directory", S_ISLNK(st.st_mode) ? " (a symbolic link)" : ""));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " '", dir, "' belongs to uid ", st.st_uid, ", not to this daemon's uid ",
                     ::geteuid(), ": its keys and state must be the daemon's own (chown it)"));
  }
  if (DirectoryModeIsOpen(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " '", dir, "' has mode ", Octal(st.st_mode),
        ": other users could read or replace the keys and state in it; refusing to use it "
        "(chmod 0700 '",
        dir, "')"));
  }
  return absl::OkStatus();
}

namespace {

// Narrows `file` (in a directory already checked) to 0600, or creates it so when `create`;
// a missing file is fine without `create`.
absl::Status MakeFilePrivate(const std::string& file, absl::string_view what, bool create) {
  // By path, never through a descriptor of an existing file: closing any descriptor of a file
  // drops every POSIX lock this process holds on it, which would break the locking of an
  // SQLite connection that has it open in this process.
  for (int attempt = 0; attempt < 2; ++attempt) {
    struct stat st;
    if (::lstat(file.c_str(), &st) == 0) {
      if (S_ISLNK(st.st_mode)) {
        return absl::FailedPreconditionError(
            absl::StrCat(what, " '", file, "' is a symbolic link; refusing to follow it"));
      }
      if (!S_ISREG(st.st_mode)) {
        return absl::FailedPreconditionError(
            absl::StrCat(what, " '", file, "' is not a regular file"));
      }
      if (st.st_uid != ::geteuid()) {
        return absl::FailedPreconditionError(absl::StrCat(what, " '", file, "' belongs to uid ",
                                                          st.st_uid, ", not to this daemon's uid ",
                                                          ::geteuid(), " (chown it)"));
      }
      // The directory is ours and private: nobody can swap the file between lstat and chmod.
      if ((st.st_mode & 077) != 0 && ::chmod(file.c_str(), st.st_mode & 0700) != 0) {
        return ErrnoError(errno, absl::StrCat("chmod 0600 ", what, " '", file, "'"));
      }
      return absl::OkStatus();
    }
    if (errno != ENOENT) return ErrnoError(errno, absl::StrCat(what, " '", file, "'"));
    if (!create) return absl::OkStatus();
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);  // a new file: no lock of anyone's on it yet
      return absl::OkStatus();
    }
    if (errno != EEXIST)
      return ErrnoError(errno, absl::StrCat("creating ", what, " '", file, "'"));
    // Made meanwhile: check it as an existing file.
  }
  return absl::InternalError(absl::StrCat(what, " '", file, "' keeps appearing and vanishing"));
}

}  // namespace

absl::Status EnsurePrivateFile(const std::string& file, absl::string_view what) {
  std::filesystem::path parent = std::filesystem::path(file).parent_path();
  if (parent.empty()) parent = ".";
  if (absl::Status s = EnsurePrivateDirectory(parent.string(), absl::StrCat(what, " directory"));
      !s.ok()) {
    return s;
  }
  return MakeFilePrivate(file, what, /*create=*/true);
}

absl::Status EnsurePrivateSqliteFile(const std::string& file, absl::string_view what) {
  if (absl::Status s = EnsurePrivateFile(file, what); !s.ok()) return s;
  // SQLite makes a missing one with the database file's mode.
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    if (absl::Status s = MakeFilePrivate(file + suffix, what, /*create=*/false); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadPrivateSecretFile(const std::string& path, absl::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoError(errno, absl::StrCat(what, " '", path, "'"));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoError(err, absl::StrCat(what, " '", path, "'"));
  }
  auto refuse = [&](absl::string_view why) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(what, " '", path, "' ", why));
  };
  if (!S_ISREG(st.st_mode)) return refuse("is not a regular file");
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return refuse(absl::StrCat("belongs to uid ", st.st_uid, ", not to this daemon's uid ",
                               ::geteuid(), " or root"));
  }
  if ((st.st_mode & 077) != 0) {
    return refuse(absl::StrCat("has mode ", Octal(st.st_mode),
                               ": other users could read the secret (chmod 0600 '", path, "')"));
  }
  if (st.st_size > (1 << 16)) return refuse("is larger than 64 KiB");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(done);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(what, " '", path, "' is empty"));
  }
  return text;
}

}  // namespace weft
