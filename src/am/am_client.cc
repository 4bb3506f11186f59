#include "am/am_client.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <iostream>
#include <set>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "security/tls.h"
#include "common/log.h"

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

absl::StatusOr<std::unique_ptr<AmRmClient>> AmRmClient::Connect(const AmEnvironment& env) {
  std::unique_ptr<AmRmClient> c(new AmRmClient());
  c->env_ = env;
  c->stub_ = v1::AmService::NewStub(grpc::CreateChannel(env.rm_address, AmChannelCredentials(env)));
  return c;
}

grpc::Status AmRmClient::Call(const std::function<grpc::Status(grpc::ClientContext*)>& rpc) {
  grpc::ClientContext ctx;
  ctx.AddMetadata("weft-amrm-token-bin", env_.amrm_token.SerializeAsString());
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return rpc(&ctx);
}

absl::StatusOr<v1::RegisterApplicationMasterResponse> AmRmClient::Register(
    const std::string& host) {
  v1::RegisterApplicationMasterRequest req;
  req.set_host(host);
  v1::RegisterApplicationMasterResponse resp;
  grpc::Status s = Call(
      [&](grpc::ClientContext* ctx) { return stub_->RegisterApplicationMaster(ctx, req, &resp); });
  if (!s.ok()) return FromGrpc(s, "RegisterApplicationMaster");
  return resp;
}

absl::StatusOr<v1::AllocateResponse> AmRmClient::Allocate(float progress) {
  v1::AllocateRequest req;
  req.set_response_id(response_id_);
  req.set_progress(progress);
  for (const auto& a : asks_) *req.add_asks() = a;
  for (const auto& r : releases_) req.add_releases(r);
  v1::AllocateResponse resp;
  // A lost reply is retried with the same response_id: the RM answers it with the same reply.
  grpc::Status s;
  for (int attempt = 0; attempt < 3; ++attempt) {
    s = Call([&](grpc::ClientContext* ctx) { return stub_->Allocate(ctx, req, &resp); });
    if (s.ok() || s.error_code() != grpc::StatusCode::UNAVAILABLE) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (!s.ok()) return FromGrpc(s, "Allocate");
  if (resp.am_command() == v1::AM_RESYNC || resp.am_command() == v1::AM_SHUTDOWN)
    return absl::AbortedError("the RM asked this AM to stop (resync/shutdown)");
  asks_.clear();
  releases_.clear();
  response_id_ = resp.response_id();
  if (resp.has_amrm_token()) env_.amrm_token = resp.amrm_token();  // the RM rolled its key
  return resp;
}

absl::Status AmRmClient::Finish(v1::FinalApplicationStatus status, const std::string& diagnostics) {
  v1::FinishApplicationMasterRequest req;
  req.set_final_status(status);
  req.set_diagnostics(diagnostics);
  v1::FinishApplicationMasterResponse resp;
  return FromGrpc(Call([&](grpc::ClientContext* ctx) {
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
  auto client = AmRmClient::Connect(*env);
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
  v1::ResourceRequest ask;
  ask.set_priority(1);
  ask.set_resource_name("*");
  ask.set_relax_locality(true);
  auto& cap = *ask.mutable_capability()->mutable_values();
  cap["memory-mb"] = o.memory_mb;
  cap["vcores"] = o.vcores;
  if (o.network_mbps > 0) cap["network-mbps"] = o.network_mbps;

  int32_t succeeded = 0, failures = 0, outstanding = o.num_containers;
  std::set<std::string> running;
  std::string diagnostics;
  ask.set_num_containers(outstanding);
  rm.Ask(ask);
  const auto start = std::chrono::steady_clock::now();
  while (succeeded < o.num_containers) {
    if (o.timeout_ms > 0 &&
        std::chrono::steady_clock::now() - start > std::chrono::milliseconds(o.timeout_ms)) {
      diagnostics = absl::StrCat("timed out after ", o.timeout_ms, " ms");
      break;
    }
    auto resp = rm.Allocate(static_cast<float>(succeeded) / o.num_containers);
    if (!resp.ok()) {
      if (resp.status().code() == absl::StatusCode::kInvalidArgument) {
        // The RM refuses the request itself (e.g. more than any node offers): no attempt can
        // do better, so the app fails saying why instead of retrying.
        diagnostics = absl::StrCat("the ResourceManager refused the container request: ",
                                   resp.status().message());
        break;
      }
      say(std::string(resp.status().message()));
      return 1;
    }
    for (const v1::Container& c : resp->allocated_containers()) {
      if (outstanding <= 0) {
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
      --outstanding;
      running.insert(c.container_id());
      say(absl::StrCat("started ", c.container_id(), " on ", c.node_id()));
    }
    for (const v1::ContainerStatus& st : resp->completed_containers()) {
      if (!running.erase(st.container_id())) continue;
      if (st.exit_status() == 0) {
        ++succeeded;
        continue;
      }
      ++failures;
      say(absl::StrCat(st.container_id(), " failed with exit status ", st.exit_status(), " ",
                       st.diagnostics()));
      if (failures > o.max_retries * o.num_containers) {
        diagnostics =
            absl::StrCat(failures, " container failures (max retries ", o.max_retries,
                         " per container); last: ", st.container_id(), " exit ", st.exit_status());
        break;
      }
      ++outstanding;
    }
    if (!diagnostics.empty()) break;
    // Keep the outstanding count current (absolute, as YARN's asks).
    ask.set_num_containers(outstanding);
    rm.Ask(ask);
    std::this_thread::sleep_for(std::chrono::milliseconds(o.poll_interval_ms));
  }
  bool ok = succeeded == o.num_containers;
  if (ok) diagnostics = absl::StrCat(succeeded, " containers succeeded");
  say(diagnostics);
  absl::Status fin = rm.Finish(ok ? v1::FINAL_SUCCEEDED : v1::FINAL_FAILED, diagnostics);
  if (!fin.ok()) say(std::string(fin.message()));
  return ok ? 0 : 1;
}

}  // namespace weft::am
