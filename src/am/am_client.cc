#include "am/am_client.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "scheduler/placement_constraint.h"
#include "security/tls.h"

namespace weft::am {
namespace {

absl::Status FromGrpc(const grpc::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

}  // namespace

absl::StatusOr<AmEnvironment> ReadAmEnvironment() {
  AmEnvironment env;
  env.rm_address = Env("WEFT_RM_ADDRESS");
  env.application_id = Env("WEFT_APPLICATION_ID");
  env.attempt_id = Env("WEFT_APP_ATTEMPT_ID");
  for (auto [name, value] : {std::pair{"WEFT_RM_ADDRESS", &env.rm_address},
                             std::pair{"WEFT_APPLICATION_ID", &env.application_id},
                             std::pair{"WEFT_APP_ATTEMPT_ID", &env.attempt_id}}) {
    if (value->empty())
      return absl::FailedPreconditionError(
          absl::StrCat(name, " is not set: this must run as an ApplicationMaster container"));
  }
  const std::string path = Env("WEFT_TOKEN_FILE_AMRM");
  if (path.empty())
    return absl::FailedPreconditionError(
        "WEFT_TOKEN_FILE_AMRM is not set: this must run as an ApplicationMaster container");
  std::ifstream in(path, std::ios::binary);
  std::stringstream raw;
  raw << in.rdbuf();
  if (!in || !env.amrm_token.ParseFromString(raw.str()) || env.amrm_token.identifier().empty())
    return absl::FailedPreconditionError(
        absl::StrCat("the AMRM token file '", path, "' is unreadable or malformed"));
  if (const std::string ca = Env("WEFT_TLS_CA_FILE"); !ca.empty()) {
    absl::StatusOr<std::string> pem = security::LoadCaPem(ca);
    if (!pem.ok())
      return absl::FailedPreconditionError(
          absl::StrCat("WEFT_TLS_CA_FILE: ", pem.status().message()));
    env.tls_ca_pem = *std::move(pem);
  }
  return env;
}

std::shared_ptr<grpc::ChannelCredentials> AmChannelCredentials(const AmEnvironment& env) {
  return env.tls_ca_pem.empty() ? grpc::InsecureChannelCredentials()
                                : security::TlsChannelCredentials(env.tls_ca_pem);
}

absl::StatusOr<std::unique_ptr<AmRmClient>> AmRmClient::Connect(const AmEnvironment& env,
                                                                AmRmClientOptions options) {
  absl::StatusOr<RmFailover> failover = RmFailover::Create(env.rm_address);
  if (!failover.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("WEFT_RM_ADDRESS: ", failover.status().message()));
  std::unique_ptr<AmRmClient> c(new AmRmClient());
  c->env_ = env;
  c->failover_.emplace(*std::move(failover));
  if (!options.sleep_ms) {
    options.sleep_ms = [](int64_t ms) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    };
  }
  c->options_ = std::move(options);
  c->Reconnect();
  return c;
}

void AmRmClient::Reconnect() {
  // A channel of its own (no subchannel shared with earlier ones), so that it connects at once
  // instead of waiting out gRPC's reconnection backoff (up to 2 min) after an outage: the
  // client's own backoff paces the tries.
  grpc::ChannelArguments args = FastReconnectChannelArgs();
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  stub_ = v1::AmService::NewStub(
      grpc::CreateCustomChannel(failover_->current(), AmChannelCredentials(env_), args));
}

grpc::Status AmRmClient::Call(const std::function<grpc::Status(grpc::ClientContext*)>& rpc,
                              std::string* active_hint) {
  grpc::ClientContext ctx;
  ctx.AddMetadata("weft-amrm-token-bin", env_.amrm_token.SerializeAsString());
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(options_.call_timeout_ms));
  grpc::Status s = rpc(&ctx);
  *active_hint = s.ok() ? "" : ActiveRmHint(ctx);
  return s;
}

