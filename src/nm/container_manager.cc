// Copyright Weft authors. The NodeManager's ContainerService and its containers (YARN's
// ContainerManagerImpl): starting a container from a verified token, stopping it, its status,
// reaping exits and cleaning up finished applications. Runs on the NodeManager's loop.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "nm/node_manager.h"
#include "nm/node_manager_internal.h"
#include "nm/spawn_child.h"
#include "security/tokens.h"

namespace weft::nm {

using internal::CompletedStatus;
using internal::kCgroupRoot;
using internal::kReapIntervalMs;
using internal::LimitsFromTokenResource;

namespace {

// When the monitor of the container whose state directory is `state_dir` wrote its exit file,
// ms since the epoch; nullopt when there is none (or it cannot be read).
std::optional<int64_t> ExitFileTimeMs(const std::string& state_dir) {
  if (state_dir.empty()) return std::nullopt;
  struct stat st;
  if (::stat(absl::StrCat(state_dir, "/", kMonitorExitFile).c_str(), &st) != 0) return std::nullopt;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

}  // namespace

// ---- ContainerService.

void NodeManager::DoStartContainers(const v1::StartContainersRequest& request,
                                    v1::StartContainersResponse* response) {
  for (const v1::StartContainerRequest& one : request.requests()) {
    std::string container_id;
    absl::Status status = StartOne(one, &container_id);
    CountLaunch(status.ok());
    if (status.ok()) {
      response->add_succeeded(container_id);
    } else {
      v1::ContainerFailure* failure = response->add_failed();
      failure->set_container_id(container_id);
      failure->set_message(status.ToString());
      failure->set_code(static_cast<int32_t>(status.code()));
    }
  }
}

absl::Status NodeManager::StartOne(const v1::StartContainerRequest& request,
                                   std::string* container_id) {
  if (shutting_down_) return absl::UnavailableError("the NodeManager is shutting down");
  if (rm_shutdown_) {
    return absl::FailedPreconditionError("this node was shut down by the ResourceManager");
  }
  if (!request.has_container_token() || request.container_token().identifier().empty()) {
    return absl::InvalidArgumentError("missing container token");
  }
  // Only to name the container in a failure; nothing is trusted before VerifyStart.
  if (absl::StatusOr<security::ContainerTokenData> unverified =
          security::DecodeContainerToken(request.container_token().identifier());
      unverified.ok()) {
    *container_id = unverified->container_id;
  }
  const auto& command = request.launch_context().command();
  if (command.empty() || absl::StripAsciiWhitespace(command[0]).empty()) {
    return absl::InvalidArgumentError("empty command in the launch context");
  }

  // A restarted NM serves before its registration has brought the RM's container keys: a
  // start now is not refused for good (that would fail an AM's attempt) but asked again later.
  if (absl::Status s = CheckKeysFor(request.container_token()); !s.ok()) return s;
  absl::StatusOr<security::ContainerTokenData> token = verifier_.VerifyStart(
      security::Token{request.container_token().identifier(), request.container_token().password()},
      node_id_, loop_->NowMs());
  if (!token.ok()) return token.status();
  *container_id = token->container_id;
  const std::string& id = token->container_id;
  if (absl::Status s = ValidateContainerId(id); !s.ok()) return s;
  if (token->app_id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("container token for ", id, " names no application"));
  }
  if (absl::Status s = ValidateContainerId(token->app_id);
      !s.ok() || token->app_id == "logs" || token->app_id == "log-meta") {
    return absl::InvalidArgumentError(
        absl::StrCat("container token for ", id, ": bad application id '", token->app_id, "'"));
  }
  if (containers_.contains(id)) {
    return absl::AlreadyExistsError(absl::StrCat("container ", id, " was already started here"));
  }
  if (finished_apps_.contains(token->app_id) || cleaning_apps_.contains(token->app_id)) {
    return absl::FailedPreconditionError(
        absl::StrCat("application ", token->app_id, " has finished on this node"));
  }
  // Who may read its logs here and where they are aggregated (nm/log_aggregator.h).
  if (absl::Status s = log_aggregator_->RecordApp(token->app_id, {token->user, token->view_acl});
      !s.ok())
    log::Warn("log_owner_not_recorded", {{"node", node_id_}, {"container", id}, {"error", s}});
  int64_t network_mbps = 0;
  absl::StatusOr<CgroupLimits> limits = LimitsFromTokenResource(token->resource, &network_mbps);
  if (!limits.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("container token for ", id, ": ", limits.status().message()));
  }

