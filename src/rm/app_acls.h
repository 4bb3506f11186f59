// Copyright Weft authors. Who may see an application's details (YARN's ApplicationACLsManager,
// VIEW_APP), shared by the RM's ClientService and its REST API.
#ifndef WEFT_RM_APP_ACLS_H_
#define WEFT_RM_APP_ACLS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/acl.h"
#include "rm/client_auth.h"
#include "scheduler/config.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

// An app's view ACL from its submission (ApplicationSubmissionContext.view_acl): "" is nobody.
// InvalidArgument naming the bad entry for a malformed one (refused at submission).
absl::StatusOr<AccessControlList> ParseViewAcl(absl::string_view text);

// Whether `caller` may see the details of an app of `owner` in `queue` with `view_acl`: its
// owner, a cluster admin, an administrator of its queue (acl_administer_queue, inherited) or a
// user the view ACL names (by user or group).
bool MayViewApplication(const Caller& caller, absl::string_view owner, absl::string_view queue,
                        const AccessControlList& view_acl,
                        const scheduler::SchedulerConfig& config);

// What a user who may not view the app sees of it, as YARN shows it: the report with its
// diagnostics and AM host replaced by "N/A" and AdaptCont's decisions dropped.
v1::ApplicationReport RedactedReport(v1::ApplicationReport report);

}  // namespace weft::rm

#endif  // WEFT_RM_APP_ACLS_H_
