// Copyright Weft authors.
#include "nm/log_aggregator.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/errors.h"
#include "common/files.h"
#include "common/ids.h"
#include "common/log.h"
#include "security/user_identity.h"

namespace weft::nm {
namespace fs = std::filesystem;
namespace {

constexpr char kMetaDir[] = "log-meta";
constexpr char kPendingSuffix[] = ".aggregating";
constexpr char kTempPrefix[] = ".tmp-";
constexpr mode_t kDirMode = 0750;
constexpr mode_t kFileMode = 0640;

// A name that can be one path component: no separator, not "." or "..", not hidden, printable.
bool SafeComponent(absl::string_view s) {
  if (s.empty() || s.size() > 255 || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c != '/' && static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
}

// application_<digits>_<digits>.
bool ValidAppId(absl::string_view id) {
  absl::string_view rest = id;
  if (!absl::ConsumePrefix(&rest, "application_") || rest.empty()) return false;
  std::vector<absl::string_view> parts = absl::StrSplit(rest, '_');
  if (parts.size() != 2) return false;
  for (absl::string_view p : parts) {
    if (p.empty() || !std::all_of(p.begin(), p.end(), absl::ascii_isdigit)) return false;
  }
  return true;
}

// Creates `dir` (mode 0750, owned as `uid`:`gid` when both are >= 0) if it is missing. A
// symlink in its place is an error: nothing is written through one.
absl::Status EnsureDir(const std::string& dir, uid_t uid, gid_t gid, bool chown_it) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      return absl::FailedPreconditionError(absl::StrCat(dir, " exists and is not a directory"));
    return absl::OkStatus();
  }
  if (::mkdir(dir.c_str(), kDirMode) != 0 && errno != EEXIST)
    return ErrnoError(errno, absl::StrCat("creating ", dir));
  if (::chmod(dir.c_str(), kDirMode) != 0) return ErrnoError(errno, absl::StrCat("chmod ", dir));
  if (chown_it && ::chown(dir.c_str(), uid, gid) != 0)
    return ErrnoError(errno, absl::StrCat("chown ", dir));
  return absl::OkStatus();
}

// Copies the regular file `from` to `to` (created, mode 0640), refusing a symlink at `from`.
absl::Status CopyLogFile(const std::string& from, const std::string& to, uid_t uid, gid_t gid,
                         bool chown_it) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (in < 0) return ErrnoError(errno, absl::StrCat("opening ", from));
  struct stat st;
  if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(in);
    return absl::FailedPreconditionError(absl::StrCat(from, " is not a regular file"));
  }
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, kFileMode);
  if (out < 0) {
    absl::Status s = ErrnoError(errno, absl::StrCat("creating ", to));
    ::close(in);
    return s;
  }
  absl::Status status;
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = ErrnoError(errno, absl::StrCat("reading ", from));
      break;
    }
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out, buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        status = ErrnoError(errno, absl::StrCat("writing ", to));
        break;
      }
      done += w;
    }
    if (!status.ok()) break;
  }
  ::close(in);
  if (status.ok() && ::fchmod(out, kFileMode) != 0)
    status = ErrnoError(errno, absl::StrCat("chmod ", to));
  if (status.ok() && chown_it && ::fchown(out, uid, gid) != 0)
    status = ErrnoError(errno, absl::StrCat("chown ", to));
  if (status.ok() && ::fsync(out) != 0) status = ErrnoError(errno, absl::StrCat("syncing ", to));
  if (::close(out) != 0 && status.ok()) status = ErrnoError(errno, absl::StrCat("closing ", to));
  return status;
}

std::string MetaPath(absl::string_view work_root, absl::string_view app_id) {
  return absl::StrCat(work_root, "/", kMetaDir, "/", app_id);
}

}  // namespace

LogAggregator::LogAggregator(std::string work_root, std::string aggregation_dir,
                             std::string node_id)
    : work_root_(std::move(work_root)),
      aggregation_dir_(std::move(aggregation_dir)),
      node_id_(std::move(node_id)) {}

std::string LogAggregator::AppDir(absl::string_view aggregation_dir, absl::string_view user,
                                  absl::string_view app_id) {
  return absl::StrCat(aggregation_dir, "/", user, "/logs/", app_id);
}

absl::Status LogAggregator::RecordApp(absl::string_view app_id, const AppLogOwner& owner) {
  if (!ValidAppId(app_id))
    return absl::InvalidArgumentError(absl::StrCat("'", app_id, "' is not an application id"));
  if (!SafeComponent(owner.user) || absl::StrContains(owner.view_acl, '\n'))
    return absl::InvalidArgumentError(
        absl::StrCat("application ", app_id, ": bad user or view ACL in its container token"));
  const std::string dir = absl::StrCat(work_root_, "/", kMetaDir);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return ErrnoError(errno, absl::StrCat("creating ", dir));
  const std::string path = MetaPath(work_root_, app_id);
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) return absl::OkStatus();
  return WriteFileAtomically(path, absl::StrCat(owner.user, "\n", owner.view_acl, "\n"), 0600);
}

absl::StatusOr<AppLogOwner> LogAggregator::ReadAppOwner(absl::string_view work_root,
                                                        absl::string_view app_id) {
  if (!ValidAppId(app_id))
    return absl::InvalidArgumentError(absl::StrCat("'", app_id, "' is not an application id"));
  const std::string path = MetaPath(work_root, app_id);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("no log owner recorded for ", app_id));
  AppLogOwner owner;
  std::getline(in, owner.user);
  std::getline(in, owner.view_acl);
  if (owner.user.empty()) return absl::DataLossError(absl::StrCat(path, ": no user"));
  return owner;
}