  LaunchSpec spec;
  spec.container_id = id;
  if (command.size() == 1) {
    spec.argv = ShellCommand(command[0]);
  } else {
    spec.argv.assign(command.begin(), command.end());
  }
  for (const auto& [name, value] : request.launch_context().environment()) {
    spec.env[name] = value;
  }
  // The cluster CA, for an AM to verify the RM and the NMs it talks to.
  if (!ca_file_.empty()) spec.env["WEFT_TLS_CA_FILE"] = ca_file_;
  spec.work_dir = absl::StrCat(options_.work_root, "/", token->app_id, "/", id);
  spec.log_dir = absl::StrCat(options_.work_root, "/logs/", id);
  spec.limits = *limits;
  spec.limits.pids_max =
      internal::PidsLimitFor(limits->cpu_weight / kCpuSharesPerVcore,
                             options_.container_pids_per_vcore, options_.container_pids_max);
  spec.disk_limit_bytes = options_.container_disk_limit_mb << 20;
  spec.log_limit_bytes = options_.container_log_limit_mb << 20;
  spec.deny_user_namespaces =
      !options_.container_user_namespaces && spawn_internal::kUserNamespaceFilterSupported;
  spec.user = token->user;
  spec.app_dir = absl::StrCat(options_.work_root, "/", token->app_id);
  if (options_.run_as == ContainerRunAs::kAppUser) {
    absl::StatusOr<security::UnixUser> as =
        ResolveContainerUser(options_.user_policy, token->user, geteuid());
    if (!as.ok()) {
      log::Warn("container_refused", {{"container", id}, {"user", token->user},
                                      {"reason", as.status().message()}});
      return as.status();
    }
    // Only a switch to another user needs one (and root); an NM's own user's containers run
    // as the NM does (`weft dev` as an ordinary user).
    if (as->uid != geteuid()) spec.run_as = SpawnOptions::RunAs{as->uid, as->gid, as->gids};
  }
  for (const auto& [name, value] : request.launch_context().tokens()) spec.tokens[name] = value;
  // The devices its token grants (issue 32): checked against the node's and held from here;
  // released below when the start fails.
  if (absl::Status s = AssignDevices(*token, &spec); !s.ok()) return s;
  if (amrm_proxy_ != nullptr) {
    if (absl::Status s = InterceptAmLaunch(*token, &spec); !s.ok()) {
      device_ledger_.Release(id);
      return s;
    }
  }
  if (traffic_ != nullptr) {
    // Shaped from its first packet: the class and rule exist before the process does. A
    // failure fails the start rather than running the container unshaped.
    std::string cgroup2_path;
    if (cgroups_->version() == "v2") {
      cgroup2_path = cgroups_->Path("memory", id).substr(std::strlen(kCgroupRoot));
    }
    absl::StatusOr<uint32_t> classid = traffic_->AddContainer(id, network_mbps, cgroup2_path);
    if (!classid.ok()) {
      if (amrm_proxy_ != nullptr) amrm_proxy_->RemoveAttemptOfContainer(id);
      device_ledger_.Release(id);
      return classid.status();
    }
    spec.limits.net_cls_classid = *classid;
  }
  // Durable before the process exists (docs/nm-recovery.md): the monitor is recorded while it
  // waits to fork the container, so a crash at any point leaves a record of what to kill.
  OsEnv* env = OsEnv::Default();
  ContainerRecord record;
  record.app_id = token->app_id;
  NmContainerRecord& stored = record.stored;
  stored.container_id = id;
  stored.app_id = token->app_id;
  stored.user = token->user;
  stored.resource = token->resource;
  stored.network_mbps = network_mbps;
  stored.version = token->version;
  stored.allocation_tags = token->allocation_tags;  // reported at registration (RM recovery)
  stored.devices = token->devices;  // restored and reported again by a restarted NM
  stored.state = NmContainerRecord::State::kLaunching;
  stored.state_dir = internal::ContainerStateDir(options_.work_root, id);
  stored.work_dir = spec.work_dir;
  stored.cgroup_dirs = CgroupDirsOf(id);
  spec.state_dir = stored.state_dir;
  spec.on_monitor_started = [this, env, &stored](pid_t monitor) -> absl::Status {
    absl::StatusOr<ProcessInfo> info = ReadProcessInfo(env, monitor);
    if (!info.ok()) return info.status();
    stored.monitor_pid = monitor;
    stored.monitor_start_time = info->start_time;
    return state_->PutContainer(stored);
  };
  absl::StatusOr<pid_t> pid = executor_->Launch(spec);
  if (!pid.ok()) {
    if (amrm_proxy_ != nullptr) amrm_proxy_->RemoveAttemptOfContainer(id);
    device_ledger_.Release(id);
    // Undone as far as it goes; the launch's own error is what the caller hears.
    if (traffic_ != nullptr)
      log::WarnIfError(traffic_->RemoveContainer(id), "container_undo_failed",
                       {{"container", id}, {"what", "traffic class"}});
    if (stored.monitor_pid != 0)
      log::WarnIfError(state_->RemoveContainer(id), "container_undo_failed",
                       {{"container", id}, {"what", "state store record"}});
    log::WarnIfError(env->RemoveTree(stored.state_dir), "container_undo_failed",
                     {{"container", id}, {"what", "state directory"}});
    return pid.status();
  }
  stored.pid = *pid;
  if (absl::StatusOr<ProcessInfo> info = ReadProcessInfo(env, *pid); info.ok()) {
    stored.start_time = info->start_time;
  }
  stored.state = NmContainerRecord::State::kRunning;
  // Its accounting starts here: the process exists. Sampled from the next reap tick on.
  stored.launched_ms = loop_->NowMs();
  stored.usage_sample_ms = stored.launched_ms;
  record.next_usage_persist_ms = stored.launched_ms + internal::kUsagePersistIntervalMs;
  auto [it, inserted] = containers_.emplace(id, std::move(record));
  WatchExit(id);
  // Should this fail, the record still says "launching": a restarted NM kills the container
  // rather than leaving it unknown.
  Persist(id, it->second);
  return absl::OkStatus();
}

