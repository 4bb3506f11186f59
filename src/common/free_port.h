// Copyright Weft authors. A free TCP port on the loopback interface, for servers that must name
// their port before they listen (an NM whose certificate names its node id, a test's private
// ZooKeeper or PostgreSQL).
#ifndef WEFT_COMMON_FREE_PORT_H_
#define WEFT_COMMON_FREE_PORT_H_

#include "absl/status/statusor.h"

namespace weft {

// A port on 127.0.0.1 that nothing listens on right now (the kernel's pick for port 0). Another
// process may take it before the caller binds it: callers retry on "address in use".
// Errors: the socket calls' errno.
absl::StatusOr<int> FreeLoopbackPort();

}  // namespace weft

#endif  // WEFT_COMMON_FREE_PORT_H_
