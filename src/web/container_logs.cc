// Copyright Weft authors.
#include "web/container_logs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/acl.h"
#include "common/ids.h"
#include "nlohmann/json.hpp"
#include "web/http_server.h"

namespace weft::web {
namespace fs = std::filesystem;
namespace {

// A name that is one safe path component (user names, node ids "host:port").
bool SafeComponent(absl::string_view s) {
  if (s.empty() || s.size() > 255 || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c != '/' && static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
}

bool IsRegularNoSymlink(const std::string& path, off_t* size) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (size != nullptr) *size = st.st_size;
  return true;
}

}  // namespace

bool MayReadLogs(const LogReader& reader, const LogOwner& owner) {
  if (reader.user.empty()) return false;  // anonymous
  if (reader.admin || reader.user == owner.user) return true;
  if (owner.view_acl.empty()) return false;
  absl::StatusOr<AccessControlList> acl = AccessControlList::Parse(owner.view_acl);
  return acl.ok() && acl->IsAllowed(reader.user, reader.groups);
}

HttpResponse LogRefusal(const absl::Status& status) {
  if (absl::IsUnauthenticated(status)) {
    HttpResponse r = JsonError(401, status.message());
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"weft\"");
    return r;
  }
  if (absl::IsInvalidArgument(status)) return JsonError(400, status.message());
  return JsonError(403, status.message());
}

HttpResponse LogForbidden(const LogReader& reader, absl::string_view app_id) {
  if (reader.user.empty()) {
    HttpResponse r = JsonError(
        401, absl::StrCat("the logs of ", app_id,
                          " need an authenticated reader (header X-Weft-Munge-Credential)"));
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"weft\"");
    return r;
  }
  return JsonError(403, absl::StrCat("user '", reader.user, "' may not read the logs of ", app_id,
                                     ": not its owner, an admin or in its view ACL"));
}

bool ValidLogFileName(absl::string_view name) {
  return !name.empty() && name.size() <= 128 && name[0] != '.' &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
         });
}

HttpResponse LogListing(const std::vector<ContainerLogDir>& dirs) {
  nlohmann::json list = nlohmann::json::array();
  for (const ContainerLogDir& d : dirs) {
    nlohmann::json files = nlohmann::json::array();
    std::vector<std::pair<std::string, off_t>> found;
    std::error_code ec;
    for (fs::directory_iterator it(d.dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      off_t size = 0;
      if (ValidLogFileName(name) && IsRegularNoSymlink(it->path().string(), &size))
        found.emplace_back(name, size);
    }
    std::sort(found.begin(), found.end());
    for (const auto& [name, size] : found)
      files.push_back({{"fileName", name}, {"fileSize", static_cast<int64_t>(size)}});
    list.push_back({{"containerId", d.container_id},
                    {"nodeId", d.node_id},
                    {"logAggregationType", d.aggregation_type},
                    {"running", d.running},
                    {"containerLogInfo", files}});
  }
  HttpResponse r;
  r.body = nlohmann::json({{"containerLogsInfo", list}}).dump();
  return r;
}

HttpResponse ServeLogFile(const std::string& path, const HttpRequest& req, size_t max_bytes,
                          bool running) {
  int64_t start = -1;
  if (req.HasParam("start")) {
    if (!absl::SimpleAtoi(req.Param("start"), &start) || start < 0)
      return JsonError(400, "start: expected a byte offset >= 0");
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) ::close(fd);
    return JsonError(404, absl::StrCat("no log file ", fs::path(path).filename().string()));
  }
  const int64_t size = st.st_size;
  int64_t from = start >= 0 ? std::min(start, size)
                            : std::max<int64_t>(0, size - static_cast<int64_t>(max_bytes));
  const int64_t length = std::min<int64_t>(size - from, static_cast<int64_t>(max_bytes));
  HttpResponse r;
  r.content_type = "text/plain; charset=utf-8";
  r.body.resize(static_cast<size_t>(length));
  size_t done = 0;
  while (done < r.body.size()) {
    ssize_t n = ::pread(fd, r.body.data() + done, r.body.size() - done,
                        static_cast<off_t>(from + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  r.body.resize(done);
  r.headers.emplace_back("X-Weft-Log-Length", absl::StrCat(size));
  r.headers.emplace_back("X-Weft-Log-Start", absl::StrCat(from));
  r.headers.emplace_back("X-Weft-Container-Running", running ? "true" : "false");
  return r;
}

HttpResponse ServeAggregatedLogs(const std::string& aggregation_dir, const std::string& app_id,
                                 const LogOwner& owner, const LogReader& reader,
                                 const HttpRequest& req, size_t max_bytes) {
  if (!MayReadLogs(reader, owner)) return LogForbidden(reader, app_id);
  if (aggregation_dir.empty())
    return JsonError(404,
                     "log aggregation is off on this ResourceManager "
                     "(weft rm --log-aggregation-dir)");
  if (!SafeComponent(owner.user) || !SafeComponent(app_id))
    return JsonError(404, absl::StrCat("no aggregated logs of ", app_id));
  const std::string app_dir = absl::StrCat(aggregation_dir, "/", owner.user, "/logs/", app_id);
  const std::string container = req.Param("containerid");
  if (!container.empty()) {
    const std::string file = req.Param("filename");
    if (AppOfContainer(container) != app_id)
      return JsonError(400, absl::StrCat("containerid: '", container.substr(0, 128),
                                         "' is not a container of ", app_id));
    if (!ValidLogFileName(file))
      return JsonError(400, "filename: expected a log file name such as stdout");
    // Which node ran it: the one directory holding it.
    std::error_code ec;
    for (fs::directory_iterator it(app_dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string node = it->path().filename().string();
      if (!SafeComponent(node) || it->is_symlink(ec)) continue;
      const std::string path = absl::StrCat(app_dir, "/", node, "/", container, "/", file);
      if (IsRegularNoSymlink(path, nullptr)) return ServeLogFile(path, req, max_bytes, false);
    }
    return JsonError(404, absl::StrCat("no aggregated ", file, " of ", container.substr(0, 128)));
  }
  std::vector<ContainerLogDir> dirs;
  std::error_code ec;
  for (fs::directory_iterator it(app_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string node = it->path().filename().string();
    if (!SafeComponent(node) || it->is_symlink(ec) || !it->is_directory(ec)) continue;
    std::error_code ec2;
    for (fs::directory_iterator c(it->path(), ec2), cend; !ec2 && c != cend; c.increment(ec2)) {
      const std::string id = c->path().filename().string();
      if (AppOfContainer(id) != app_id || c->is_symlink(ec2) || !c->is_directory(ec2)) continue;
      dirs.push_back({id, node, c->path().string(), false, "AGGREGATED"});
    }
  }
  if (dirs.empty()) return JsonError(404, absl::StrCat("no aggregated logs of ", app_id, " (yet)"));
  std::sort(dirs.begin(), dirs.end(), [](const ContainerLogDir& a, const ContainerLogDir& b) {
    return a.container_id < b.container_id;
  });
  return LogListing(dirs);
}

}  // namespace weft::web
