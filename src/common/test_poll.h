// Copyright Weft authors. For tests only: waiting for what no event announces (a file another
// process writes, a process another one ends, a server's count a client cannot observe).
// Where an event or a fake clock exists, wait on that instead (STYLE.md, "never sleep").
#ifndef WEFT_COMMON_TEST_POLL_H_
#define WEFT_COMMON_TEST_POLL_H_

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace weft {

// Calls `done` until it returns true or `timeout` has passed, sleeping `interval` between
// calls; whether it returned true. It is called once more at the deadline, so a condition that
// holds by then counts even after a slow last sleep.
inline bool PollUntil(const std::function<bool()>& done, absl::Duration timeout,
                      absl::Duration interval = absl::Milliseconds(5)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(interval);
  }
  return done();
}

}  // namespace weft

#endif  // WEFT_COMMON_TEST_POLL_H_
