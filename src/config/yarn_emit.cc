// Writing what was converted as YAML, with yaml-cpp's emitter: Weft's scheduler configuration
// (docs/scheduler.md) and the daemons' settings (weft.yaml's rm and nm sections). Every string
// that came from the input is written by the emitter, which quotes and escapes it (newlines and
// control characters included); comments get the input's text with control characters escaped.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "config/yarn_import_internal.h"
#include "scheduler/registry.h"
#include "yaml-cpp/yaml.h"

namespace weft::config::yarn_internal {
namespace {

// `s` with its control characters (below 0x20, and 0x7f) written as \n, \r, \t or \xNN, so
// that it stays on its comment's line; everything else unchanged.
std::string OneLine(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// A comment on a line of its own (YAML::Comment alone continues the line written last).
void CommentLine(YAML::Emitter& out, const std::string& text) {
  if (out.size() > 0 && out.c_str()[out.size() - 1] != '\n') out << YAML::Newline;
  out << YAML::Comment(text);
}

absl::StatusOr<std::string> Finish(const YAML::Emitter& out, absl::string_view what) {
  if (!out.good())
    return absl::InternalError(
        absl::StrCat("writing the ", what, " YAML failed: ", out.GetLastError()));
  return absl::StrCat(out.c_str(), "\n");
}

// `name: {settings..., children: {...}}` in block style; `name: {}` when it has neither.
void EmitQueue(YAML::Emitter& out, const QueueOut& q) {
  out << YAML::Key << q.name << YAML::Value;
  const bool any = q.weight || q.capacity || q.maximum_capacity || q.user_limit_factor ||
                   q.am_percent || q.min_resources || q.max_resources || q.max_running_apps ||
                   q.max_am_share || q.state || q.ordering || q.acl_submit || q.acl_admin;
  if (!any && q.children.empty()) {
    out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
    return;
  }
  auto number = [&](const char* key, const std::optional<double>& v) {
    if (v) out << YAML::Key << key << YAML::Value << FormatNumber(*v);
  };
  auto word = [&](const char* key, const std::optional<std::string>& v) {
    if (v) out << YAML::Key << key << YAML::Value << *v;
  };
  auto text = [&](const char* key, const std::optional<std::string>& v) {
    if (v) out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << *v;
  };
  out << YAML::BeginMap;
  number("weight", q.weight);
  number("capacity", q.capacity);
  number("maximum-capacity", q.maximum_capacity);
  number("user-limit-factor", q.user_limit_factor);
  number("maximum-am-resource-percent", q.am_percent);
  text("min-resources", q.min_resources);
  text("max-resources", q.max_resources);
  if (q.max_running_apps)
    out << YAML::Key << "max-running-apps" << YAML::Value << *q.max_running_apps;
  number("max-am-share", q.max_am_share);
  word("state", q.state);
  word("ordering", q.ordering);
  text("acl_submit_applications", q.acl_submit);
  text("acl_administer_queue", q.acl_admin);
  if (!q.children.empty()) {
    out << YAML::Key << "children" << YAML::Value << YAML::BeginMap;
    for (const QueueOut& c : q.children) EmitQueue(out, c);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

}  // namespace

absl::StatusOr<std::string> Importer::EmitScheduler() const {
  std::vector<std::string> sources;
  for (const XmlFile& f : files_) sources.push_back(OneLine(f.name));
  YAML::Emitter out;
  out << YAML::Comment(absl::StrCat(
      "Weft scheduler configuration (docs/scheduler.md), converted by `weft config import-yarn`\n"
      "from ",
      absl::StrJoin(sources, " and "),
      ".\n"
      "What could not be converted is listed in unconverted.txt, one line each."));
  out << YAML::BeginMap;
  out << YAML::Key << "policy" << YAML::Value
      << (policy_.empty() ? scheduler::DefaultPolicyName() : policy_);
  if (am_share_default_)
    out << YAML::Key << "queue-max-am-share-default" << YAML::Value
        << FormatNumber(*am_share_default_);
  if (user_max_apps_default_)
    out << YAML::Key << "user-max-apps-default" << YAML::Value << *user_max_apps_default_;
  if (!users_.empty()) {
    out << YAML::Key << "users" << YAML::Value << YAML::BeginMap;
    for (const auto& [user, apps] : users_)
      out << YAML::Key << YAML::DoubleQuoted << user << YAML::Value << YAML::Flow << YAML::BeginMap
          << YAML::Key << "max-running-apps" << YAML::Value << apps << YAML::EndMap;
    out << YAML::EndMap;
  }
  if (node_delay_ || rack_delay_) {
    CommentLine(out, absl::StrCat("YARN counts missed scheduling opportunities (node "
                                  "heartbeats); a Weft pass offers every\nnode at once, so a "
                                  "positive YARN delay is one missed pass (from ",
                                  OneLine(locality_source_), ")."));
    out << YAML::Key << "locality" << YAML::Value << YAML::BeginMap;
    if (node_delay_) out << YAML::Key << "node-locality-delay" << YAML::Value << *node_delay_;
    if (rack_delay_) out << YAML::Key << "rack-locality-delay" << YAML::Value << *rack_delay_;
    out << YAML::EndMap;
  }
  if (preemption_ || starvation_ms_ || preemption_threshold_) {
    out << YAML::Key << "preemption" << YAML::Value << YAML::BeginMap;
    if (preemption_) out << YAML::Key << "enabled" << YAML::Value << *preemption_;
    if (starvation_ms_)
      out << YAML::Key << "starvation-timeout-ms" << YAML::Value << *starvation_ms_;
    if (preemption_threshold_)
      out << YAML::Key << "threshold" << YAML::Value << FormatNumber(*preemption_threshold_);
    out << YAML::EndMap;
  }
  if (have_queues_) {
    if (added_default_queue_)
      CommentLine(out,
                  "root.default: YARN's FairScheduler always has it; apps that name no queue run "
                  "there.");
    out << YAML::Key << "queues" << YAML::Value << YAML::BeginMap;
    EmitQueue(out, root_);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return Finish(out, "scheduler");
}

absl::StatusOr<std::string> Importer::EmitDaemon() const {
  std::string header =
      "Weft daemon settings converted by `weft config import-yarn` from yarn-site.xml. Each\n"
      "key is a flag of the command its section names (rm.port is `weft rm --port`). Start\n"
      "the daemons with them:";
  for (const char* section : {"rm", "nm"}) {
    std::string cmd = absl::StrCat("\n  weft ", section);
    if (absl::string_view(section) == "rm")
      absl::StrAppend(&cmd, " --scheduler-config scheduler.yaml");
    for (const DaemonSetting& d : daemon_)
      if (d.section == section)
        for (const std::string& v : d.values) absl::StrAppend(&cmd, " --", d.key, " ", OneLine(v));
    absl::StrAppend(&header, cmd);
  }
  YAML::Emitter out;
  out << YAML::Comment(header);
  out << YAML::BeginMap;
  for (const char* section : {"rm", "nm"}) {
    out << YAML::Key << section << YAML::Value << YAML::BeginMap;
    if (absl::string_view(section) == "rm")
      out << YAML::Key << "scheduler-config" << YAML::Value << "scheduler.yaml";
    for (const DaemonSetting& d : daemon_) {
      if (d.section != section) continue;
      // An integer as a number, anything else as a double-quoted string.
      auto value = [&](const std::string& v) {
        int64_t number = 0;
        if (absl::SimpleAtoi(v, &number))
          out << v;
        else
          out << YAML::DoubleQuoted << v;
      };
      out << YAML::Key << d.key << YAML::Value;
      if (d.list || d.values.size() > 1) {
        out << YAML::Flow << YAML::BeginSeq;
        for (const std::string& v : d.values) value(v);
        out << YAML::EndSeq;
      } else {
        value(d.values.front());
      }
      out << YAML::Comment(OneLine(d.source));
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return Finish(out, "daemon");
}

}  // namespace weft::config::yarn_internal
