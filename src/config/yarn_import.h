// Copyright Weft authors. Converting an Apache Hadoop YARN operator's XML configuration
// (yarn-site.xml plus capacity-scheduler.xml or a FairScheduler allocation file) into Weft's
// scheduler YAML (docs/scheduler.md) and daemon settings: `weft config import-yarn`.
#ifndef WEFT_CONFIG_YARN_IMPORT_H_
#define WEFT_CONFIG_YARN_IMPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace weft::config {

// One input file: the name messages give it (e.g. "capacity-scheduler.xml") and its contents.
struct XmlFile {
  std::string name;
  std::string text;
};

// What to convert. At most one of `capacity_scheduler` and `fair_scheduler`; with neither, a
// `yarn_site` is required and the scheduler YAML holds only what it sets.
struct YarnImportInput {
  // Hadoop Configuration XML: <configuration><property><name/><value/></property>...
  std::optional<XmlFile> yarn_site;
  // Hadoop Configuration XML with yarn.scheduler.capacity.* properties.
  std::optional<XmlFile> capacity_scheduler;
  // A FairScheduler allocation file: <allocations> with <queue> (or <pool>) elements.
  std::optional<XmlFile> fair_scheduler;
};

struct YarnImport {
  // Weft's scheduler configuration: accepted by scheduler::ParseSchedulerConfig and by the
  // policy it names (ImportYarnConfig checks both before returning), for `--scheduler-config`.
  std::string scheduler_yaml;
  // The daemon settings yarn-site.xml sets that Weft has: a YAML mapping with the sections `rm`
  // and `nm`, each key a flag of `weft rm` / `weft nm` (e.g. rm.port = `weft rm --port`).
  std::string daemon_yaml;
  // Every property or element that was not converted (or only in part), one line each, in
  // file order: "<file>:<line>: <what>: <why>", e.g. "capacity-scheduler.xml:17:
  // yarn.scheduler.capacity.maximum-applications=10000: Weft rejects no submission for a
  // count ...". Every property and element of the input is either converted or listed here.
  std::vector<std::string> unconverted;
};

// Converts YARN's configuration. Pure: no I/O. Errors are InvalidArgument naming the file and
// line: malformed XML, an unexpected document element, a malformed value YARN would refuse too
// (a non-numeric capacity, an ACL Weft cannot read, a resource string without vcores), a queue
// name Weft cannot take (outside [A-Za-z0-9_-], or used twice in the tree), or a configuration
// Weft's policy refuses once converted (e.g. capacities not summing to 100).
absl::StatusOr<YarnImport> ImportYarnConfig(const YarnImportInput& input);

}  // namespace weft::config

#endif  // WEFT_CONFIG_YARN_IMPORT_H_
