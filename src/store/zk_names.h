// Copyright Weft authors. ZooKeeper node names that carry arbitrary bytes (e.g. an app_id), as
// the ZooKeeper state stores (store/zk_store.h, the federation's ZooKeeper store) spell them.
#ifndef WEFT_STORE_ZK_NAMES_H_
#define WEFT_STORE_ZK_NAMES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::store::zk {

// A ZooKeeper node name for arbitrary bytes: the bytes A-Z a-z 0-9 '_' '-' are kept, every
// other byte becomes "%XX" (two upper-case hex digits). The result is never empty for a
// non-empty input, never "." or "..", and holds no '/', '.' or character ZooKeeper refuses, so
// names of different inputs never collide and '.' is free as a separator.
std::string EscapeNodeName(absl::string_view bytes);

// The inverse of EscapeNodeName. InvalidArgument for a name EscapeNodeName cannot produce.
absl::StatusOr<std::string> UnescapeNodeName(absl::string_view name);

}  // namespace weft::store::zk

#endif  // WEFT_STORE_ZK_NAMES_H_
