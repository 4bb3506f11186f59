// Copyright Weft authors.
#include "security/user_identity.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace weft::security {
namespace {

// Fills a UnixUser from a passwd entry and getgrouplist.
UnixUser FromPasswd(const passwd& pw) {
  UnixUser u;
  u.name = pw.pw_name;
  u.uid = pw.pw_uid;
  u.gid = pw.pw_gid;
  u.home = pw.pw_dir == nullptr ? "" : pw.pw_dir;
  int n = 32;
  std::vector<gid_t> gids(static_cast<size_t>(n));
  while (getgrouplist(pw.pw_name, pw.pw_gid, gids.data(), &n) < 0) gids.resize(static_cast<size_t>(n));
  gids.resize(static_cast<size_t>(n));
  u.gids.push_back(pw.pw_gid);
  for (gid_t g : gids)
    if (g != pw.pw_gid) u.gids.push_back(g);
  std::vector<char> buf(16384);
  for (gid_t g : u.gids) {
    group gr{};
    group* found = nullptr;
    if (getgrgid_r(g, &gr, buf.data(), buf.size(), &found) == 0 && found != nullptr)
      u.groups.emplace_back(found->gr_name);
  }
  return u;
}

bool PlausibleName(absl::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] == '-') return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
          c == '@' || c == '$'))
      return false;
  return true;
}

}  // namespace

absl::StatusOr<UnixUser> LookUpUser(uid_t uid) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  int rc = getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
  if (rc != 0)
    return ErrnoError(rc, absl::StrCat("looking up uid ", uid));
  if (found == nullptr) return absl::NotFoundError(absl::StrCat("no user has uid ", uid));
  return FromPasswd(pw);
}

absl::StatusOr<UnixUser> LookUpUser(absl::string_view name) {
  if (!PlausibleName(name))
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a user name"));
  std::string n(name);
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  int rc = getpwnam_r(n.c_str(), &pw, buf.data(), buf.size(), &found);
  if (rc != 0)
    return ErrnoError(rc, absl::StrCat("looking up user '", name, "'"));
  if (found == nullptr) return absl::NotFoundError(absl::StrCat("no such user '", name, "'"));
  return FromPasswd(pw);
}

absl::StatusOr<UnixUser> CurrentUser() { return LookUpUser(geteuid()); }

}  // namespace weft::security