grpc::Status AmRmClient::CallWithRetry(
    const char* what, const std::function<grpc::Status(grpc::ClientContext*)>& rpc) {
  int64_t backoff = std::max<int64_t>(1, options_.retry_initial_ms);
  int64_t waited = 0;
  RmFailoverAction previous = RmFailoverAction::kNone;
  for (;;) {
    std::string active_hint;
    const std::string rm = failover_->current();
    grpc::Status s = Call(rpc, &active_hint);
    // CANCELLED too: this client cancels no call, so the server did (it was shutting down).
    const bool absent = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                        s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                        s.error_code() == grpc::StatusCode::CANCELLED;
    if (s.ok() || !absent || waited >= options_.max_outage_ms) {
      if (!s.ok() && absent)
        log::Error(
            "rm_unreachable_gave_up",
            {{"call", what}, {"rm", rm}, {"error", s.error_message()}, {"waited_ms", waited}});
      return s;
    }
    // With several RMs: the active a standby named, or the next RM of the list.
    const RmFailoverAction action = failover_->OnFailure(s, active_hint);
    if (action != RmFailoverAction::kNone)
      log::Info("rm_failover", {{"call", what},
                                {"from", rm},
                                {"to", failover_->current()},
                                {"error", s.error_message()}});
    // Straight to the named active, unless the previous try did that already (RMs naming each
    // other, or naming one that is down, are then paced by the backoff).
    const bool at_once =
        action == RmFailoverAction::kActiveRm && previous != RmFailoverAction::kActiveRm;
    previous = action;
    if (at_once) {
      Reconnect();
      continue;
    }
    const int64_t wait = std::min(backoff, options_.max_outage_ms - waited);
    log::Warn("rm_unreachable", {{"call", what},
                                 {"rm", rm},
                                 {"error", s.error_message()},
                                 {"retry_ms", wait},
                                 {"waited_ms", waited}});
    options_.sleep_ms(wait);
    waited += wait;
    Reconnect();
    backoff = std::min(backoff * 2, std::max<int64_t>(1, options_.retry_max_ms));
  }
}

absl::StatusOr<v1::RegisterApplicationMasterResponse> AmRmClient::Register(
    const std::string& host) {
  host_ = host;
  return RegisterOnce();
}

absl::StatusOr<v1::RegisterApplicationMasterResponse> AmRmClient::RegisterOnce() {
  v1::RegisterApplicationMasterRequest req;
  req.set_host(host_);
  v1::RegisterApplicationMasterResponse resp;
  grpc::Status s = CallWithRetry("RegisterApplicationMaster", [&](grpc::ClientContext* ctx) {
    return stub_->RegisterApplicationMaster(ctx, req, &resp);
  });
  if (!s.ok()) return FromGrpc(s, "RegisterApplicationMaster");
  // A registration starts a new response_id sequence.
  response_id_ = 0;
  return resp;
}

namespace {

// YARN's ResourceRequest key: priority, resource name, capability, allocation_request_id.
std::string AskKey(const v1::ResourceRequest& r) {
  std::map<std::string, int64_t> capability(r.capability().values().begin(),
                                            r.capability().values().end());
  std::string key =
      absl::StrCat(r.priority(), "|", r.resource_name(), "|", r.allocation_request_id(), "|");
  for (const auto& [name, value] : capability) absl::StrAppend(&key, name, "=", value, ",");
  return key;
}

}  // namespace

void AmRmClient::Ask(const v1::ResourceRequest& request) {
  asks_.push_back(request);
  ask_table_[AskKey(request)] = request;
}

