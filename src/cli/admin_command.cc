#include "cli/admin_command.h"

#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/cli_common.h"
#include "rm/rm_bench.h"
#include "weft/v1/admin.grpc.pb.h"

namespace weft::cli {
namespace {

struct QueueFlags {
  std::string rm_address;
  std::string queue;
  bool json = false;
};

void QueueRows(const v1::QueueInfo& q, int depth, std::vector<std::vector<std::string>>* rows) {
  rows->push_back({std::string(2 * depth, ' ') + q.name(), q.state(), FormatResource(q.used()),
                   FormatResource(q.pending()), FormatResource(q.entitlement()),
                   FormatResource(q.limit()), absl::StrFormat("%g", q.weight()),
                   q.capacity() < 0 ? "-" : absl::StrFormat("%g%%", q.capacity()),
                   absl::StrCat(q.num_running_applications(), "/", q.num_applications())});
  for (const auto& c : q.children()) QueueRows(c, depth + 1, rows);
}

int QueueStatus(const QueueFlags& f) {
  RmClient client(f.rm_address, DefaultUser());
  v1::GetQueueRequest req;
  req.set_queue(f.queue);
  req.set_recursive(true);
  v1::GetQueueResponse resp;
  auto ctx = client.NewContext();
  if (!ctx.ok()) return PrintError(ctx.status().message());
  if (absl::Status s = FromGrpc(client.stub().GetQueue(ctx->get(), req, &resp), client.address());
      !s.ok())
    return PrintError(s.message());
  if (f.json) {
    std::cout << ToJson(resp) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"QUEUE", "STATE", "USED", "PENDING", "ENTITLEMENT",
                                                 "LIMIT", "WEIGHT", "CAPACITY", "APPS(RUN/ALL)"}};
  QueueRows(resp.queue(), 0, &rows);
  PrintTable(rows);
  return 0;
}

struct AdminFlags {
  std::string rm_address;
  std::vector<std::string> nodes;
};

// AdminService shares the RM's port (and its TLS).
absl::StatusOr<std::unique_ptr<v1::AdminService::Stub>> AdminStub(const std::string& address) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ClusterChannelCredentials();
  if (!credentials.ok()) return credentials.status();
  return v1::AdminService::NewStub(grpc::CreateChannel(address, *credentials));
}

// A context with the caller's credentials (see cli_common.h) and a 10 s deadline.
absl::StatusOr<std::unique_ptr<grpc::ClientContext>> AdminContext() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (absl::Status s = AddClientCredentials(ctx.get(), ""); !s.ok()) return s;
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return ctx;
}

int RefreshQueues(const AdminFlags& f) {
  auto stub = AdminStub(f.rm_address);
  if (!stub.ok()) return PrintError(stub.status().message());
  auto ctx = AdminContext();
  if (!ctx.ok()) return PrintError(ctx.status().message());
  v1::RefreshQueuesResponse resp;
  if (absl::Status s = FromGrpc((*stub)->RefreshQueues(ctx->get(), {}, &resp), f.rm_address); !s.ok())
    return PrintError(s.message());
  std::cout << "queues refreshed\n";
  return 0;
}

int RefreshNodes(const AdminFlags& f, bool decommission) {
  auto stub = AdminStub(f.rm_address);
  if (!stub.ok()) return PrintError(stub.status().message());
  auto ctx = AdminContext();
  if (!ctx.ok()) return PrintError(ctx.status().message());
  v1::RefreshNodesRequest req;
  for (const auto& n : f.nodes) {
    if (decommission) {
      req.add_decommission(n);
    } else {
      req.add_recommission(n);
    }
  }
  v1::RefreshNodesResponse resp;
  if (absl::Status s = FromGrpc((*stub)->RefreshNodes(ctx->get(), req, &resp), f.rm_address); !s.ok())
    return PrintError(s.message());
  std::cout << (decommission ? "decommissioned: " : "recommissioned: ")
            << absl::StrJoin(f.nodes, " ") << "\n";
  return 0;
}

struct BenchFlags {
  rm::RmBenchOptions o;
  bool json = false;
  double seconds = 30;
};

}  // namespace

void AddQueueCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand("queue", "The scheduler's queues");
  group->require_subcommand(1);
  auto f = std::make_shared<QueueFlags>();
  CLI::App* cmd = group->add_subcommand("status", "Show a queue and its children");
  AddRmOption(cmd, &f->rm_address);
  cmd->add_option("NAME", f->queue, "queue name or path (default: root)");
  cmd->add_flag("--json", f->json, "print protobuf JSON instead of a human table");
  cmd->callback([f, exit_code] { *exit_code = QueueStatus(*f); });
}

void AddAdminCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand("admin", "Operators' commands (AdminService)");
  group->require_subcommand(1);
  {
    auto f = std::make_shared<AdminFlags>();
    CLI::App* cmd = group->add_subcommand(
        "refresh-queues", "Reload the RM's scheduler configuration (refused if invalid)");
    AddRmOption(cmd, &f->rm_address);
    cmd->callback([f, exit_code] { *exit_code = RefreshQueues(*f); });
  }
  for (bool decommission : {true, false}) {
    auto f = std::make_shared<AdminFlags>();
    CLI::App* cmd = group->add_subcommand(
        decommission ? "decommission" : "recommission",
        decommission ? "Take nodes out of service: their containers are stopped"
                     : "Let decommissioned nodes register again");
    AddRmOption(cmd, &f->rm_address);
    cmd->add_option("NODE", f->nodes, "node id (host:port) or host name")->required();
    cmd->callback([f, exit_code, decommission] { *exit_code = RefreshNodes(*f, decommission); });
  }
}

void AddBenchCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand("bench", "Load benchmarks");
  group->require_subcommand(1);
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = group->add_subcommand(
      "rm",
      "Drive a real ResourceManager (in this process, on 127.0.0.1) over gRPC with "
      "simulated NodeManagers and ApplicationMasters");
  cmd->add_option("--nodes", f->o.nodes, "simulated NMs")->capture_default_str();
  cmd->add_option("--heartbeat-ms", f->o.heartbeat_interval_ms, "NM heartbeat interval")
      ->capture_default_str();
  cmd->add_option("--apps", f->o.apps, "simulated AMs")->capture_default_str();
  cmd->add_option("--containers-per-app", f->o.containers_per_app,
                  "containers each AM keeps asked for or running")
      ->capture_default_str();
  cmd->add_option("--container-ms", f->o.container_run_ms, "how long a container runs")
      ->capture_default_str();
  cmd->add_option("--allocate-ms", f->o.allocate_interval_ms, "between an AM's Allocate calls")
      ->capture_default_str();
  cmd->add_option("--seconds", f->seconds, "measured duration")->capture_default_str();
  cmd->add_option("--threads", f->o.client_threads, "client threads")->capture_default_str();
  cmd->add_flag("--json", f->json, "print JSON");
  cmd->callback([f, exit_code] {
    rm::RmBenchOptions o = f->o;
    o.duration_ms = static_cast<int64_t>(f->seconds * 1000);
    auto r = rm::RunRmBench(o);
    if (!r.ok()) {
      *exit_code = PrintError(r.status().message());
      return;
    }
    std::cout << (f->json ? r->ToJson() + "\n" : r->ToText());
    *exit_code = 0;
  });
}

}  // namespace weft::cli
