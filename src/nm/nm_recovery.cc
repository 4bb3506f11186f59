// Copyright Weft authors. NodeManager restart (YARN's NM recovery; docs/nm-recovery.md): what a
// NodeManager does at Start with the containers an earlier one on its work root left behind —
// re-attach to those still running, report those that ended, kill what cannot be recovered —
// and how it keeps the record that makes this possible. Runs in Start (before the loop sees
// the NM) and then on the NodeManager's loop.
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "nm/node_manager.h"
#include "nm/node_manager_internal.h"

namespace weft::nm {

using internal::CompletedStatus;
using internal::kCgroupRoot;
using internal::kFinishedAppRetentionMs;
using internal::kNodeIdKey;
using internal::LimitsFromTokenResource;

namespace {

// True when `pid` is alive and is the process that started at `start_time` (not a reuse of
// its pid). A start time of 0 (unknown) never matches.
bool IsSameProcess(OsEnv* env, int64_t pid, uint64_t start_time) {
  if (pid <= 0 || start_time == 0) return false;
  absl::StatusOr<ProcessInfo> info = ReadProcessInfo(env, static_cast<pid_t>(pid));
  return info.ok() && !info->Ended() && info->start_time == start_time;
}

}  // namespace

void NodeManager::Persist(const std::string& container_id, ContainerRecord& record) {
  NmContainerRecord& stored = record.stored;
  stored.container_id = container_id;
  stored.app_id = record.app_id;
  if (!record.running) {
    stored.state = NmContainerRecord::State::kCompleted;
    stored.exit_status = record.exit_status;
    stored.diagnostics = record.diagnostics;
  }
  stored.stop_exit_status = record.stop_exit_status;
  stored.stop_reason = record.stop_reason;
  if (state_ == nullptr) return;
  if (absl::Status s = state_->PutContainer(stored); !s.ok()) {
    log::Error("nm_state_write_failed",
               {{"node", node_id_}, {"container", container_id}, {"error", s}});
  }
}

void NodeManager::KillRecorded(const NmContainerRecord& record) {
  OsEnv* env = OsEnv::Default();
  const bool monitor_alive = IsSameProcess(env, record.monitor_pid, record.monitor_start_time);
  // The container's process group, when its leader is provably the recorded process: by its
  // start time, or (a launch the NM did not see through) as the live monitor's child named in
  // the monitor's pid file.
  int64_t pid = record.pid;
  bool pid_verified = IsSameProcess(env, pid, record.start_time);
  if (!pid_verified && monitor_alive && !record.state_dir.empty()) {
    absl::StatusOr<std::string> text =
        env->ReadFile(absl::StrCat(record.state_dir, "/", kMonitorPidFile));
    int64_t from_file = 0;
    if (text.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &from_file) &&
        from_file > 0) {
      absl::StatusOr<ProcessInfo> info = ReadProcessInfo(env, static_cast<pid_t>(from_file));
      if (info.ok() && !info->Ended() && info->parent == record.monitor_pid) {
        pid = from_file;
        pid_verified = true;
      }
    }
  }
  if (monitor_alive) KillForCleanup(env, static_cast<pid_t>(record.monitor_pid), SIGKILL);
  if (pid_verified) KillForCleanup(env, -static_cast<pid_t>(pid), SIGKILL);
  // The cgroups hold everything else, even what left the process group.
  if (!record.cgroup_dirs.empty()) {
    if (absl::Status s = DestroyCgroupDirs(record.cgroup_dirs, env); !s.ok()) {
      log::Warn("recorded_cgroup_removal_failed",
                {{"node", node_id_}, {"container", record.container_id}, {"error", s}});
    }
  }
  if (!record.state_dir.empty())
    log::WarnIfError(env->RemoveTree(record.state_dir), "recorded_container_cleanup_failed",
                     {{"node", node_id_}, {"container", record.container_id}, {"what", "state directory"}});
  if (traffic_ != nullptr)
    log::WarnIfError(traffic_->RemoveContainer(record.container_id),
                     "recorded_container_cleanup_failed",
                     {{"node", node_id_}, {"container", record.container_id}, {"what", "traffic class"}});
}

void NodeManager::ResumeStop(const std::string& container_id, int exit_status,
                             absl::string_view reason) {
  ContainerRecord& record = containers_.at(container_id);
  if (!record.stop_exit_status.has_value()) {
    record.stop_exit_status = exit_status;
    record.stop_reason = std::string(reason);
  }
  Persist(container_id, record);
  // No timer from here (Start's thread): the first ReapTick honours the executor's deadline.
  executor_->Stop(container_id, options_.stop_grace_ms);
}