absl::Status NodeManager::InterceptAmLaunch(const security::ContainerTokenData& token,
                                            LaunchSpec* spec) {
  auto amrm = spec->tokens.find("amrm");
  auto attempt = spec->env.find("WEFT_APP_ATTEMPT_ID");
  auto rm = spec->env.find("WEFT_RM_ADDRESS");
  if (amrm == spec->tokens.end() || attempt == spec->env.end() || rm == spec->env.end()) {
    return absl::OkStatus();
  }
  v1::Token real;
  if (!real.ParseFromString(amrm->second) ||
      !security::DecodeAmRmToken(real.identifier()).ok()) {
    return absl::OkStatus();  // not an RM's AMRM token: not an AM launch by the RM
  }
  amrmproxy::AttemptContext context;
  context.application_id = token.app_id;
  context.attempt_id = attempt->second;
  context.user = token.user;
  context.am_container_id = token.container_id;
  context.home_rm_address = rm->second;
  context.amrm_token = real;
  absl::StatusOr<v1::Token> proxy_token = amrm_proxy_->AddAttempt(context);
  if (!proxy_token.ok()) return proxy_token.status();
  amrm->second = proxy_token->SerializeAsString();
  rm->second = amrm_proxy_->address();
  return absl::OkStatus();
}

absl::Status NodeManager::CheckKeysFor(const v1::Token& token) {
  if (verifier_.key_count() == 0) {
    return absl::UnavailableError(
        "this NodeManager has no container master keys yet (it has not registered with the "
        "ResourceManager since it started); try again");
  }
  if (keys_heard_) return absl::OkStatus();
  absl::StatusOr<security::ContainerTokenData> unverified =
      security::DecodeContainerToken(token.identifier());
  if (!unverified.ok() || verifier_.HoldsKey(unverified->master_key_id, loop_->NowMs()))
    return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "this NodeManager restarted with the container master keys it kept, not key ",
      unverified->master_key_id, ", and has not registered with the ResourceManager since; "
      "try again"));
}

std::vector<std::string> NodeManager::CgroupDirsOf(const std::string& container_id) const {
  std::vector<std::string> dirs;
  if (cgroups_ == nullptr) return dirs;
  for (const std::string& controller : cgroups_->controllers()) {
    std::string dir = cgroups_->Path(controller, container_id);
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(std::move(dir));
  }
  return dirs;
}

absl::flat_hash_map<std::string, absl::Status> NodeManager::AuthorizeControl(
    const google::protobuf::RepeatedPtrField<v1::Token>& tokens) {
  absl::flat_hash_map<std::string, absl::Status> verdicts;
  for (const v1::Token& t : tokens) {
    absl::StatusOr<security::ContainerTokenData> data = verifier_.VerifyControl(
        security::Token{t.identifier(), t.password()}, node_id_, loop_->NowMs());
    if (data.ok()) {
      verdicts[data->container_id] = absl::OkStatus();
    } else if (auto unverified = security::DecodeContainerToken(t.identifier());
               unverified.ok()) {
      verdicts.try_emplace(unverified->container_id, data.status());
    }
  }
  return verdicts;
}

