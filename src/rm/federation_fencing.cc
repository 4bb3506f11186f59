// Copyright Weft authors.
#include "rm/federation_fencing.h"

#include "absl/strings/str_cat.h"

namespace weft::rm {
namespace {

// Compare-and-set tries of RecordEndAtHome: each conflict is another writer's change (the GPG
// marking the end, a move), re-read and judged again.
constexpr int kEndWriteTries = 4;

// The refusal of a call about `app_id` at sub-cluster `self` while its record names `home`.
absl::Status HomedElsewhere(const std::string& app_id, const std::string& home,
                            const std::string& self, absl::string_view what) {
  return absl::FailedPreconditionError(
      absl::StrCat("application ", app_id, " is homed at sub-cluster '", home, "' now, not at '",
                   self, "' (moved while this sub-cluster was lost): ", what));
}

}  // namespace

absl::Status CheckRoutedSubmissionHome(FederationDirectory& directory, const std::string& app_id,
                                       const std::string& self) {
  absl::StatusOr<v1::ApplicationHomeSubCluster> home = directory.GetApplicationHome(app_id);
  if (absl::IsNotFound(home.status()))
    return absl::FailedPreconditionError(absl::StrCat(
        "application ", app_id, " has no home record in the federation store: a router records "
        "the home before it submits, so this submission is stale (the app was removed since)"));
  if (!home.ok())
    return absl::Status(home.status().code(),
                        absl::StrCat("checking the home of application ", app_id,
                                     " in the federation store: ", home.status().message()));
  if (home->home_sub_cluster_id() != self)
    return HomedElsewhere(app_id, home->home_sub_cluster_id(), self,
                          "this submission is not taken here");
  return absl::OkStatus();
}

absl::Status RecordEndAtHome(federation::FederationStateStore& store, const std::string& app_id,
                             const std::string& self, int64_t now_ms) {
  absl::Status last;
  for (int i = 0; i < kEndWriteTries; ++i) {
    absl::StatusOr<v1::ApplicationHomeSubCluster> home =
        store.GetApplicationHomeSubCluster(app_id);
    if (absl::IsNotFound(home.status())) return absl::OkStatus();
    if (!home.ok())
      return absl::Status(home.status().code(),
                          absl::StrCat("reading the home of application ", app_id,
                                       " to record its end: ", home.status().message()));
    if (home->home_sub_cluster_id() != self)
      return HomedElsewhere(app_id, home->home_sub_cluster_id(), self,
                            "this copy is fenced and its end is not taken");
    if (home->finished_ms() > 0) return absl::OkStatus();
    v1::ApplicationHomeSubCluster ended = *std::move(home);
    ended.set_finished_ms(now_ms);
    last = store.UpdateApplicationHomeSubCluster(ended);
    if (last.ok()) return last;
    if (!absl::IsAborted(last)) break;  // Aborted: another writer came in between
  }
  return absl::Status(absl::IsAborted(last) ? absl::StatusCode::kUnavailable : last.code(),
                      absl::StrCat("recording the end of application ", app_id,
                                   " in its home record: ", last.message()));
}

}  // namespace weft::rm
