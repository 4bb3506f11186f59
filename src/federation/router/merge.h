// Copyright Weft authors. How the router combines the sub-clusters' answers into one cluster's
// (YARN's RouterYarnClientUtils): sums of metrics, unions of apps and nodes stamped with their
// sub-cluster, queues merged by path. Pure functions.
#ifndef WEFT_FEDERATION_ROUTER_MERGE_H_
#define WEFT_FEDERATION_ROUTER_MERGE_H_

#include <string>
#include <utility>
#include <vector>

#include "weft/v1/client.pb.h"
#include "weft/v1/common.pb.h"

namespace weft::federation {

// Adds `r` into `*into`, type by type.
void AddResource(v1::Resource* into, const v1::Resource& r);

// Every count and resource summed.
v1::GetClusterMetricsResponse SumClusterMetrics(
    const std::vector<v1::GetClusterMetricsResponse>& parts);

// The apps of every sub-cluster (by sub-cluster id), each stamped with its sub-cluster when the
// RM left it empty, ordered by application id; at most `limit` (0 = all). An app several
// sub-clusters report (the AMRMProxy runs its unmanaged AMs in secondaries under the home
// app's id) is listed once: as its home reports it (per `homes` when it names one of them,
// else the report that is not of an unmanaged AM, else the first), with what each
// secondary's unmanaged AM holds there (allocated, resource-seconds, running, completed and
// pending containers) added, as YARN's router merges an AM with its UAMs.
v1::ListApplicationsResponse MergeApplications(
    const std::vector<std::pair<std::string, v1::ListApplicationsResponse>>& parts, int32_t limit,
    const std::vector<std::pair<std::string, std::string>>& homes = {});

// The nodes of every sub-cluster, stamped with their sub-cluster when the RM left it empty,
// ordered by node id.
v1::ListNodesResponse MergeNodes(
    const std::vector<std::pair<std::string, v1::ListNodesResponse>>& parts);

// Merges `q` into `*into` (the same queue of another sub-cluster, matched by path): used,
// pending, entitlement, limit and app counts summed; children merged by path (a child only one
// side has is copied); the rest (state, weight, capacities) is kept from `*into`, which starts
// as the first sub-cluster's.
void MergeQueue(v1::QueueInfo* into, const v1::QueueInfo& q);

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_ROUTER_MERGE_H_
