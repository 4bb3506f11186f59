#include "cli/demo_command.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/cli_common.h"
#include "cli/dev_cluster.h"
#include "common/log.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft::cli {
namespace {

struct DemoFlags {
  bool no_cgroups = false;
  int tasks = 6;  // per user: more than DRF will let either run
};

// Polls `done` every 100 ms for up to `seconds`; true once it holds.
template <typename F>
bool WaitFor(double seconds, F done) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

// Seed 000's example: 9 CPUs and 18 GB; user A's tasks need <1 CPU, 4 GB>, user B's
// <3 CPUs, 1 GB>. DRF equalises their dominant shares: A runs 3 tasks, B 2.
//
// The AM containers are real containers too, so they get a node of their own (2 vcores,
// 2 GB). The 9-vcore/18-GB task node joins only once both AMs have asked, so that one
// scheduling pass sees both users' demand, as in the seed's progressive filling.
int RunDrfDemo(const DemoFlags& flags) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("weft-demo-", getpid());
  rm::RmServerOptions options;  // in-memory state, any free port on 127.0.0.1
  options.port = 0;
  // The demo's two users, A and B, are this process's own callers, not Unix users.
  options.auth.mode = rm::UserAuthentication::kDeclared;
  options.rm.pass_interval_ms = 100;
  // The demo's first node is for the two AMs alone (the task node joins once both run): no
  // AM-share limit, which would hold the second AM back until the first app ends.
  options.rm.scheduler.queue_max_am_share_default = -1;
  auto cluster =
      DevCluster::Start(std::move(options), !flags.no_cgroups, dir.string(), "weft demo");
  if (!cluster.ok()) return PrintError(cluster.status().message());
  DevCluster& c = **cluster;
  // Users A and B are the demo's, not Unix users: containers run as this process's user
  // (YARN's DefaultContainerExecutor).
  NmFlags nm_flags;
  nm_flags.run_containers_as = "nm-user";
  auto cleanup = [&] {
    c.Shutdown();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  if (auto nm = c.AddNode("memory-mb=2048,vcores=2", &nm_flags); !nm.ok()) {
    cleanup();
    return PrintError(nm.status().message());
  }
  std::cout << "weft demo drf: seed 000's Dominant Resource Fairness example on real containers\n"
            << "  ResourceManager " << c.rm().address() << ", containers "
            << (c.use_cgroups() ? "in cgroups" : "WITHOUT cgroups (not root)") << "\n";

  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  auto stub =
      v1::ClientService::NewStub(grpc::CreateChannel(c.rm().address(), c.ClientCredentials()));
  struct User {
    const char* name;
    int memory_mb, vcores;
    std::string app_id;
    int tasks = 0;
  };
  User users[] = {{"A", 4096, 1, "", 0}, {"B", 1024, 3, "", 0}};
  for (User& u : users) {
    grpc::ClientContext c1;
    v1::NewApplicationResponse app;
    grpc::Status s = stub->NewApplication(&c1, {}, &app);
    if (!s.ok()) {
      cleanup();
      return PrintError(s.error_message());
    }
    u.app_id = app.application_id();
    v1::SubmitApplicationRequest sub;
    v1::ApplicationSubmissionContext* ctx = sub.mutable_context();
    ctx->set_application_id(u.app_id);
    ctx->set_name(absl::StrCat("drf-user-", u.name));
    (*ctx->mutable_am_resource()->mutable_values())["memory-mb"] = 1024;
    (*ctx->mutable_am_resource()->mutable_values())["vcores"] = 1;
    ctx->mutable_am_container_spec()->add_command(absl::StrCat(
        ShellQuote(self), " am shell --num-containers ", flags.tasks, " --memory-mb ", u.memory_mb,
        " --vcores ", u.vcores, " --max-retries 0 --command 'sleep 600'"));
    grpc::ClientContext c2;
    c2.AddMetadata("weft-user", u.name);
    v1::SubmitApplicationResponse r;
    s = stub->SubmitApplication(&c2, sub, &r);
    if (!s.ok()) {
      cleanup();
      return PrintError(s.error_message());
    }
    std::cout << "  user " << u.name << ": " << u.app_id << " asks for " << flags.tasks
              << " tasks of <" << u.vcores << " vcore(s), " << u.memory_mb / 1024 << " GB>\n";
  }
  // Both AMs run and have asked: the root queue's pending vcores cover both asks.
  const int64_t asked = flags.tasks * (users[0].vcores + users[1].vcores);
  bool both_asked = WaitFor(60, [&] {
    grpc::ClientContext ctx;
    v1::GetQueueResponse q;
    if (!stub->GetQueue(&ctx, {}, &q).ok()) return false;
    auto it = q.queue().pending().values().find("vcores");
    return it != q.queue().pending().values().end() && it->second >= asked;
  });
  if (!both_asked) {
    cleanup();
    return PrintError("the two ApplicationMasters did not start within 60 s");
  }
  std::cout << "  adding the 9-vcore / 18-GB task node\n";
  if (auto nm = c.AddNode("memory-mb=18432,vcores=9", &nm_flags); !nm.ok()) {
    cleanup();
    return PrintError(nm.status().message());
  }
  // Wait until the allocation is stable: the same counts for 2 s, at most 30 s.
  int stable = 0, last_a = -1, last_b = -1;
  WaitFor(30, [&] {
    for (User& u : users) {
      grpc::ClientContext ctx;
      v1::GetApplicationRequest req;
      req.set_application_id(u.app_id);
      v1::GetApplicationResponse resp;
      if (stub->GetApplication(&ctx, req, &resp).ok())
        u.tasks = std::max(0, resp.report().running_containers() - 1);  // minus the AM
    }
    stable = (users[0].tasks == last_a && users[1].tasks == last_b && users[0].tasks > 0)
                 ? stable + 1
                 : 0;
    last_a = users[0].tasks;
    last_b = users[1].tasks;
    return stable >= 20;
  });
  std::cout << "  DRF allocation on the task node:\n"
            << "    user A: " << users[0].tasks << " running containers <1 vcore, 4 GB>"
            << "  -> " << users[0].tasks * 4 << " of 18 GB (memory is A's dominant resource)\n"
            << "    user B: " << users[1].tasks << " running containers <3 vcores, 1 GB>"
            << " -> " << users[1].tasks * 3 << " of 9 vcores (vcores are B's dominant resource)\n";
  bool expected = users[0].tasks == 3 && users[1].tasks == 2;
  std::cout << (expected ? "  as the seed's DRF example: A 3, B 2 (equal dominant shares)\n"
                         : "  NOT the seed's result (A 3, B 2)\n");
  for (User& u : users) {
    grpc::ClientContext ctx;
    v1::KillApplicationRequest req;
    req.set_application_id(u.app_id);
    req.set_diagnostics("demo finished");
    v1::KillApplicationResponse resp;
    if (grpc::Status s = stub->KillApplication(&ctx, req, &resp); !s.ok())
      log::Warn("demo_app_not_killed", {{"app", u.app_id}, {"error", s.error_message()}});
  }
  cleanup();
  return expected ? 0 : 1;
}

}  // namespace

void AddDemoCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand("demo", "Demonstrations on a cluster in this process");
  group->require_subcommand(1);
  auto f = std::make_shared<DemoFlags>();
  CLI::App* cmd = group->add_subcommand(
      "drf", "Seed 000's DRF example with real containers: A <1 vcore, 4 GB> vs B <3, 1 GB>");
  cmd->add_flag("--no-cgroups", f->no_cgroups, "run containers without cgroups");
  cmd->callback([f, exit_code] { *exit_code = RunDrfDemo(*f); });
}

}  // namespace weft::cli
