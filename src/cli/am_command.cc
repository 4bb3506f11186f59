#include "cli/am_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "am/am_client.h"
#include "cli/cli_common.h"
#include "scheduler/placement_constraint.h"

namespace weft::cli {
namespace {

struct ShellFlags {
  am::ShellAmOptions options;
  double timeout_s = 0;
};

int RunShell(const ShellFlags& f) {
  if (f.options.placement_spec.empty() && f.options.num_containers < 1)
    return PrintError("--num-containers must be >= 1");
  if (!f.options.placement_spec.empty()) {
    if (auto spec = scheduler::ParsePlacementSpec(f.options.placement_spec); !spec.ok())
      return PrintError(absl::StrCat("--placement: ", spec.status().message()));
  }
  if (f.options.gang < 0) return PrintError("--gang must be >= 0");
  for (int64_t mb : f.options.resize_mb) {
    if (mb <= 0) return PrintError(absl::StrCat("--resize-mb ", mb, " is not positive"));
  }
  if (f.options.command.empty()) return PrintError("--command is empty");
  if (f.options.memory_mb <= 0 || f.options.vcores <= 0)
    return PrintError("--memory-mb and --vcores must be > 0");
  if (f.options.max_retries < 0) return PrintError("--max-retries must be >= 0");
  if (f.options.poll_interval_ms <= 0) return PrintError("--poll-interval-ms must be > 0");
  am::ShellAmOptions options = f.options;
  options.timeout_ms = static_cast<int64_t>(f.timeout_s * 1000);
  return am::RunShellAm(options);
}

struct CommandFlags {
  std::string command;
  int64_t heartbeat_ms = 1000;
};

// An AM around a plain command: registers, runs `/bin/bash -c CMD` as a child (sharing the
// container's stdout, stderr and process group), calls Allocate every heartbeat_ms while it
// runs, then unregisters SUCCEEDED when it exits 0. A non-zero exit ends the attempt without
// unregistering, so the RM starts another one (up to the app's max attempts), as YARN does for
// an AM that fails. Returns the command's exit status (128+signal when killed).
int RunCommandAm(const CommandFlags& f) {
  if (f.command.empty()) return PrintError("--command is empty");
  if (f.heartbeat_ms <= 0) return PrintError("--heartbeat-ms must be > 0");
  auto env = am::ReadAmEnvironment();
  if (!env.ok()) return PrintError(env.status().message());
  auto rm = am::AmRmClient::Connect(*env);
  if (!rm.ok()) return PrintError(rm.status().message());
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  if (auto r = (*rm)->Register(host); !r.ok())
    return PrintError(absl::StrCat("registering with the RM: ", r.status().message()));
  pid_t pid = fork();
  if (pid < 0) return PrintError(ErrnoMessage(errno, "fork"));
  if (pid == 0) {
    execl("/bin/bash", "bash", "-c", f.command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  auto next_allocate = std::chrono::steady_clock::now();
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return PrintError(ErrnoMessage(errno, "waitpid"));
    if (std::chrono::steady_clock::now() >= next_allocate) {
      // Keeps the attempt alive (AM expiry); a failure is logged, the command goes on.
      if (auto r = (*rm)->Allocate(0.5f); !r.ok())
        std::cerr << "weft am command: allocate: " << r.status().message() << std::endl;
      next_allocate += std::chrono::milliseconds(f.heartbeat_ms);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code != 0) {
    std::cerr << "weft am command: the command exited with status " << code << std::endl;
    return code;
  }
  if (absl::Status s = (*rm)->Finish(v1::FINAL_SUCCEEDED, "the command exited with status 0");
      !s.ok())
    return PrintError(absl::StrCat("unregistering from the RM: ", s.message()));
  return 0;
}

}  // namespace

void AddAmCommand(CLI::App& app, int* exit_code) {
  CLI::App* group =
      app.add_subcommand("am", "ApplicationMasters (run inside their AM container by the RM)");
  group->require_subcommand(1);
  auto f = std::make_shared<ShellFlags>();
  CLI::App* cmd = group->add_subcommand(
      "shell",
      "The distributed shell: run N containers of a command, retrying failed ones; "
      "reads WEFT_RM_ADDRESS, WEFT_APPLICATION_ID, WEFT_APP_ATTEMPT_ID and the token file WEFT_TOKEN_FILE_AMRM");
  cmd->add_option("--num-containers", f->options.num_containers,
                  "containers to run (with --placement: the spec's counts)");
  cmd->add_option("--command", f->options.command, "each container's shell command")->required();
  cmd->add_option("--placement", f->options.placement_spec,
                  "placement spec, YARN's distributed shell syntax: TAG=N[,CONSTRAINT][:...]");
  cmd->add_option("--node-label", f->options.node_label, "run on nodes of this node label");
  cmd->add_option("--gang", f->options.gang, "ask for containers in gangs of N (all or none)");
  cmd->add_option("--gang-timeout-ms", f->options.gang_timeout_ms,
                  "give up on a gang not placed within this long (0 = never)");
  cmd->add_option("--resize-mb", f->options.resize_mb,
                  "once all run, change every container's memory to each of these MiB in turn")
      ->delimiter(',');
  cmd->add_option("--resize-interval-ms", f->options.resize_interval_ms,
                  "between --resize-mb steps")
      ->capture_default_str();
  cmd->add_option("--memory-mb", f->options.memory_mb, "memory of each container, MiB")
      ->capture_default_str();
  cmd->add_option("--vcores", f->options.vcores, "vcores of each container")->capture_default_str();
  cmd->add_option("--network-mbps", f->options.network_mbps, "network of each container, Mbit/s")
      ->capture_default_str();
  cmd->add_option("--gpu-milli", f->options.gpu_milli,
                  "GPU of each container, thousandths: 1-999 a share of one GPU, k x 1000 whole "
                  "GPUs (docs/gpu.md)")
      ->capture_default_str();
  cmd->add_flag("--gpu-same-group", f->options.gpu_same_group,
                "with --gpu-milli k x 1000: all of a container's GPUs from one topology group");
  cmd->add_option("--max-retries", f->options.max_retries, "retries of a failed container")
      ->capture_default_str();
  cmd->add_option("--poll-interval-ms", f->options.poll_interval_ms,
                  "the longest the RM holds one Allocate call with nothing new (long poll)")
      ->capture_default_str();
  cmd->add_option("--timeout-s", f->timeout_s, "finish FAILED after this long (0 = never)")
      ->capture_default_str()
      ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
  cmd->callback([f, exit_code] { *exit_code = RunShell(*f); });

  auto c = std::make_shared<CommandFlags>();
  CLI::App* command = group->add_subcommand(
      "command",
      "An AM that runs one shell command (what `weft app submit` wraps a command "
      "in): SUCCEEDED when it exits 0; otherwise the attempt fails");
  command->add_option("--command", c->command, "the shell command (run with /bin/bash -c)")
      ->required();
  command->add_option("--heartbeat-ms", c->heartbeat_ms, "between Allocate calls")
      ->capture_default_str();
  command->callback([c, exit_code] { *exit_code = RunCommandAm(*c); });
}

}  // namespace weft::cli
