// Copyright Weft authors. Sample data shared by the security module's tests and benchmarks
// (no test framework: bench/token_bench.cc includes it too).
#ifndef WEFT_SECURITY_TEST_UTIL_H_
#define WEFT_SECURITY_TEST_UTIL_H_

#include "security/tokens.h"

namespace weft::security {

// A container token's data as the RM fills it in for a task container.
inline ContainerTokenData SampleContainer() {
  ContainerTokenData d;
  d.container_id = "container_e3_1700000000000_0001_01_000002";
  d.node_id = "node7.example.com:8041";
  d.user = "alice";
  d.resource = "memory-mb=1024,vcores=1";
  d.expiry_ms = 600000;
  d.master_key_id = 1;
  d.rm_epoch = 3;
  d.app_id = "application_1700000000000_0001";
  d.view_acl = "bob ops";  // the NM checks container-log reads against it
  return d;
}

}  // namespace weft::security

#endif  // WEFT_SECURITY_TEST_UTIL_H_
