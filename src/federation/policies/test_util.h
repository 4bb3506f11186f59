// Copyright Weft authors. Builders shared by the federation policy tests.
#ifndef WEFT_FEDERATION_POLICIES_TEST_UTIL_H_
#define WEFT_FEDERATION_POLICIES_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "federation/policies/policy.h"

namespace weft::federation::testing {

inline v1::Resource Memory(int64_t mb) {
  v1::Resource r;
  (*r.mutable_values())["memory-mb"] = mb;
  return r;
}

inline v1::SubClusterInfo Info(const std::string& id, int64_t available_mb = 0) {
  v1::SubClusterInfo info;
  info.set_sub_cluster_id(id);
  info.set_state(v1::SC_RUNNING);
  *info.mutable_available() = Memory(available_mb);
  return info;
}

inline v1::ApplicationSubmissionContext AppIn(const std::string& queue,
                                              std::vector<std::string> preferred = {}) {
  v1::ApplicationSubmissionContext app;
  app.set_queue(queue);
  for (auto& p : preferred) app.add_preferred_nodes(p);
  return app;
}

inline v1::ResourceRequest Ask(const std::string& where, int32_t count, int32_t priority = 1,
                               bool relax = true, int64_t allocation_request_id = 0) {
  v1::ResourceRequest rr;
  rr.set_resource_name(where);
  rr.set_num_containers(count);
  rr.set_priority(priority);
  rr.set_relax_locality(relax);
  rr.set_allocation_request_id(allocation_request_id);
  *rr.mutable_capability() = Memory(1024);
  return rr;
}

// A policy context owning its configuration, rng and resolver.
struct TestContext {
  explicit TestContext(std::vector<std::string> ids, uint64_t seed = 1) : rng(seed) {
    config.set_queue("*");
    for (const auto& id : ids) active.push_back(Info(id));
  }
  PolicyContext ctx() {
    PolicyContext c;
    c.config = &config;
    c.active = active;
    c.resolver = &resolver;
    c.rng = &rng;
    if (with_in_flight) c.in_flight = &in_flight;
    return c;
  }
  v1::SubClusterPolicyConfiguration config;
  std::vector<v1::SubClusterInfo> active;
  SubClusterResolver resolver;
  std::mt19937_64 rng;
  bool with_in_flight = false;  // ctx().in_flight points at `in_flight`
  InFlightLoads in_flight;
};

// The `*` count each sub-cluster received for asks at `priority` in `split`.
inline std::map<std::string, int64_t> AnyCounts(
    const std::map<std::string, std::vector<v1::ResourceRequest>>& split, int32_t priority = 1) {
  std::map<std::string, int64_t> counts;
  for (const auto& [id, asks] : split) {
    for (const auto& rr : asks) {
      if (rr.resource_name() == "*" && rr.priority() == priority) counts[id] += rr.num_containers();
    }
  }
  return counts;
}

}  // namespace weft::federation::testing

#endif  // WEFT_FEDERATION_POLICIES_TEST_UTIL_H_