absl::Status NodeManager::Authorized(
    const absl::flat_hash_map<std::string, absl::Status>& verdicts, const std::string& id) {
  if (id.empty()) return absl::InvalidArgumentError("empty container id");
  auto v = verdicts.find(id);
  if (v == verdicts.end()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "no container token for ", id, ": stop and status calls need the container's token"));
  }
  if (!v->second.ok()) return v->second;
  auto it = containers_.find(id);
  if (it == containers_.end() && !unacked_completed_.contains(id)) {
    return absl::NotFoundError(absl::StrCat("container ", id, " is not known here"));
  }
  return absl::OkStatus();
}

void NodeManager::DoStopContainers(const v1::StopContainersRequest& request,
                                   v1::StopContainersResponse* response) {
  const absl::flat_hash_map<std::string, absl::Status> verdicts =
      AuthorizeControl(request.container_tokens());
  for (const std::string& id : request.container_ids()) {
    if (absl::Status s = Authorized(verdicts, id); !s.ok()) {
      v1::ContainerFailure* failure = response->add_failed();
      failure->set_container_id(id);
      failure->set_message(s.ToString());
      failure->set_code(static_cast<int32_t>(s.code()));
      if (s.code() == absl::StatusCode::kPermissionDenied) {
        log::Warn("control_refused", {{"call", "StopContainers"}, {"container", id}, {"error", s}});
      }
      continue;
    }
    auto it = containers_.find(id);
    if (it != containers_.end() && it->second.running) {
      StopContainer(id, v1::CONTAINER_EXIT_KILLED_BY_AM,
                    "Container stopped by a StopContainers request");
    }
    response->add_succeeded(id);  // stopping an already completed container is a no-op
  }
}

void NodeManager::DoGetContainerStatuses(const v1::GetContainerStatusesRequest& request,
                                         v1::GetContainerStatusesResponse* response) {
  const absl::flat_hash_map<std::string, absl::Status> verdicts =
      AuthorizeControl(request.container_tokens());
  for (const std::string& id : request.container_ids()) {
    if (absl::Status s = Authorized(verdicts, id); !s.ok()) {
      v1::ContainerFailure* failure = response->add_failed();
      failure->set_container_id(id);
      failure->set_message(s.ToString());
      failure->set_code(static_cast<int32_t>(s.code()));
      continue;
    }
    if (auto it = containers_.find(id); it != containers_.end()) {
      *response->add_statuses() = StatusOf(id, it->second);
    } else {
      *response->add_statuses() = unacked_completed_.at(id);
    }
  }
}

void NodeManager::DoUpdateContainers(const v1::UpdateContainersRequest& request,
                                     v1::UpdateContainersResponse* response) {
  for (const v1::Token& token : request.container_tokens()) {
    std::string container_id;
    absl::Status status = UpdateOne(token, "UpdateContainers", &container_id);
    if (status.ok()) {
      response->add_succeeded(container_id);
      continue;
    }
    v1::ContainerFailure* failure = response->add_failed();
    failure->set_container_id(container_id);
    failure->set_message(status.ToString());
    failure->set_code(static_cast<int32_t>(status.code()));
    log::Warn("container_update_refused", {{"node", node_id_},
                                           {"container", container_id},
                                           {"source", "UpdateContainers"},
                                           {"error", status}});
  }
}

