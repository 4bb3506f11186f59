// Copyright Weft authors.
// What a federation sub-cluster's RM checks in the federation store besides its lease
// (app_lifecycle.h, FederationLease) so that an app runs, and ends, in one sub-cluster only
// (issue 27):
// - a router's forwarded submission is taken only while the app's home record names this
//   sub-cluster: one that reached this RM after the GPG moved the app (it sat in a stopped
//   RM's socket while the sub-cluster was LOST) is refused;
// - an AM that unregisters here has its end written into its home record (finished_ms) before
//   it is told it unregistered, so that the GPG never resubmits an app that ended; an AM whose
//   app is homed elsewhere now (a fenced copy) is refused.
#ifndef WEFT_RM_FEDERATION_FENCING_H_
#define WEFT_RM_FEDERATION_FENCING_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "federation/store/federation_store.h"
#include "rm/federation_identity.h"

namespace weft::rm {

// Whether a router's submission of `app_id` may run at sub-cluster `self`: OK when the app's
// home record names `self`; FailedPrecondition naming the record's home when it names another
// sub-cluster or there is no record (a router writes the home before it forwards); Unavailable
// (or the store's error) when the store cannot say.
absl::Status CheckRoutedSubmissionHome(FederationDirectory& directory, const std::string& app_id,
                                       const std::string& self);

// Writes that `app_id` ended at `self` at `now_ms` (ms since the Unix epoch) into its home
// record's finished_ms, by compare-and-set over the generation read (retried when another
// writer came in between). OK when the app has no home record (submitted to this RM directly)
// or its end is recorded already; FailedPrecondition when its record names another sub-cluster
// (the app moved: this copy is fenced); Unavailable (or the store's error) otherwise.
absl::Status RecordEndAtHome(federation::FederationStateStore& store, const std::string& app_id,
                             const std::string& self, int64_t now_ms);

}  // namespace weft::rm

#endif  // WEFT_RM_FEDERATION_FENCING_H_
