// Copyright Weft authors.
#include "common/reachable_host.h"

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace weft {

bool IsWildcardHost(absl::string_view host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]";
}

std::string ReachableHost(absl::string_view bind_host) {
  if (!IsWildcardHost(bind_host)) return std::string(bind_host);
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string HostPort(absl::string_view host, int port) {
  if (absl::StrContains(host, ':') && !absl::StartsWith(host, "["))
    return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

}  // namespace weft