absl::StatusOr<v1::AllocateResponse> AmRmClient::Allocate(float progress, int64_t wait_ms) {
  v1::AllocateRequest req;
  req.set_response_id(response_id_);
  req.set_progress(progress);
  // Well inside one try's deadline, so that a held call is answered before the client gives up.
  req.set_wait_ms(std::clamp<int64_t>(wait_ms, 0, options_.call_timeout_ms / 2));
  for (const auto& a : asks_) *req.add_asks() = a;
  for (const auto& r : releases_) req.add_releases(r);
  for (const auto& u : updates_) *req.add_update_requests() = u;
  v1::AllocateResponse resp;
  // What a registration after a resync handed back; given to the caller with the reply.
  std::vector<v1::Container> recovered;
  // A lost reply is retried with the same response_id: the RM answers it with the same reply.
  for (int resync = 0;; ++resync) {
    grpc::Status s = CallWithRetry(
        "Allocate", [&](grpc::ClientContext* ctx) { return stub_->Allocate(ctx, req, &resp); });
    if (!s.ok()) return FromGrpc(s, "Allocate");
    if (resp.am_command() == v1::AM_SHUTDOWN)
      return absl::AbortedError("the RM asked this AM to shut down");
    if (resp.am_command() != v1::AM_RESYNC) break;
    if (resync >= 3)
      return absl::AbortedError("the RM keeps asking this AM to resync after it registered again");
    // YARN's AMRMClient on ApplicationMasterNotRegistered: register again, then send the whole
    // ask table and the queued releases.
    log::Info("am_resync", {{"attempt", env_.attempt_id}, {"asks", ask_table_.size()}});
    absl::StatusOr<v1::RegisterApplicationMasterResponse> again = RegisterOnce();
    if (!again.ok()) return again.status();
    ++resyncs_;
    for (const v1::Container& c : again->containers_from_previous_attempts())
      recovered.push_back(c);
    req.set_response_id(response_id_);
    req.clear_asks();
    for (const auto& [key, ask] : ask_table_) *req.add_asks() = ask;
    // The versions they name belong to the RM that restarted: the AM asks again if it still
    // wants them.
    req.clear_update_requests();
  }
  if (!recovered.empty()) {
    // Those of the registration first, then those the reply itself carries.
    google::protobuf::RepeatedPtrField<v1::Container> all(recovered.begin(), recovered.end());
    all.MergeFrom(resp.containers_from_previous_attempts());
    resp.mutable_containers_from_previous_attempts()->Swap(&all);
  }
  asks_.clear();
  releases_.clear();
  updates_.clear();
  response_id_ = resp.response_id();
  if (resp.has_amrm_token()) env_.amrm_token = resp.amrm_token();  // the RM rolled its key
  return resp;
}

absl::Status AmRmClient::Finish(v1::FinalApplicationStatus status, const std::string& diagnostics) {
  v1::FinishApplicationMasterRequest req;
  req.set_final_status(status);
  req.set_diagnostics(diagnostics);
  v1::FinishApplicationMasterResponse resp;
  return FromGrpc(CallWithRetry("FinishApplicationMaster",
                                [&](grpc::ClientContext* ctx) {
                                  return stub_->FinishApplicationMaster(ctx, req, &resp);
                                }),
                  "FinishApplicationMaster");
}

v1::ContainerService::Stub* NmClient::StubFor(const std::string& node_id) {
  auto& stub = stubs_[node_id];
  if (!stub) {
    stub = v1::ContainerService::NewStub(grpc::CreateChannel(node_id, credentials_));
  }
  return stub.get();
}

absl::Status NmClient::Start(const v1::Container& container, const std::string& command,
                             const std::map<std::string, std::string>& env) {
  v1::StartContainersRequest req;
  v1::StartContainerRequest* r = req.add_requests();
  *r->mutable_container_token() = container.container_token();
  r->mutable_launch_context()->add_command(command);
  for (const auto& [k, v] : env) (*r->mutable_launch_context()->mutable_environment())[k] = v;
  v1::StartContainersResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status s = StubFor(container.node_id())->StartContainers(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s, absl::StrCat("starting ", container.container_id()));
  if (resp.failed_size() > 0)
    return absl::FailedPreconditionError(
        absl::StrCat("starting ", container.container_id(), ": ", resp.failed(0).message()));
  return absl::OkStatus();
}

absl::Status NmClient::Stop(const v1::Container& container) {
  v1::StopContainersRequest req;
  req.add_container_ids(container.container_id());
  *req.add_container_tokens() = container.container_token();
  v1::StopContainersResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return FromGrpc(StubFor(container.node_id())->StopContainers(&ctx, req, &resp),
                  absl::StrCat("stopping ", container.container_id()));
}