absl::Status NodeManager::RecoverContainers() {
  absl::StatusOr<std::vector<NmContainerRecord>> records = state_->LoadContainers();
  if (!records.ok()) return records.status();
  absl::StatusOr<std::map<std::string, int64_t>> finished = state_->LoadFinishedApps();
  if (!finished.ok()) return finished.status();
  absl::StatusOr<std::optional<std::string>> recorded_node = state_->GetValue(kNodeIdKey);
  if (!recorded_node.ok()) return recorded_node.status();

  // Containers are bound to a node id (their tokens name it; the RM knows them there).
  std::string refusal;
  if (!options_.recover) {
    refusal = "recovery is off (recover=false)";
  } else if (recorded_node->has_value() && **recorded_node != node_id_) {
    refusal = absl::StrCat("the node id changed from ", **recorded_node, " to ", node_id_,
                           " (their tokens name the old one)");
  }
  if (!refusal.empty()) {
    for (const NmContainerRecord& record : *records) {
      log::Warn("container_abandoned",
                {{"node", node_id_}, {"container", record.container_id}, {"reason", refusal}});
      KillRecorded(record);
    }
    if (absl::Status s = state_->Clear(); !s.ok()) return s;
  } else {
    const int64_t now_ms = loop_->NowMs();
    for (const auto& [app_id, finished_ms] : *finished) {
      if (finished_ms >= now_ms - kFinishedAppRetentionMs) finished_apps_.insert(app_id);
    }
    log::WarnIfError(state_->PruneFinishedApps(now_ms - kFinishedAppRetentionMs),
                     "finished_apps_not_pruned", {{"node", node_id_}});
    for (NmContainerRecord& stored : *records) {
      const std::string id = stored.container_id;
      ContainerRecord record;
      record.app_id = stored.app_id;
      record.stop_exit_status = stored.stop_exit_status;
      record.stop_reason = stored.stop_reason;
      record.stored = stored;
      if (stored.state == NmContainerRecord::State::kCompleted) {
        record.running = false;
        record.exit_status = stored.exit_status;
        record.diagnostics = stored.diagnostics;
        if (!stored.acknowledged) {
          unacked_completed_[id] =
              CompletedStatus(id, stored.exit_status, stored.diagnostics, stored);
        }
        containers_.emplace(id, std::move(record));
        continue;
      }
      // Re-attach to a container whose start succeeded; a launch cut short, or one whose
      // application has finished here, is killed.
      std::string lost_reason;
      int lost_status = v1::CONTAINER_EXIT_LOST_NODE;
      if (stored.state == NmContainerRecord::State::kLaunching) {
        lost_reason = "Container lost: the NodeManager restarted while launching it";
      } else if (finished_apps_.contains(stored.app_id)) {
        lost_reason = "Container killed: its application had finished on this node";
        lost_status = v1::CONTAINER_EXIT_KILLED_AFTER_APP_COMPLETION;
      } else if (stored.cgroup_dirs != CgroupDirsOf(id)) {
        lost_reason =
            "Container killed: the NodeManager restarted with other cgroups (use_cgroups or "
            "cgroup_hierarchy changed)";
      } else {
        AdoptSpec adopt;
        adopt.container_id = id;
        adopt.pid = static_cast<pid_t>(stored.pid);
        adopt.monitor_pid = static_cast<pid_t>(stored.monitor_pid);
        adopt.monitor_start_time = stored.monitor_start_time;
        adopt.start_time = stored.start_time;
        adopt.state_dir = stored.state_dir;
        adopt.work_dir = stored.work_dir;
        int64_t network_mbps = 0;
        absl::StatusOr<CgroupLimits> limits =
            LimitsFromTokenResource(stored.resource, &network_mbps);
        adopt.memory_limit_bytes = limits.ok() ? limits->memory_bytes : 0;
        adopt.pids_max = limits.ok() ? internal::PidsLimitFor(
                                           limits->cpu_weight / kCpuSharesPerVcore,
                                           options_.container_pids_per_vcore,
                                           options_.container_pids_max)
                                     : 0;
        adopt.disk_limit_bytes = options_.container_disk_limit_mb << 20;
        adopt.log_limit_bytes = options_.container_log_limit_mb << 20;
        adopt.log_dir = absl::StrCat(options_.work_root, "/logs/", id);
        if (absl::Status s = executor_->Adopt(adopt); !s.ok()) {
          lost_reason = absl::StrCat("Container lost: ", s.message());
        } else {
          record.running = true;
          record.adopted = true;
          // Its devices: held again (its cgroup still denies it the others' nodes).
          RestoreDevices(stored);
          // Its class is made anew below: counting starts again from 0.
          record.network_tx_base = stored.network_tx_bytes;
          containers_.emplace(id, std::move(record));
          log::Info("container_reattached", {{"node", node_id_},
                                             {"container", id},
                                             {"pid", stored.pid},
                                             {"monitor", stored.monitor_pid}});
          // Its bandwidth class: the tree was rebuilt at Start (TrafficController::Create).
          if (traffic_ != nullptr && limits.ok()) {
            std::string cgroup2_path;
            if (cgroups_->version() == "v2") {
              cgroup2_path = cgroups_->Path("memory", id).substr(std::strlen(kCgroupRoot));
            }
            absl::StatusOr<uint32_t> classid =
                traffic_->AddContainer(id, stored.network_mbps, cgroup2_path);
            absl::Status restored = classid.status();
            if (classid.ok()) {
              CgroupLimits with_class = *limits;
              with_class.pids_max = adopt.pids_max;
              with_class.net_cls_classid = *classid;
              restored = cgroups_->Create(id, with_class);  // rewrites the existing group
            }
            if (!restored.ok()) {
              ResumeStop(id, v1::CONTAINER_EXIT_ABORTED,
                         absl::StrCat("Container stopped: its bandwidth class could not be "
                                      "restored after a NodeManager restart: ",
                                      restored.message()));
            }
          }
          // A stop the earlier NM had begun goes on.
          if (stored.stop_exit_status.has_value()) {
            ResumeStop(id, *stored.stop_exit_status, stored.stop_reason);
          }
          continue;
        }
      }
      // Its totals as far as its cgroups (when they are this NM's) still hold them.
      if (cgroups_ != nullptr && stored.cgroup_dirs == CgroupDirsOf(id)) {
        if (absl::StatusOr<CgroupUsage> usage = cgroups_->Usage(id); usage.ok()) {
          record.stored.cpu_time_ms = usage->cpu_ns.value_or(0) / 1'000'000;
          record.stored.peak_memory_bytes = usage->peak_memory_bytes.value_or(0);
        }
      }
      KillRecorded(stored);
      record.running = false;
      record.stored.finished_ms = std::max(loop_->NowMs(), stored.launched_ms);
      internal::AddMemorySample(&record.stored, record.stored.finished_ms,
                                record.stored.usage_sample_rss_bytes);
      record.exit_status = stored.stop_exit_status.value_or(lost_status);
      record.diagnostics = stored.stop_exit_status.has_value()
                               ? absl::StrCat(stored.stop_reason, "; ", lost_reason)
                               : lost_reason;
      log::Warn("container_not_recovered",
                {{"node", node_id_}, {"container", id}, {"reason", lost_reason}});
      unacked_completed_[id] =
          CompletedStatus(id, record.exit_status, record.diagnostics, record.stored);
      auto [it, inserted] = containers_.insert_or_assign(id, std::move(record));
      Persist(id, it->second);
    }
    // Those that ended while no NM watched: their exit files are there already.
    for (const ContainerExit& exit : executor_->Reap()) OnContainerExit(exit);
    // The keys kept for this node id. After the records above: a start or update under them
    // is checked against every container recorded here (its token is spent).
    RestoreKeys();
  }
  if (absl::Status s = state_->SetValue(kNodeIdKey, node_id_); !s.ok()) {
    log::Error("nm_state_write_failed", {{"node", node_id_}, {"error", s}});
  }
  KillOrphans();
  int64_t running = 0;
  for (const auto& [id, record] : containers_) running += record.running ? 1 : 0;
  if (!records->empty()) {
    log::Info("containers_recovered", {{"node", node_id_},
                                       {"recorded", records->size()},
                                       {"running", running},
                                       {"completed_unreported", unacked_completed_.size()}});
  }
  if (options_.metrics != nullptr) UpdateRunningGauge();
  return absl::OkStatus();
}

