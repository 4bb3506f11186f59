// Copyright Weft authors. The YARN importer's internals (yarn_import.h is its API), shared by
// its files, one job each:
//   yarn_xml.cc       reading Hadoop's XML files (lines, errors at a line, <property> lists)
//   yarn_site.cc      yarn-site.xml          -> daemon settings and scheduler settings
//   yarn_capacity.cc  capacity-scheduler.xml -> queues and scheduler settings
//   yarn_fair.cc      fair-scheduler.xml     -> queues and scheduler settings
//   yarn_emit.cc      what was built         -> Weft's scheduler YAML and daemon YAML
//   yarn_import.cc    the order of the steps, the final checks, ImportYarnConfig
// Not for use outside src/config/.
#ifndef WEFT_CONFIG_YARN_IMPORT_INTERNAL_H_
#define WEFT_CONFIG_YARN_IMPORT_INTERNAL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "config/yarn_import.h"
#include "config/yarn_xml.h"
#include "pugixml.hpp"

namespace weft::config::yarn_internal {

// The reason given for every placement rule or queue mapping.
inline constexpr char kNoPlacement[] =
    "Weft has no queue placement rules: an app runs in the queue it names, or in 'default'";

// True for a queue name Weft takes: 1 to 128 of [A-Za-z0-9_-].
bool ValidQueueName(absl::string_view name);

// True for a user name Weft's scheduler configuration takes (scheduler/config.cc): 1 to 256
// bytes, none of them whitespace or a control character.
bool ValidUserName(absl::string_view name);

// `v` with up to 10 significant digits, as a YAML number: 12.5, 100, 0.1.
std::string FormatNumber(double v);

// Parses a finite number.
bool ParseDouble(absl::string_view s, double* v);

// A queue of the scheduler configuration being built.
struct QueueOut {
  std::string name;
  std::string path;  // root.a.a1
  int line = 0;      // where it is declared
  std::optional<double> weight, capacity, maximum_capacity, user_limit_factor, am_percent,
      max_am_share;
  std::optional<std::string> min_resources, max_resources, state, ordering, acl_submit, acl_admin;
  std::optional<int64_t> max_running_apps;
  std::vector<QueueOut> children;
  // CapacityScheduler: the weight given as capacity ("3w"), and the capacity's line.
  std::optional<double> cs_weight;
  int capacity_line = 0;
  // FairScheduler: set on an element that applies to leaves only, kept until the children are
  // known. line 0 = not given.
  int fs_am_share_line = 0;
  std::string fs_am_share_text;
  int fs_policy_line = 0;
  std::string fs_policy;
  bool fs_declared_parent = false;
  bool leaf() const { return children.empty(); }
};

// One key of the daemon YAML: a flag of `weft rm` or `weft nm`.
struct DaemonSetting {
  std::string section;              // "rm" or "nm"
  std::string key;                  // the flag, without "--"
  std::vector<std::string> values;  // several = a repeated flag
  bool list = false;                // a YAML list even with one value
  std::string source;               // "yarn-site.xml:12 yarn.resourcemanager.address"
};

// Something not converted: "<what>: <why>" at a line of files_[file].
struct Note {
  int file = 0;
  int line = 0;
  std::string text;
};

// One conversion; not reusable. Files are referred to by their index in files_.
class Importer {
 public:
  explicit Importer(const YarnImportInput& in) : in_(in) {}

  absl::StatusOr<YarnImport> Run();

 private:
  // Lists `what` as not converted because of `why`.
  void NoteAt(int file, int line, absl::string_view what, absl::string_view why) {
    notes_.push_back({file, line, absl::StrCat(what, ": ", why)});
  }
  void NoteProperty(int file, Property& p, absl::string_view why) {
    p.handled = true;
    NoteAt(file, p.line, absl::StrCat(p.name, "=", p.value), why);
  }
  const XmlFile& File(int file) const { return files_[file]; }
  absl::Status PropertyError(int file, const Property& p, absl::string_view what) {
    return ErrorAt(File(file), p.line, absl::StrCat(p.name, "=", p.value, ": ", what));
  }
  void AddDaemon(std::string section, std::string key, std::vector<std::string> values, bool list,
                 std::string source);

  // yarn_import.cc.
  absl::StatusOr<std::vector<Property>> ReadConfiguration(int file);
  absl::Status CheckUniqueNames(const QueueOut& q, std::map<std::string, const QueueOut*>* seen,
                                int file);
  // yarn_site.cc.
  absl::Status ConvertYarnSite(int file, std::vector<Property>& props);
  // yarn_capacity.cc.
  absl::Status ConvertCapacity(int file, std::vector<Property>& props);
  absl::Status BuildCsQueue(int file, std::map<std::string, Property*>& by_name, QueueOut* q,
                            std::set<std::string>* names);
  absl::Status CsQueueKey(int file, QueueOut& q, const std::string& key, Property& p);
  // yarn_fair.cc.
  absl::Status ConvertFair(int file);
  absl::Status FsQueue(int file, const pugi::xml_node& n, QueueOut* q);
  absl::StatusOr<std::optional<std::string>> FsResource(int file, const pugi::xml_node& n,
                                                        absl::string_view where, bool is_max);
  void FsPlacement(int file, const pugi::xml_node& n);
  // yarn_emit.cc. Internal when the emitter fails (a bug).
  absl::StatusOr<std::string> EmitScheduler() const;
  absl::StatusOr<std::string> EmitDaemon() const;

  const YarnImportInput& in_;
  std::vector<XmlFile> files_;  // yarn-site first when given, then the scheduler's file
  std::vector<Note> notes_;
  std::vector<DaemonSetting> daemon_;

  // The scheduler configuration being built.
  std::string policy_;
  std::optional<int> node_delay_, rack_delay_;
  std::string locality_source_;  // "<file>:<line>" of the last locality setting converted
  std::optional<bool> preemption_;
  std::optional<int64_t> starvation_ms_;
  std::optional<double> preemption_threshold_;
  std::optional<double> am_share_default_;
  std::optional<int64_t> user_max_apps_default_;
  std::map<std::string, int64_t> users_;  // user -> max running apps
  QueueOut root_;
  bool have_queues_ = false;
  bool added_default_queue_ = false;
  // FairScheduler's placement policy being present makes some yarn-site properties moot.
  bool fs_has_placement_policy_ = false;
};

}  // namespace weft::config::yarn_internal

#endif  // WEFT_CONFIG_YARN_IMPORT_INTERNAL_H_