absl::Status NmClient::Update(const v1::Container& container) {
  v1::UpdateContainersRequest req;
  *req.add_container_tokens() = container.container_token();
  v1::UpdateContainersResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status s = StubFor(container.node_id())->UpdateContainers(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s, absl::StrCat("updating ", container.container_id()));
  if (resp.failed_size() > 0)
    return absl::Status(static_cast<absl::StatusCode>(resp.failed(0).code()),
                        absl::StrCat("updating ", container.container_id(), ": ",
                                     resp.failed(0).message()));
  return absl::OkStatus();
}

absl::StatusOr<v1::ContainerStatus> NmClient::Status(const v1::Container& container) {
  v1::GetContainerStatusesRequest req;
  req.add_container_ids(container.container_id());
  *req.add_container_tokens() = container.container_token();
  v1::GetContainerStatusesResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status s = StubFor(container.node_id())->GetContainerStatuses(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s, "GetContainerStatuses");
  if (resp.statuses_size() == 0)
    return absl::NotFoundError(absl::StrCat("no status for ", container.container_id()));
  return resp.statuses(0);
}

namespace {

// Exit statuses of containers the framework ended, not their command.
bool FrameworkEnded(int32_t exit_status) {
  return exit_status == v1::CONTAINER_EXIT_ABORTED || exit_status == v1::CONTAINER_EXIT_PREEMPTED ||
         exit_status == v1::CONTAINER_EXIT_KILLED_BY_RM ||
         exit_status == v1::CONTAINER_EXIT_LOST_NODE;
}

}  // namespace