absl::Status NodeManager::UpdateOne(const v1::Token& token_proto, absl::string_view source,
                                    std::string* container_id) {
  if (shutting_down_) return absl::UnavailableError("the NodeManager is shutting down");
  if (rm_shutdown_) {
    return absl::FailedPreconditionError("this node was shut down by the ResourceManager");
  }
  if (token_proto.identifier().empty()) {
    return absl::InvalidArgumentError("missing container token");
  }
  // Only to name the container in a failure; nothing is trusted before VerifyUpdate.
  if (absl::StatusOr<security::ContainerTokenData> unverified =
          security::DecodeContainerToken(token_proto.identifier());
      unverified.ok()) {
    *container_id = unverified->container_id;
  }
  if (absl::Status s = CheckKeysFor(token_proto); !s.ok()) return s;
  absl::StatusOr<security::ContainerTokenData> token = verifier_.VerifyUpdate(
      security::Token{token_proto.identifier(), token_proto.password()}, node_id_, loop_->NowMs());
  if (!token.ok()) return token.status();
  *container_id = token->container_id;
  const std::string& id = token->container_id;
  auto it = containers_.find(id);
  if (it == containers_.end() || !it->second.running) {
    return absl::NotFoundError(absl::StrCat("container ", id, " is not running on this node"));
  }
  ContainerRecord& record = it->second;
  if (token->app_id != record.app_id || token->user != record.stored.user) {
    return absl::PermissionDeniedError(
        absl::StrCat("container token for ", id, ": issued for application ", token->app_id,
                     " user ", token->user, ", the container runs for application ", record.app_id,
                     " user ", record.stored.user));
  }
  if (record.stop_exit_status.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("container ", id, " is stopping"));
  }
  if (token->version <= record.stored.version) {
    return absl::FailedPreconditionError(
        absl::StrCat("container token for ", id, ": version ", token->version,
                     " is not above the container's version ", record.stored.version,
                     " (a replayed or stale update); nothing changed"));
  }
  int64_t network_mbps = 0;
  absl::StatusOr<CgroupLimits> limits = LimitsFromTokenResource(token->resource, &network_mbps);
  if (!limits.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("container token for ", id, ": ", limits.status().message()));
  }
  limits->pids_max =
      internal::PidsLimitFor(limits->cpu_weight / kCpuSharesPerVcore,
                             options_.container_pids_per_vcore, options_.container_pids_max);
  // The rate is checked before anything changes (ChangeRate checks it again).
  const bool rate_changes = traffic_ != nullptr && network_mbps != record.stored.network_mbps;
  if (rate_changes && network_mbps > traffic_->containers_total_mbps()) {
    return absl::InvalidArgumentError(absl::StrCat("container token for ", id, ": network-mbps ",
                                                   network_mbps,
                                                   " is above this node's containers' total of ",
                                                   traffic_->containers_total_mbps(), " Mbit/s"));
  }
  if (absl::Status s = executor_->UpdateLimits(id, *limits); !s.ok()) {
    if (!absl::IsResourceExhausted(s)) return s;
    // The kernel could not bring it under the smaller limit: it is over what the RM now
    // grants it, and is killed as a container over its memory limit is.
    const std::string why =
        absl::StrCat("Container killed: its memory was decreased to ", limits->memory_bytes >> 20,
                     " MB (resource update to version ", token->version, ", from ", source,
                     ") while it used more, which the kernel could not reclaim: ", s.message());
    log::Warn("container_update_killed", {{"node", node_id_},
                                          {"container", id},
                                          {"version", static_cast<int64_t>(token->version)},
                                          {"source", source},
                                          {"error", s}});
    StopContainer(id, v1::CONTAINER_EXIT_KILLED_EXCEEDED_PMEM, why);
    return absl::ResourceExhaustedError(why);
  }
  if (rate_changes) {
    if (absl::Status s = traffic_->ChangeRate(id, network_mbps); !s.ok()) {
      // Back to the limits it had, as far as that goes: the update failed as a whole.
      int64_t unused = 0;
      absl::StatusOr<CgroupLimits> before =
          LimitsFromTokenResource(record.stored.resource, &unused);
      if (before.ok()) {
        before->pids_max =
            internal::PidsLimitFor(before->cpu_weight / kCpuSharesPerVcore,
                                   options_.container_pids_per_vcore, options_.container_pids_max);
        log::WarnIfError(executor_->UpdateLimits(id, *before), "container_update_undo_failed",
                         {{"container", id}, {"what", "cgroup limits"}});
      }
      return s;
    }
  }
  record.stored.resource = token->resource;
  record.stored.network_mbps = network_mbps;
  record.stored.version = token->version;
  Persist(id, record);
  log::Info("container_updated", {{"node", node_id_},
                                  {"container", id},
                                  {"version", static_cast<int64_t>(token->version)},
                                  {"resource", token->resource},
                                  {"source", source}});
  return absl::OkStatus();
}

// ---- Containers.

v1::ContainerStatus NodeManager::StatusOf(const std::string& container_id,
                                          const ContainerRecord& record) {
  if (!record.running) {
    return CompletedStatus(container_id, record.exit_status, record.diagnostics, record.stored);
  }
  v1::ContainerStatus status;
  status.set_container_id(container_id);
  status.set_state(v1::CONTAINER_RUNNING);
  status.set_exit_status(v1::CONTAINER_EXIT_INVALID);
  if (cgroups_ != nullptr) {
    absl::StatusOr<CgroupUsage> usage = cgroups_->Usage(container_id);
    if (usage.ok()) {
      if (usage->rss_bytes.has_value()) {
        status.mutable_usage()->set_memory_rss_bytes(*usage->rss_bytes);
      }
      if (usage->cpu_ns.has_value()) {
        status.mutable_usage()->set_cpu_time_ms(*usage->cpu_ns / 1'000'000);
      }
    }
  }
  for (v1::DeviceAssignment& held : device_ledger_.Assignments(container_id))
    *status.add_devices() = std::move(held);
  if (auto net = net_stats_.find(container_id); net != net_stats_.end()) {
    status.mutable_usage()->set_network_tx_bytes(record.network_tx_base + net->second.tx_bytes);
    status.mutable_usage()->set_network_tx_rate_mbps(
        static_cast<int64_t>(std::llround(net->second.tx_rate_mbps)));
  }
  // Its memory over time so far (as of its last sample).
  status.mutable_usage()->set_memory_mb_seconds(
      internal::ReportedMbSeconds(record.stored.memory_mb_seconds));
  return status;
}

