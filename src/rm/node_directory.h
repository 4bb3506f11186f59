// Copyright Weft authors. Node ids to the RM's node records, readable from any thread.
#ifndef WEFT_RM_NODE_DIRECTORY_H_
#define WEFT_RM_NODE_DIRECTORY_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace weft::rm {

struct RmNode;

// The NodeTracker's index of its nodes by id. A heartbeat's gRPC thread finds its node here
// before the call reaches the loop (issue 29: validate off the loop), so the loop neither
// hashes the id nor probes a table of every node for it; the loop's own lookups use it too.
//
// Thread-safe. Entries are only ever added (by the loop, at a node's first registration) and
// the records never move while their NodeTracker lives. A record found here is the loop's:
// another thread may hand the pointer to the loop (or prefetch it), never read or write it.
// The directory may outlive its tracker (a heartbeat's thread may hold it while a failover
// destroys the RM), so it keeps copies of the ids: Find never reads the tracker's memory.
class NodeDirectory {
 public:
  void Add(absl::string_view id, RmNode* node) {
    absl::WriterMutexLock l(&mu_);
    by_id_.emplace(std::string(id), node);
  }
  // nullptr when `id` never registered.
  RmNode* Find(absl::string_view id) const {
    absl::ReaderMutexLock l(&mu_);
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second;
  }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, RmNode*> by_id_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::rm

#endif  // WEFT_RM_NODE_DIRECTORY_H_