int RunShellAm(const ShellAmOptions& o) {
  // The AM's log (its container's stderr): one event per line of what it did or why it stopped.
  auto say = [](const std::string& line) { log::Info("shell_am", {{"msg", line}}); };
  if (o.num_containers < 1 || o.command.empty() || o.max_retries < 0) {
    say("need --num-containers >= 1, a --command and --max-retries >= 0");
    return 2;
  }
  auto env = ReadAmEnvironment();
  if (!env.ok()) {
    say(std::string(env.status().message()));
    return 2;
  }
  AmRmClientOptions client_options;
  client_options.max_outage_ms = o.rm_max_outage_ms;
  auto client = AmRmClient::Connect(*env, client_options);
  if (!client.ok()) {
    say(std::string(client.status().message()));
    return 2;
  }
  AmRmClient& rm = **client;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  if (auto r = rm.Register(host); !r.ok()) {
    say(std::string(r.status().message()));
    return 1;
  }
  NmClient nm(AmChannelCredentials(*env));
  // The request groups: one by default; one per part of a placement spec; or gangs of o.gang.
  // Each has its own allocation_request_id, by which its containers come back.
  v1::ResourceRequest base;
  base.set_priority(1);
  base.set_resource_name("*");
  base.set_relax_locality(true);
  auto& cap = *base.mutable_capability()->mutable_values();
  cap["memory-mb"] = o.memory_mb;
  cap["vcores"] = o.vcores;
  if (o.network_mbps > 0) cap["network-mbps"] = o.network_mbps;
  if (o.gpu_milli > 0) cap["gpu-milli"] = o.gpu_milli;
  base.set_gpu_same_group(o.gpu_same_group);
  base.set_node_label_expression(o.node_label);
  struct Group {
    v1::ResourceRequest ask;
    int32_t outstanding = 0;
  };
  std::vector<Group> groups;
  int32_t total = o.num_containers;
  if (!o.placement_spec.empty()) {
    auto spec = scheduler::ParsePlacementSpec(o.placement_spec);
    if (!spec.ok()) {
      say(std::string(spec.status().message()));
      return 2;
    }
    total = 0;
    for (const scheduler::PlacementSpec& part : *spec) {
      Group g{base, part.num_containers};
      g.ask.add_allocation_tags(part.source_tag);
      if (part.has_constraint) {
        g.ask.set_placement_constraint(scheduler::DescribeConstraint(part.constraint));
        g.ask.set_placement_soft(part.soft);
      }
      total += part.num_containers;
      groups.push_back(std::move(g));
    }
  } else if (o.gang > 0) {
    for (int32_t left = o.num_containers; left > 0; left -= o.gang)
      groups.push_back({base, std::min(left, o.gang)});
  } else {
    groups.push_back({base, o.num_containers});
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i].ask.set_allocation_request_id(static_cast<int64_t>(i) + 1);
    if (o.gang > 0) {
      groups[i].ask.set_gang(true);
      groups[i].ask.set_gang_timeout_ms(o.gang_timeout_ms);
    }
  }
  auto ask_all = [&] {  // absolute counts, as YARN's asks
    for (Group& g : groups) {
      g.ask.set_num_containers(g.outstanding);
      rm.Ask(g.ask);
    }
  };

  int32_t succeeded = 0, failures = 0;
  std::map<std::string, size_t> running;  // container -> its group
  std::map<std::string, v1::Container> live;  // running containers as last granted
  size_t resize_step = 0;
  auto last_resize = std::chrono::steady_clock::now();
  std::string diagnostics;
  ask_all();
  const auto start = std::chrono::steady_clock::now();
  while (succeeded < total) {
    if (o.timeout_ms > 0 &&
        std::chrono::steady_clock::now() - start > std::chrono::milliseconds(o.timeout_ms)) {
      diagnostics = absl::StrCat("timed out after ", o.timeout_ms, " ms");
      break;
    }
    // A long poll: the RM answers when it has containers or completions for this AM, or
    // after poll_interval_ms with nothing.
    const auto asked = std::chrono::steady_clock::now();
    auto resp = rm.Allocate(static_cast<float>(succeeded) / static_cast<float>(total),
                            o.poll_interval_ms);
    if (!resp.ok()) {
      if (resp.status().code() == absl::StatusCode::kInvalidArgument ||
          resp.status().code() == absl::StatusCode::kPermissionDenied) {
        // The RM refuses the request itself (e.g. more than any node offers, a label the
        // queue may not use): no attempt can do better, so the app fails saying why.
        diagnostics = absl::StrCat("the ResourceManager refused the container request: ",
                                   resp.status().message());
        break;
      }
      say(std::string(resp.status().message()));
      return 1;
    }
    for (const v1::Container& c : resp->allocated_containers()) {
      const int64_t gi = c.allocation_request_id() - 1;
      if (gi < 0 || gi >= static_cast<int64_t>(groups.size()) ||
          groups[static_cast<size_t>(gi)].outstanding <= 0) {
        rm.Release(c.container_id());  // more than we asked for
        continue;
      }
      absl::Status s = nm.Start(c, o.command,
                                {{"WEFT_APPLICATION_ID", env->application_id},
                                 {"WEFT_SHELL_CONTAINER", c.container_id()}});
      if (!s.ok()) {
        say(std::string(s.message()));
        rm.Release(c.container_id());
        continue;  // still outstanding: asked for again below
      }
      --groups[static_cast<size_t>(gi)].outstanding;
      running[c.container_id()] = static_cast<size_t>(gi);
      live[c.container_id()] = c;
      say(absl::StrCat("started ", c.container_id(), " on ", c.node_id(),
                       c.gang_id() != 0 ? absl::StrCat(" (gang ", c.gang_id(), ")") : ""));
    }
    // Granted resource updates: an increase is the AM's to apply on the NM.
    for (const v1::UpdatedContainer& u : resp->updated_containers()) {
      const v1::Container& c = u.container();
      if (!live.contains(c.container_id())) continue;
      live[c.container_id()] = c;
      if (u.update_type() == v1::INCREASE_RESOURCE) {
        if (absl::Status s = nm.Update(c); !s.ok()) {
          say(std::string(s.message()));
          continue;
        }
      }
      say(absl::StrCat("resized ", c.container_id(), " to memory-mb=",
                       c.resource().values().contains("memory-mb")
                           ? c.resource().values().at("memory-mb")
                           : 0,
                       " (version ", c.version(), ", ",
                       u.update_type() == v1::INCREASE_RESOURCE ? "increase" : "decrease", ")"));
    }
    for (const v1::RejectedSchedulingRequest& r : resp->rejected_scheduling_requests()) {
      diagnostics = absl::StrCat("the scheduler gave up on a request: ", r.reason());
    }
    if (!diagnostics.empty()) break;
    // After an RM restart: the containers it recovered. Those this AM started keep running
    // (and are not asked for again); any other is a leftover it has no use for.
    for (const v1::Container& c : resp->containers_from_previous_attempts()) {
      if (running.contains(c.container_id())) continue;
      say(absl::StrCat("releasing recovered container ", c.container_id(), ", not ours"));
      rm.Release(c.container_id());
    }
    // A status reported twice (across an RM restart) counts once: only running ones count.
    for (const v1::ContainerStatus& st : resp->completed_containers()) {
      auto it = running.find(st.container_id());
      if (it == running.end()) continue;
      const size_t gi = it->second;
      running.erase(it);
      live.erase(st.container_id());
      if (st.exit_status() == 0) {
        ++succeeded;
        continue;
      }
      if (FrameworkEnded(st.exit_status())) {
        // Not the command's failure: it runs again, as YARN's distributed shell does.
        say(absl::StrCat(st.container_id(), " was ended by the framework (exit status ",
                         st.exit_status(), "): running it again. ", st.diagnostics()));
        ++groups[gi].outstanding;
        continue;
      }
      ++failures;
      say(absl::StrCat(st.container_id(), " failed with exit status ", st.exit_status(), " ",
                       st.diagnostics()));
      if (failures > o.max_retries * total) {
        diagnostics =
            absl::StrCat(failures, " container failures (max retries ", o.max_retries,
                         " per container); last: ", st.container_id(), " exit ", st.exit_status());
        break;
      }
      ++groups[gi].outstanding;
    }
    if (!diagnostics.empty()) break;
    // The next resize step, once every container runs.
    bool all_started = true;
    for (const Group& g : groups) all_started &= g.outstanding == 0;
    if (all_started && resize_step < o.resize_mb.size() && !live.empty() &&
        std::chrono::steady_clock::now() - last_resize >=
            std::chrono::milliseconds(o.resize_interval_ms)) {
      for (const auto& [id, c] : live) {
        v1::UpdateContainerRequest u;
        u.set_container_id(id);
        u.set_container_version(c.version());
        *u.mutable_capability() = c.resource();
        (*u.mutable_capability()->mutable_values())["memory-mb"] = o.resize_mb[resize_step];
        rm.UpdateContainer(u);
      }
      say(absl::StrCat("asking to resize ", live.size(), " container(s) to memory-mb=",
                       o.resize_mb[resize_step]));
      ++resize_step;
      last_resize = std::chrono::steady_clock::now();
    }
    // Keep the outstanding counts current (absolute, as YARN's asks): every container not yet
    // started is asked for, so the RM places the next one as soon as one ends.
    ask_all();
    // An empty reply well before the poll interval: the RM (or a proxy before it) did not hold
    // the call, so the AM waits here instead of calling again at once.
    const bool news = resp->allocated_containers_size() > 0 ||
                      resp->completed_containers_size() > 0 ||
                      resp->containers_from_previous_attempts_size() > 0 ||
                      resp->updated_containers_size() > 0;
    if (!news && std::chrono::steady_clock::now() - asked <
                     std::chrono::milliseconds(o.poll_interval_ms / 2))
      std::this_thread::sleep_for(std::chrono::milliseconds(o.poll_interval_ms));
  }
  bool ok = succeeded == total;
  if (ok) diagnostics = absl::StrCat(succeeded, " containers succeeded");
  say(diagnostics);
  absl::Status fin = rm.Finish(ok ? v1::FINAL_SUCCEEDED : v1::FINAL_FAILED, diagnostics);
  if (!fin.ok()) say(std::string(fin.message()));
  return ok ? 0 : 1;
}

}  // namespace weft::am