void NodeManager::SampleUsage() {
  if (cgroups_ == nullptr || !cgroups_->HasController("memory")) return;
  const int64_t now = loop_->NowMs();
  for (auto& [id, record] : containers_) {
    if (!record.running || now < record.next_usage_sample_ms) continue;
    record.next_usage_sample_ms = now + internal::kUsageSampleIntervalMs;
    absl::StatusOr<CgroupUsage> usage = cgroups_->Usage(id);
    if (!usage.ok() || !usage->rss_bytes.has_value()) continue;  // e.g. it is ending
    internal::AddMemorySample(&record.stored, now, *usage->rss_bytes);
    if (now >= record.next_usage_persist_ms) {
      record.next_usage_persist_ms = now + internal::kUsagePersistIntervalMs;
      Persist(id, record);
    }
  }
}

void NodeManager::RefreshNetworkStats() {
  if (traffic_ == nullptr) return;
  absl::StatusOr<std::map<std::string, ContainerNetStats>> stats =
      traffic_->ReadStats(OsEnv::Default()->NowMs());
  if (!stats.ok()) {
    log::Warn("network_stats_unreadable", {{"node", node_id_}, {"error", stats.status()}});
    return;
  }
  net_stats_ = *std::move(stats);
  for (const auto& [id, net] : net_stats_) {
    if (auto it = containers_.find(id); it != containers_.end() && it->second.running)
      it->second.stored.network_tx_bytes = it->second.network_tx_base + net.tx_bytes;
  }
  if (options_.metrics == nullptr) return;
  for (const auto& [id, net] : net_stats_) {
    options_.metrics
        ->GetCounter("weft_nm_container_network_transmit_bytes_total",
                     "Bytes a running container sent (its HTB class counter).", {{"container", id}})
        ->IncrementTo(static_cast<double>(net.tx_bytes));
    options_.metrics
        ->GetGauge("weft_nm_container_network_transmit_rate_mbit",
                   "A running container's send rate between the last two readings, Mbit/s.",
                   {{"container", id}})
        ->Set(net.tx_rate_mbps);
  }
}

void NodeManager::CountLaunch(bool ok) {
  if (options_.metrics == nullptr) return;
  if (ok) {
    options_.metrics->GetCounter("weft_nm_container_launches_total", "Containers started.")
        ->Increment();
  } else {
    options_.metrics
        ->GetCounter("weft_nm_container_launch_failures_total",
                     "Container starts refused or failed (bad token, replay, launch error).")
        ->Increment();
  }
  UpdateRunningGauge();
}

void NodeManager::CountExit(const std::string& container_id, int exit_status) {
  if (options_.metrics == nullptr) return;
  const char* outcome = exit_status == 0 ? "succeeded" : exit_status > 0 ? "failed" : "killed";
  options_.metrics
      ->GetCounter("weft_nm_containers_completed_total",
                   "Containers that ended: succeeded (exit 0), failed (non-zero exit) or killed "
                   "(stopped, over their memory limit, or their app ended).",
                   {{"outcome", outcome}})
      ->Increment();
  options_.metrics->Remove("weft_nm_container_network_transmit_bytes_total",
                           {{"container", container_id}});
  options_.metrics->Remove("weft_nm_container_network_transmit_rate_mbit",
                           {{"container", container_id}});
  UpdateRunningGauge();
}

void NodeManager::CountHeartbeat(bool ok) {
  if (options_.metrics == nullptr) return;
  options_.metrics
      ->GetCounter("weft_nm_heartbeats_total", "Heartbeats to the RM by result.",
                   {{"result", ok ? "ok" : "error"}})
      ->Increment();
}

void NodeManager::UpdateRunningGauge() {
  int64_t running = 0;
  for (const auto& [id, record] : containers_) running += record.running ? 1 : 0;
  options_.metrics->GetGauge("weft_nm_containers_running", "Containers running on this node.")
      ->Set(static_cast<double>(running));
}

void NodeManager::StopContainer(const std::string& container_id, int exit_status,
                                absl::string_view reason) {
  auto it = containers_.find(container_id);
  if (it == containers_.end() || !it->second.running) return;
  if (!it->second.stop_exit_status.has_value()) {
    it->second.stop_exit_status = exit_status;
    it->second.stop_reason = std::string(reason);
    Persist(container_id, it->second);  // a restarted NM goes on stopping it
  }
  executor_->Stop(container_id, options_.stop_grace_ms);
  // Reap soon enough to send the SIGKILL on time when the grace is shorter than a tick.
  if (options_.stop_grace_ms < kReapIntervalMs) {
    if (reap_timer_.has_value()) loop_->Cancel(*reap_timer_);
    reap_timer_ = loop_->Schedule(options_.stop_grace_ms, [this] { ReapTick(); });
  }
}

