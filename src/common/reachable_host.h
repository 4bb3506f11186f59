// Copyright Weft authors. The host name others dial to reach a server of this machine: what a
// daemon advertises (to the RM, to AMs, in reports) for the address it listens on.
#ifndef WEFT_COMMON_REACHABLE_HOST_H_
#define WEFT_COMMON_REACHABLE_HOST_H_

#include <string>

#include "absl/strings/string_view.h"

namespace weft {

// True for the hosts that mean "every address of this machine": 0.0.0.0, :: and [::].
bool IsWildcardHost(absl::string_view host);

// Where other machines reach a server listening on `bind_host`: `bind_host` itself, unless it
// is a wildcard, which names no address another machine can dial; then this machine's host
// name (gethostname()), which its certificate must name (`weft certs issue --san`), or
// "localhost" if the host name cannot be read.
std::string ReachableHost(absl::string_view bind_host);

// "host:port", with an IPv6 literal in brackets ("[::1]:8030"); a host given in brackets
// already is kept as it is.
std::string HostPort(absl::string_view host, int port);

}  // namespace weft

#endif  // WEFT_COMMON_REACHABLE_HOST_H_