bool LogAggregator::ContainerRunning(absl::string_view work_root, absl::string_view container_id) {
  if (AppOfContainer(container_id).empty()) return false;
  const std::string state_dir = absl::StrCat(work_root, "/nm-state/", container_id);
  std::error_code ec;
  return fs::is_directory(state_dir, ec) && !fs::exists(state_dir + "/exit_code", ec);
}

void LogAggregator::ForgetApp(absl::string_view app_id) {
  if (!ValidAppId(app_id)) return;
  ::unlink(MetaPath(work_root_, app_id).c_str());
}

absl::Status LogAggregator::AggregateApp(absl::string_view app_id_view) {
  if (!enabled()) return absl::OkStatus();
  const std::string app_id(app_id_view);
  absl::StatusOr<AppLogOwner> owner = ReadAppOwner(work_root_, app_id);
  if (!owner.ok())
    return absl::Status(owner.status().code(), absl::StrCat("aggregating the logs of ", app_id,
                                                            ": ", owner.status().message()));
  if (!SafeComponent(owner->user) || !SafeComponent(node_id_))
    return absl::InvalidArgumentError(absl::StrCat("aggregating the logs of ", app_id, ": user '",
                                                   owner->user, "' or node '", node_id_,
                                                   "' cannot name a directory"));
  const std::string marker = absl::StrCat(MetaPath(work_root_, app_id), kPendingSuffix);
  if (absl::Status s = WriteFileAtomically(marker, absl::StrCat(app_id, "\n"), 0600); !s.ok())
    return s;

  // The layout's owner: the NM's user, with the app user's primary group (root NM only).
  const bool as_root = ::geteuid() == 0;
  uid_t uid = ::geteuid();
  gid_t gid = ::getegid();
  if (as_root) {
    absl::StatusOr<security::UnixUser> user = security::LookUpUser(owner->user);
    if (user.ok()) gid = user->gid;
  }
  std::error_code mkdir_ec;
  fs::create_directories(aggregation_dir_, mkdir_ec);  // the operator's; usually there already
  std::string dir = aggregation_dir_;
  for (const std::string& part : {owner->user, std::string("logs"), app_id, node_id_}) {
    dir = absl::StrCat(dir, "/", part);
    if (absl::Status s = EnsureDir(dir, uid, gid, as_root); !s.ok()) return s;
  }
  absl::Status first;
  int copied = 0;
  std::error_code ec;
  const fs::path logs = fs::path(work_root_) / "logs";
  for (fs::directory_iterator it(logs, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string container_id = it->path().filename().string();
    if (AppOfContainer(container_id) != app_id || !SafeComponent(container_id)) continue;
    absl::Status s = AggregateContainer(container_id, dir);
    if (s.ok()) {
      ++copied;
    } else if (first.ok()) {
      first = s;
    }
  }
  if (!first.ok()) return first;
  ::unlink(marker.c_str());
  log::Info("logs_aggregated",
            {{"node", node_id_}, {"app", app_id}, {"containers", copied}, {"dir", dir}});
  return absl::OkStatus();
}

absl::Status LogAggregator::AggregateContainer(const std::string& container_id,
                                               const std::string& node_dir) {
  const std::string target = absl::StrCat(node_dir, "/", container_id);
  struct stat st;
  if (::lstat(target.c_str(), &st) == 0) return absl::OkStatus();  // done by an earlier run
  const std::string tmp = absl::StrCat(node_dir, "/", kTempPrefix, container_id);
  std::error_code ec;
  fs::remove_all(tmp, ec);  // what a crashed run left
  const bool as_root = ::geteuid() == 0;
  uid_t uid = ::geteuid();
  gid_t gid = ::getegid();
  if (::stat(node_dir.c_str(), &st) == 0) gid = st.st_gid;
  if (absl::Status s = EnsureDir(tmp, uid, gid, as_root); !s.ok()) return s;
  const fs::path source = fs::path(work_root_) / "logs" / container_id;
  for (fs::directory_iterator it(source, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!SafeComponent(name) || !it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    if (absl::Status s =
            CopyLogFile(it->path().string(), absl::StrCat(tmp, "/", name), uid, gid, as_root);
        !s.ok())
      return absl::Status(s.code(),
                          absl::StrCat("aggregating container ", container_id, ": ", s.message()));
  }
  if (ec)
    return absl::InternalError(absl::StrCat("aggregating container ", container_id, ": listing ",
                                            source.string(), ": ", ec.message()));
  if (::rename(tmp.c_str(), target.c_str()) != 0)
    return ErrnoError(errno, absl::StrCat("renaming into ", target));
  return absl::OkStatus();
}

absl::Status LogAggregator::ResumePending() {
  if (!enabled()) return absl::OkStatus();
  absl::Status first;
  std::error_code ec;
  const fs::path meta = fs::path(work_root_) / kMetaDir;
  std::vector<std::string> pending;
  for (fs::directory_iterator it(meta, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    absl::string_view app = name;
    if (absl::ConsumeSuffix(&app, kPendingSuffix) && ValidAppId(app)) pending.emplace_back(app);
  }
  for (const std::string& app : pending) {
    log::Info("log_aggregation_resumed", {{"node", node_id_}, {"app", app}});
    if (absl::Status s = AggregateApp(app); !s.ok() && first.ok()) first = s;
  }
  return first;
}

}  // namespace weft::nm