void NodeManager::StopAllContainers(int exit_status, absl::string_view reason) {
  std::vector<std::string> running;
  for (const auto& [id, record] : containers_) {
    if (record.running) running.push_back(id);
  }
  for (const std::string& id : running) StopContainer(id, exit_status, reason);
}

void NodeManager::ReapTick() {
  // One chain of ticks: a tick run early (posted, or scheduled by StopContainer) replaces the
  // pending one.
  if (reap_timer_.has_value()) loop_->Cancel(*reap_timer_);
  reap_timer_.reset();
  if (executor_ == nullptr) return;
  for (const ContainerExit& exit : executor_->Reap()) OnContainerExit(exit);
  SampleUsage();
  if (shutting_down_ && std::none_of(containers_.begin(), containers_.end(),
                                     [](const auto& e) { return e.second.running; })) {
    FinishShutdownOnLoop();
    return;
  }
  int64_t delay_ms = kReapIntervalMs;
  if (int64_t deadline = executor_->NextDeadlineMs(); deadline >= 0) {
    delay_ms = std::clamp<int64_t>(deadline - OsEnv::Default()->NowMs(), 0, kReapIntervalMs);
  }
  reap_timer_ = loop_->Schedule(delay_ms, [this] { ReapTick(); });
}

void NodeManager::WatchExit(const std::string& container_id) {
  if (exit_watcher_ == nullptr || executor_ == nullptr) return;
  absl::StatusOr<pid_t> monitor = executor_->MonitorPid(container_id);
  if (!monitor.ok() || *monitor <= 0) return;  // not monitored: found by the reap tick
  absl::Status s = exit_watcher_->Watch(*monitor);
  // NotFound: it ended already, and the reap finds it.
  if (absl::IsNotFound(s)) {
    loop_->Post([this] { ReapTick(); });
  } else if (!s.ok()) {
    log::Warn("exit_watch_failed", {{"node", node_id_}, {"container", container_id}, {"error", s}});
  }
}

void NodeManager::OnContainerExit(const ContainerExit& exit) {
  auto it = containers_.find(exit.container_id);
  if (it == containers_.end()) {
    log::Warn("unknown_container_reaped", {{"node", node_id_}, {"container", exit.container_id}});
    return;
  }
  ContainerRecord& record = it->second;
  record.running = false;
  device_ledger_.Release(exit.container_id);  // its devices are free for the next container
  if (record.stop_exit_status.has_value()) {
    record.exit_status = *record.stop_exit_status;
    record.diagnostics = record.stop_reason;
    if (!exit.diagnostics.empty()) absl::StrAppend(&record.diagnostics, "; ", exit.diagnostics);
  } else if (exit.oom_killed) {
    record.exit_status = v1::CONTAINER_EXIT_KILLED_EXCEEDED_PMEM;
    record.diagnostics = exit.diagnostics;
  } else if (exit.status_lost) {
    // E.g. it ended while no NM watched and its monitor could not record how.
    record.exit_status = v1::CONTAINER_EXIT_LOST_NODE;
    record.diagnostics = exit.diagnostics;
  } else {
    record.exit_status = exit.exit_code;
    record.diagnostics = exit.diagnostics;
  }
  // Its accounting, final: when it ended, its last memory sample held until then, its cgroups'
  // totals (read before they were removed) and the bytes its class counted at the last read.
  NmContainerRecord& stored = record.stored;
  stored.finished_ms = loop_->NowMs();
  if (record.adopted) {
    // It may have ended while no NM ran: its monitor wrote the exit file then.
    if (std::optional<int64_t> written = ExitFileTimeMs(stored.state_dir);
        written.has_value() && *written < stored.finished_ms)
      stored.finished_ms = *written;
  }
  stored.finished_ms = std::max(stored.finished_ms, stored.launched_ms);
  internal::AddMemorySample(&stored, stored.finished_ms, stored.usage_sample_rss_bytes);
  if (exit.usage.has_value()) {
    stored.cpu_time_ms = exit.usage->cpu_ns.value_or(0) / 1'000'000;
    stored.peak_memory_bytes = exit.usage->peak_memory_bytes.value_or(0);
  }
  if (auto net = net_stats_.find(exit.container_id); net != net_stats_.end())
    stored.network_tx_bytes = record.network_tx_base + net->second.tx_bytes;
  unacked_completed_[exit.container_id] =
      CompletedStatus(exit.container_id, record.exit_status, record.diagnostics, stored);
  RequestOutOfBandHeartbeat();
  Persist(exit.container_id, record);
  CountExit(exit.container_id, record.exit_status);
  if (traffic_ != nullptr) {
    if (absl::Status s = traffic_->RemoveContainer(exit.container_id); !s.ok()) {
      log::Warn("traffic_class_removal_failed",
                {{"node", node_id_}, {"container", exit.container_id}, {"error", s}});
    }
  }
  net_stats_.erase(exit.container_id);
  if (amrm_proxy_ != nullptr) amrm_proxy_->RemoveAttemptOfContainer(exit.container_id);
  if (cleaning_apps_.contains(record.app_id)) MaybeFinishAppCleanup(record.app_id);
}