void NodeManager::KillOrphans() {
  if (cgroups_ == nullptr) return;
  OsEnv* env = OsEnv::Default();
  absl::StatusOr<std::vector<std::string>> groups = cgroups_->ListContainers();
  if (!groups.ok()) {
    log::Warn("orphan_scan_failed", {{"node", node_id_}, {"error", groups.status()}});
    return;
  }
  for (const std::string& name : *groups) {
    auto it = containers_.find(name);
    if (it != containers_.end() && it->second.running) continue;
    // The hierarchy may be shared with other NodeManagers on this host (the default "weft" of
    // every `weft nm`): a group is this NM's only when it names a container recorded here or
    // one with a state directory under this work root, which the executor creates before the
    // group (so a crash at any point of a launch leaves it). Any other group belongs to
    // another NM (whose containers must live on) and is left alone.
    if (it == containers_.end() &&
        !env->PathExists(internal::ContainerStateDir(options_.work_root, name))) {
      log::Info("foreign_cgroup_left", {{"node", node_id_},
                                        {"cgroup", name},
                                        {"why", "no container of this work root"}});
      continue;
    }
    absl::StatusOr<std::vector<pid_t>> pids = cgroups_->Processes(name);
    log::Warn("orphan_cgroup_killed",
              {{"node", node_id_}, {"cgroup", name}, {"processes", pids.ok() ? pids->size() : 0}});
    if (absl::Status s = cgroups_->Destroy(name); !s.ok()) {
      log::Error("orphan_cgroup_removal_failed",
                 {{"node", node_id_}, {"cgroup", name}, {"error", s}});
    }
  }
  // Nothing of the NM's runs in the parent groups themselves; whatever does is an orphan.
  absl::StatusOr<std::vector<pid_t>> strays = cgroups_->Processes("");
  if (strays.ok()) {
    for (pid_t pid : *strays) {
      log::Warn("orphan_process_killed", {{"node", node_id_}, {"pid", pid}});
      KillForCleanup(env, pid, SIGKILL);
    }
  }
}

}  // namespace weft::nm
