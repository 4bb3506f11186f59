// Copyright Weft authors. A fixed piece of the RM loop's kind of work, timed on the loop by
// `weft bench rm --loop-probe-ms` to tell a machine that runs the same work slower apart from
// an RM that does more work.
#ifndef WEFT_RM_LOOP_PROBE_H_
#define WEFT_RM_LOOP_PROBE_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "security/master_key.h"
#include "security/tokens.h"

namespace weft::rm {

// The same work at every cluster size and on every run: kTokens container tokens issued (the
// identifier encoded, then its HMAC-SHA256), as a pass does for each container it hands out,
// and kReplaced container names replaced in a private table that always holds kNames of them,
// as completions and allocations do in the RM's own tables. Nothing in it grows with the
// cluster, so when its CPU time on the RM loop grows with the simulated NMs, the machine ran
// the same work slower (its caches shared with the simulators), and an RM figure that grew by
// as much did not grow by the RM doing more.
//
// Thread-compatible.
class LoopProbe {
 public:
  static constexpr int kNames = 20000;
  static constexpr int kTokens = 4;
  static constexpr int kReplaced = 64;

  LoopProbe();
  // Does the work once; the calling thread's CPU time for it, ns.
  int64_t Run();
  // The table's size: kNames before and after every Run.
  size_t names() const { return names_.size(); }
  // Bytes of the tokens' passwords issued so far (keeps the work from being optimised away).
  int64_t password_bytes() const { return password_bytes_; }

 private:
  security::ContainerTokenData token_;
  security::MasterKey key_;
  absl::flat_hash_map<std::string, int64_t> names_;
  int64_t next_ = 0;  // the number of the next name added; next_ - kNames is the oldest held
  int64_t password_bytes_ = 0;
};

}  // namespace weft::rm

#endif  // WEFT_RM_LOOP_PROBE_H_