void NodeManager::CleanupApplication(const std::string& app_id) {
  if (app_id.empty() || finished_apps_.contains(app_id)) return;
  if (amrm_proxy_ != nullptr) amrm_proxy_->RemoveApplication(app_id);
  cleaning_apps_.insert(app_id);
  for (const auto& [id, record] : containers_) {
    if (record.app_id == app_id && record.running) {
      StopContainer(id, v1::CONTAINER_EXIT_KILLED_AFTER_APP_COMPLETION,
                    "Container killed: its application finished");
    }
  }
  MaybeFinishAppCleanup(app_id);
}

void NodeManager::MaybeFinishAppCleanup(std::string app_id) {
  for (const auto& [id, record] : containers_) {
    if (record.app_id == app_id && record.running) return;
  }
  std::vector<std::string> ids;
  for (auto it = containers_.begin(); it != containers_.end();) {
    if (it->second.app_id != app_id) {
      ++it;
      continue;
    }
    // NotFound: a container that ended before this NM started (known from the record only);
    // its work dir goes with the app's directory below.
    if (absl::Status s = executor_->Cleanup(it->first); !s.ok() && !absl::IsNotFound(s)) {
      log::Warn("container_cleanup_failed",
                {{"node", node_id_}, {"container", it->first}, {"error", s}});
    }
    if (!it->second.stored.state_dir.empty()) {
      log::WarnIfError(OsEnv::Default()->RemoveTree(it->second.stored.state_dir),
                       "container_cleanup_failed",
                       {{"node", node_id_}, {"container", it->first}, {"what", "state directory"}});
    }
    ids.push_back(it->first);
    it = containers_.erase(it);
  }
  // Its records go; a restarted NM still refuses it (for kFinishedAppRetentionMs).
  if (absl::Status s = state_->FinishApplication(app_id, loop_->NowMs()); !s.ok()) {
    log::Error("nm_state_write_failed", {{"node", node_id_}, {"app", app_id}, {"error", s}});
  }
  // Aggregated first: the logs may be deleted from here on (a failure keeps the aggregation
  // pending for the next NM start, and the logs stay for log_retention_ms).
  if (!ids.empty()) {
    if (absl::Status s = log_aggregator_->AggregateApp(app_id); !s.ok())
      log::Error("log_aggregation_failed", {{"node", node_id_}, {"app", app_id}, {"error", s}});
  }
  // The logs outlive the work dirs by log_retention_ms (ids come from verified tokens).
  if (!ids.empty() && !log_deletions_.contains(app_id)) {
    log_deletions_[app_id] =
        loop_->Schedule(options_.log_retention_ms, [this, app_id, ids = std::move(ids)] {
          log_deletions_.erase(app_id);
          log_aggregator_->ForgetApp(app_id);
          for (const std::string& id : ids) {
            if (absl::Status s =
                    OsEnv::Default()->RemoveTree(absl::StrCat(options_.work_root, "/logs/", id));
                !s.ok())
              log::Warn("log_removal_failed", {{"node", node_id_}, {"container", id}, {"error", s}});
          }
          log::Info("logs_removed", {{"node", node_id_}, {"app", app_id}, {"containers", ids.size()}});
        });
  }
  // Only a validated id (ValidateContainerId, not "logs") ever names an app directory.
  if (ValidateContainerId(app_id).ok() && app_id != "logs") {
    const std::string dir = absl::StrCat(options_.work_root, "/", app_id);
    if (absl::Status s = OsEnv::Default()->RemoveTree(dir); !s.ok()) {
      log::Warn("app_work_dir_removal_failed", {{"node", node_id_}, {"app", app_id}, {"error", s}});
    }
  }
  cleaning_apps_.erase(app_id);
  finished_apps_.insert(app_id);
}

}  // namespace weft::nm
