// Copyright Weft authors.
#include "rm/client_auth.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "security/munge.h"
#include "security/user_identity.h"

namespace weft::rm {
namespace {

bool Contains(const std::vector<std::string>& list, absl::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool IsAdmin(const ClientAuthOptions& o, absl::string_view user) {
  return user == o.rm_user || Contains(o.admins, user) || Contains(o.admins, "*");
}

bool ValidUserName(absl::string_view u) {
  if (u.empty() || u.size() > 64 || u[0] == '-') return false;
  return std::all_of(u.begin(), u.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
           c == '@';
  });
}

}  // namespace

absl::StatusOr<Caller> AuthenticateClient(const ClientAuthOptions& o, const Presented& p) {
  if (!p.declared_user.empty() && !ValidUserName(p.declared_user))
    return absl::InvalidArgumentError(
        absl::StrCat("'", p.declared_user, "' is not a user name (letters, digits, . _ - @)"));
  Caller c;
  if (!p.secret.empty()) {
    if (o.admin_secret.empty() || p.secret.size() != o.admin_secret.size() ||
        CRYPTO_memcmp(p.secret.data(), o.admin_secret.data(), p.secret.size()) != 0)
      return absl::UnauthenticatedError(o.admin_secret.empty()
                                            ? "this RM takes no admin secret"
                                            : "wrong admin secret");
    c.user = p.declared_user.empty() ? o.rm_user : p.declared_user;
    c.root = c.user == "root";
    c.real_user = "admin-secret";
    c.admin = true;
    return c;
  }
  if (!p.federation_peer.empty()) {
    if (p.declared_user.empty())
      return absl::InvalidArgumentError(absl::StrCat(
          "federation daemon ", p.federation_peer,
          " must name the user it acts for (metadata weft-user)"));
    c.real_user = p.federation_peer;
    if (o.mode == UserAuthentication::kDeclared) {
      c.user = p.declared_user;
      c.root = c.user == "root";
    } else {
      absl::StatusOr<security::UnixUser> as = security::LookUpUser(p.declared_user);
      if (!as.ok())
        return absl::InvalidArgumentError(absl::StrCat(
            "federation daemon ", p.federation_peer, " acting for '", p.declared_user,
            "': ", as.status().message()));
      c.user = as->name;
      c.groups = as->groups;
      c.root = as->uid == 0;
    }
    c.admin = IsAdmin(o, c.user);
    return c;
  }
  if (o.mode == UserAuthentication::kDeclared) {
    c.user = p.declared_user.empty() ? "default" : p.declared_user;
    c.root = c.user == "root";
    c.real_user = c.user;
    c.admin = IsAdmin(o, c.user);
    return c;
  }
  if (p.munge_credential.empty())
    return absl::UnauthenticatedError(
        "this RM authenticates users with MUNGE and the call carried no credential "
        "(weft-munge-cred)");
  absl::StatusOr<security::UnixUser> real =
      security::MungeClientUser(o.munge_socket, p.munge_credential);
  if (!real.ok()) return real.status();
  c.real_user = real->name;
  if (p.declared_user.empty() || p.declared_user == real->name) {
    c.user = real->name;
    c.groups = real->groups;
    c.root = real->uid == 0;
    c.admin = IsAdmin(o, c.user);
    return c;
  }
  if (!Contains(o.proxy_users, real->name))
    return absl::PermissionDeniedError(absl::StrCat(
        "user '", real->name, "' may not act as '", p.declared_user,
        "': only proxy users may (weft rm --proxy-users)"));
  absl::StatusOr<security::UnixUser> as = security::LookUpUser(p.declared_user);
  if (!as.ok()) return absl::InvalidArgumentError(absl::StrCat("--user: ", as.status().message()));
  if (as->uid == 0)
    return absl::PermissionDeniedError(
        absl::StrCat("proxy user '", real->name, "' may not act as root"));
  c.user = as->name;
  c.groups = as->groups;
  c.admin = IsAdmin(o, c.user);
  return c;
}

}  // namespace weft::rm
