// Copyright Weft authors.
#include "rm/app_acls.h"

#include "absl/strings/str_cat.h"

namespace weft::rm {

absl::StatusOr<AccessControlList> ParseViewAcl(absl::string_view text) {
  if (text.empty()) return AccessControlList::Nobody();
  absl::StatusOr<AccessControlList> acl = AccessControlList::Parse(text);
  if (!acl.ok())
    return absl::InvalidArgumentError(absl::StrCat("view ACL: ", acl.status().message()));
  return acl;
}

bool MayViewApplication(const Caller& caller, absl::string_view owner, absl::string_view queue,
                        const AccessControlList& view_acl,
                        const scheduler::SchedulerConfig& config) {
  if (caller.admin || (!caller.user.empty() && caller.user == owner)) return true;
  if (caller.user.empty()) return false;  // anonymous
  return view_acl.IsAllowed(caller.user, caller.groups) ||
         scheduler::QueueAccessAllowed(config, queue, scheduler::QueueAcl::kAdministerQueue,
                                       caller.user, caller.groups);
}

v1::ApplicationReport RedactedReport(v1::ApplicationReport report) {
  report.set_diagnostics("N/A");
  report.set_am_host("N/A");
  report.clear_am_sizing_decisions();
  return report;
}

}  // namespace weft::rm
