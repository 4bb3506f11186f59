#include "cli/app_command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/errors.h"
#include "cli/app_logs.h"
#include "cli/cli_common.h"
#include "cli/history_command.h"
#include "cli/progress.h"
#include "common/terminal_text.h"
#include "scheduler/placement_constraint.h"
#include "store/state_names.h"

namespace weft::cli {
namespace {

// Flags every `app` subcommand has.
struct CommonFlags {
  std::string rm_address;
  std::string user;  // --user: act as this user; "" = as oneself (MUNGE says who)
  bool json = false;
};

// --user values go to the RM as gRPC metadata: one line of printable ASCII.
CLI::Validator UserNameValidator() {
  return CLI::Validator(
      [](const std::string& v) {
        absl::Status s = CheckMetadataValue("the user name", v);
        return s.ok() ? std::string() : std::string(s.message());
      },
      "USER");
}

void AddCommonFlags(CLI::App* cmd, CommonFlags* f, bool with_user_flag = true) {
  AddRmOption(cmd, &f->rm_address);
  if (with_user_flag)
    cmd->add_option("--user", f->user,
                    "act as this user: for the RM's proxy users and admin-secret holders "
                    "(default: yourself, as MUNGE authenticates you)")
        ->check(UserNameValidator());
  cmd->add_flag("--json", f->json, "print protobuf JSON instead of a human table");
}

bool IsFinal(v1::ApplicationState state) {
  return state == v1::APP_FINISHED || state == v1::APP_FAILED || state == v1::APP_KILLED;
}

bool Succeeded(const v1::ApplicationReport& r) {
  return r.state() == v1::APP_FINISHED && r.final_status() == v1::FINAL_SUCCEEDED;
}

// Parses "RUNNING,FINISHED" (or APP_RUNNING, any case) into states.
absl::StatusOr<std::vector<v1::ApplicationState>> ParseStates(const std::string& text) {
  std::vector<v1::ApplicationState> states;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::string name = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(item));
    if (!absl::StartsWith(name, "APP_")) name = absl::StrCat("APP_", name);
    v1::ApplicationState state;
    if (!v1::ApplicationState_Parse(name, &state) || state == v1::APPLICATION_STATE_UNSPECIFIED)
      return absl::InvalidArgumentError(
          absl::StrCat("--state: unknown application state '", item,
                       "' (one of NEW, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED)"));
    states.push_back(state);
  }
  return states;
}

// The one line that ends a wait, on stdout (escaped: the diagnostics may hold anything).
std::string FinalLine(const v1::ApplicationReport& r) {
  std::string line = absl::StrCat(r.application_id(), " ", store::ReportedAppState(r.state()), " ",
                                  store::ReportedFinalStatus(r.final_status()));
  if (!r.diagnostics().empty()) absl::StrAppend(&line, ": ", r.diagnostics());
  return EscapeForTerminal(line);
}

// Polls GetApplication until the app is final or `timeout_s` (> 0) passes; with several RMs
// each poll rides out a failover (RmClient::Call). Progress (state, containers done / running /
// pending) goes to stderr: one rewritten line with a bar on a terminal, cleared at the end; a
// line when the state or the counts change, at most one per 2 s, otherwise (cli/progress.h).
// Returns the exit code: 0 only for FINISHED + SUCCEEDED.
int WaitForApp(RmClient& client, const std::string& app_id, double timeout_s, bool json) {
  const bool tty = !json && isatty(STDERR_FILENO) == 1;
  const absl::Time start = absl::Now();
  ProgressPrinter progress(tty, tty ? TerminalWidth(STDERR_FILENO) : 80);
  while (true) {
    auto report = client.GetApplication(app_id);
    if (!report.ok()) {
      std::cerr << progress.Finish();
      return PrintError(report.status().message());
    }
    double elapsed_s = absl::ToDoubleSeconds(absl::Now() - start);
    if (!json) {
      std::cerr << progress.Update({EscapeForTerminal(app_id), store::ReportedAppState(report->state()),
                                    report->current_attempt(), report->completed_containers(),
                                    report->running_containers(), report->pending_containers(),
                                    static_cast<int64_t>(elapsed_s)},
                                   static_cast<int64_t>(elapsed_s * 1000))
                << std::flush;
    }
    if (IsFinal(report->state())) {
      std::cerr << progress.Finish() << std::flush;
      if (json) {
        std::cout << ToJson(*report) << std::endl;
      } else {
        std::cout << FinalLine(*report) << std::endl;
      }
      return Succeeded(*report) ? 0 : 1;
    }
    if (timeout_s > 0 && elapsed_s >= timeout_s) {
      std::cerr << progress.Finish();
      return PrintError(absl::StrCat("timed out after ", timeout_s, " s waiting for ", app_id,
                                     " (still ", store::ReportedAppState(report->state()), ")"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

// ---- submit and run-shell.

absl::StatusOr<std::string> SelfExecutable() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    return ErrnoError(errno, "cannot read /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

struct SubmitFlags {
  CommonFlags common;
  std::string command;
  std::string name = "weft-app";
  std::string queue;
  std::string view_acl;  // YARN's VIEW_APP ACL
  int priority = 0;
  int64_t am_memory_mb = 512;
  int am_vcores = 1;
  int max_attempts = 0;
  bool raw = false;  // the command is an AM itself: submit it unwrapped
  bool wait = false;
  double timeout_s = 0;
  std::string application_type = "WEFT";
  // AdaptCont (seed 002): "auto" lets the RM size the AM from the input; an explicit
  // --am-memory-mb / --am-vcores still wins.
  std::string am_resource;
  int64_t input_bytes = 0;
  int64_t split_bytes = 0;
  int64_t reduce_tasks = 0;
  CLI::Option* am_memory_option = nullptr;
  CLI::Option* am_vcores_option = nullptr;
  // RAS (seed 003): a completion-time goal, seconds from submission (0 = none), and phases
  // "NAME:PRIORITY[:reduce][:cpu=C,io=I,memory=M][:length-s=S]".
  double goal_s = 0;
  std::vector<std::string> phases;
};

// "map:1:cpu=0.5,io=0.2,memory=0.25" or "reduce:2:reduce:cpu=0.1,io=0.6,memory=0.3:length-s=40".
absl::StatusOr<v1::PhaseProfile> ParsePhase(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  v1::PhaseProfile phase;
  int32_t priority = 0;
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--phase '", text, "': ", why,
        " (expected NAME:PRIORITY[:reduce][:cpu=C,io=I,memory=M][:length-s=S], shares in [0, 1], "
        "S > 0 seconds)"));
  };
  if (parts.size() < 2 || parts[0].empty()) return bad("no name and priority");
  if (!absl::SimpleAtoi(parts[1], &priority)) return bad("the priority is not an integer");
  phase.set_name(parts[0]);
  phase.set_priority(priority);
  for (size_t i = 2; i < parts.size(); ++i) {
    if (parts[i] == "reduce") {
      phase.set_reduce_like(true);
      continue;
    }
    if (parts[i] == "map") continue;
    if (absl::StartsWith(parts[i], "length-s=")) {
      double s = 0;
      const std::string value = parts[i].substr(9);
      if (!absl::SimpleAtod(value, &s) || !(s > 0) || s > 1e9)
        return bad(absl::StrCat("bad task length '", value, "'"));
      phase.set_expected_task_ms(std::max<int64_t>(1, std::llround(s * 1000)));
      continue;
    }
    phase.set_has_usage(true);
    for (absl::string_view item : absl::StrSplit(parts[i], ',')) {
      std::pair<std::string, std::string> kv = absl::StrSplit(item, '=');
      double value = 0;
      if (!absl::SimpleAtod(kv.second, &value) || !(value >= 0 && value <= 1))  // nan too
        return bad(absl::StrCat("bad share '", item, "'"));
      if (kv.first == "cpu") {
        phase.set_cpu(value);
      } else if (kv.first == "io") {
        phase.set_io(value);
      } else if (kv.first == "memory") {
        phase.set_memory(value);
      } else {
        return bad(absl::StrCat("unknown resource '", kv.first, "'"));
      }
    }
  }
  return phase;
}

// NewApplication + SubmitApplication of `f` with AM command `am_command`; prints the id (or JSON
// with --json and no --wait) and waits when asked. Returns the exit code.
int Submit(const SubmitFlags& f, const std::string& am_command) {
  if (am_command.empty()) return PrintError("--command is empty");
  if (f.am_memory_mb <= 0 || f.am_vcores <= 0)
    return PrintError("--am-memory-mb and --am-vcores must be > 0");
  if (f.max_attempts < 0) return PrintError("--max-attempts must be >= 0");
  const bool explicit_am = (f.am_memory_option != nullptr && f.am_memory_option->count() > 0) ||
                           (f.am_vcores_option != nullptr && f.am_vcores_option->count() > 0);
  if (!f.am_resource.empty() && f.am_resource != "auto")
    return PrintError(absl::StrCat("--am-resource '", f.am_resource, "': only 'auto' is known"));
  const bool auto_am = f.am_resource == "auto" && !explicit_am;
  if (f.am_resource == "auto" && f.input_bytes <= 0)
    return PrintError("--am-resource auto needs --input-bytes N (the job's input, bytes)");
  if (f.split_bytes < 0 || f.reduce_tasks < 0)
    return PrintError("--split-bytes and --reduce-tasks must be >= 0");
  // FiniteNumberValidator checked the flag's text; this keeps a goal that came another way
  // from overflowing the ms below.
  if (absl::Status s = CheckFiniteNumber(absl::StrCat(f.goal_s), "seconds", 0, kMaxFlagSeconds);
      !s.ok())
    return PrintError(absl::StrCat("--goal-s: ", s.message()));
  v1::JobProfile profile;
  if (f.goal_s > 0)
    profile.set_completion_goal_ms(absl::ToUnixMillis(absl::Now()) +
                                   static_cast<int64_t>(f.goal_s * 1000));
  for (const std::string& text : f.phases) {
    auto phase = ParsePhase(text);
    if (!phase.ok()) return PrintError(phase.status().message());
    *profile.add_phases() = *phase;
  }
  v1::SubmitApplicationRequest req;
  v1::ApplicationSubmissionContext* c = req.mutable_context();
  c->set_name(f.name);
  c->set_queue(f.queue);
  c->set_view_acl(f.view_acl);
  c->set_priority(f.priority);
  if (auto_am) {
    c->mutable_am_sizing()->set_enabled(true);
    c->mutable_am_sizing()->set_input_bytes(f.input_bytes);
    c->mutable_am_sizing()->set_split_bytes(f.split_bytes);
    c->mutable_am_sizing()->set_reduce_tasks(f.reduce_tasks);
  } else {
    (*c->mutable_am_resource()->mutable_values())["memory-mb"] = f.am_memory_mb;
    (*c->mutable_am_resource()->mutable_values())["vcores"] = f.am_vcores;
  }
  *c->mutable_profile() = profile;
  c->mutable_am_container_spec()->add_command(am_command);
  c->set_max_app_attempts(f.max_attempts);
  c->set_application_type(f.application_type);
  RmClient client(f.common.rm_address, f.common.user);
  v1::NewApplicationResponse app;
  // An application id is good only on the RM that handed it out: when a failover moves the
  // submission to another RM, which answers NotFound for it, that RM is asked for a new id.
  for (int round = 0;; ++round) {
    if (absl::Status s = client.Call(&v1::ClientService::Stub::NewApplication,
                                     v1::NewApplicationRequest(), &app);
        !s.ok())
      return PrintError(s.message());
    const std::string handed_out_by = client.address();
    c->set_application_id(app.application_id());
    absl::Status s = client.SubmitApplication(req);
    if (s.ok()) break;
    if (s.code() == absl::StatusCode::kNotFound && client.address() != handed_out_by && round < 2)
      continue;
    return PrintError(absl::StrCat("submitting ", app.application_id(), " to queue '",
                                   f.queue.empty() ? "default" : f.queue, "': ", s.message()));
  }
  if (!f.wait) {
    if (f.common.json) {
      v1::GetApplicationRequest id;  // {"applicationId": "..."}
      id.set_application_id(app.application_id());
      std::cout << ToJson(id) << std::endl;
    } else {
      std::cout << EscapeForTerminal(app.application_id()) << std::endl;
    }
    return 0;
  }
  if (!f.common.json) std::cout << EscapeForTerminal(app.application_id()) << std::endl;
  return WaitForApp(client, app.application_id(), f.timeout_s, f.common.json);
}

// `app submit`: CMD as is with --raw, else wrapped in `weft am command`.
int SubmitCommand(const SubmitFlags& f) {
  if (f.command.empty()) return PrintError("--command is empty");
  if (f.raw) return Submit(f, f.command);
  auto self = SelfExecutable();
  if (!self.ok()) return PrintError(self.status().message());
  return Submit(f,
                absl::StrCat(ShellQuote(*self), " am command --command ", ShellQuote(f.command)));
}

void AddSubmitFlags(CLI::App* cmd, SubmitFlags* f) {
  cmd->add_option("--name", f->name, "application name")->capture_default_str();
  cmd->add_option("--queue", f->queue, "leaf queue (default: the RM's 'default')");
  cmd->add_option("--view-acl", f->view_acl,
                  "who else may see the app's diagnostics, AM logs and attempts: "
                  "'user1,user2 group1,group2' (besides you, queue and cluster admins)");
  cmd->add_option("--priority", f->priority, "application priority")->capture_default_str();
  f->am_memory_option =
      cmd->add_option("--am-memory-mb", f->am_memory_mb, "memory of the AM container, MiB")
          ->capture_default_str();
  f->am_vcores_option = cmd->add_option("--am-vcores", f->am_vcores, "vcores of the AM container")
                            ->capture_default_str();
  cmd->add_option("--am-resource", f->am_resource,
                  "'auto': the RM sizes the AM from the input with AdaptCont (seed 002); an "
                  "explicit --am-memory-mb/--am-vcores wins");
  cmd->add_option("--input-bytes", f->input_bytes, "with --am-resource auto: the job's input");
  cmd->add_option("--split-bytes", f->split_bytes,
                  "with --am-resource auto: bytes per task (0 = the RM's default, 64 MiB)");
  cmd->add_option("--reduce-tasks", f->reduce_tasks,
                  "with --am-resource auto: reduce-like tasks after the map-like ones");
  cmd->add_option("--goal-s", f->goal_s,
                  "completion-time goal, seconds from now (the ras policy, seed 003)")
      ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
  cmd->add_option("--phase", f->phases,
                  "a phase's profile for ras, NAME:PRIORITY[:reduce][:cpu=C,io=I,memory=M]"
                  "[:length-s=S] (shares of a node; S: one task's expected run time, used "
                  "until one has finished); repeatable");
  cmd->add_option("--max-attempts", f->max_attempts,
                  "AM attempts before the app fails (0 = the RM's default; capped by the RM)")
      ->capture_default_str();
  cmd->add_flag("--wait", f->wait, "wait for the app to end; exit 0 only if it SUCCEEDED");
  cmd->add_option("--timeout-s", f->timeout_s, "with --wait: give up after this long (0 = never)")
      ->capture_default_str()
      ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
}

struct RunShellFlags {
  SubmitFlags submit;
  int num_containers = 1;
  std::string command;
  int64_t memory_mb = 256;
  int vcores = 1;
  int64_t network_mbps = 0;
  int64_t gpu_milli = 0;
  bool gpu_same_group = false;
  int max_retries = 3;
  double am_timeout_s = 0;
  std::string placement;
  std::string node_label;
  int gang = 0;
  int64_t gang_timeout_ms = 0;
  std::vector<int64_t> resize_mb;
  int64_t resize_interval_ms = 5000;
};

int RunShell(const RunShellFlags& f) {
  if (f.placement.empty() && f.num_containers < 1)
    return PrintError("--num-containers must be >= 1 (or give --placement)");
  if (!f.placement.empty()) {
    // Checked here, before anything is submitted: a bad spec names its fault at once.
    if (auto spec = scheduler::ParsePlacementSpec(f.placement); !spec.ok())
      return PrintError(absl::StrCat("--placement: ", spec.status().message()));
  }
  if (f.gang < 0) return PrintError(absl::StrCat("--gang ", f.gang, " is negative"));
  if (f.gang_timeout_ms < 0)
    return PrintError(absl::StrCat("--gang-timeout-ms ", f.gang_timeout_ms, " is negative"));
  if (f.command.empty()) return PrintError("--command is empty");
  if (f.memory_mb <= 0 || f.vcores <= 0) return PrintError("--memory-mb and --vcores must be > 0");
  if (f.network_mbps < 0)
    return PrintError(absl::StrCat("--network-mbps ", f.network_mbps, " is negative"));
  if (f.gpu_milli < 0 || (f.gpu_milli > 1000 && f.gpu_milli % 1000 != 0))
    return PrintError(absl::StrCat("--gpu-milli ", f.gpu_milli,
                                   " must be a share of one GPU (1-1000) or whole GPUs (a "
                                   "multiple of 1000)"));
  if (f.max_retries < 0) return PrintError("--max-retries must be >= 0");
  auto self = SelfExecutable();
  if (!self.ok()) return PrintError(self.status().message());
  std::string am_command =
      absl::StrCat(ShellQuote(*self), " am shell --num-containers ", f.num_containers,
                   " --command ", ShellQuote(f.command), " --memory-mb ", f.memory_mb, " --vcores ",
                   f.vcores, " --network-mbps ", f.network_mbps, " --max-retries ", f.max_retries);
  if (f.gpu_milli > 0) absl::StrAppend(&am_command, " --gpu-milli ", f.gpu_milli);
  if (f.gpu_same_group) absl::StrAppend(&am_command, " --gpu-same-group");
  if (f.am_timeout_s > 0) absl::StrAppend(&am_command, " --timeout-s ", f.am_timeout_s);
  if (!f.placement.empty()) absl::StrAppend(&am_command, " --placement ", ShellQuote(f.placement));
  if (!f.node_label.empty())
    absl::StrAppend(&am_command, " --node-label ", ShellQuote(f.node_label));
  if (f.gang > 0)
    absl::StrAppend(&am_command, " --gang ", f.gang, " --gang-timeout-ms ", f.gang_timeout_ms);
  for (int64_t mb : f.resize_mb) {
    if (mb <= 0) return PrintError(absl::StrCat("--resize-mb ", mb, " is not positive"));
  }
  if (!f.resize_mb.empty())
    absl::StrAppend(&am_command, " --resize-mb ", absl::StrJoin(f.resize_mb, ","),
                    " --resize-interval-ms ", f.resize_interval_ms);
  return Submit(f.submit, am_command);
}

// The transfer job, in the spirit of TestDFSIO (seed 000 §IV): K containers of the distributed
// shell, each sending S megabytes to a sink with `weft transfer send`, with network-mbps each.
// Its makespan is the app's elapsed time, printed when it ends.
struct RunTransferFlags {
  RunShellFlags shell;
  std::string to;
  double megabytes = 100;
};

int RunTransfer(RunTransferFlags f) {
  if (f.to.empty()) return PrintError("--to HOST:PORT (the sink) is required");
  if (f.megabytes <= 0)
    return PrintError(absl::StrCat("--megabytes ", f.megabytes, " must be > 0"));
  auto self = SelfExecutable();
  if (!self.ok()) return PrintError(self.status().message());
  f.shell.command = absl::StrCat(ShellQuote(*self), " transfer send --to ", ShellQuote(f.to),
                                 " --megabytes ", f.megabytes);
  return RunShell(f.shell);
}

// ---- list, status, kill, wait.

struct ListFlags {
  CommonFlags common;
  std::string states;
  std::string queue;
  std::string user;
  int limit = 0;
  // --finished: from the history server (cli/history_command.h) instead of the RM.
  bool finished = false;
  std::string since;
  std::string history;
};

int List(const ListFlags& f) {
  if (f.finished)
    return ListFinishedApps({f.history, f.since, f.user, f.queue, f.states, f.limit, f.common.json});
  if (!f.since.empty()) return PrintError("--since goes with --finished");
  v1::ListApplicationsRequest req;
  auto states = ParseStates(f.states);
  if (!states.ok()) return PrintError(states.status().message());
  for (v1::ApplicationState s : *states) req.add_states(s);
  req.set_queue(f.queue);
  req.set_user(f.user);
  req.set_limit(f.limit);
  RmClient client(f.common.rm_address, f.common.user);
  v1::ListApplicationsResponse resp;
  if (absl::Status s = client.Call(&v1::ClientService::Stub::ListApplications, req, &resp); !s.ok())
    return PrintError(s.message());
  if (f.common.json) {
    std::cout << ToJson(resp) << std::endl;
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"APPLICATION-ID", "NAME", "USER", "QUEUE", "STATE",
                                                 "FINAL-STATUS", "PROGRESS", "ATTEMPT",
                                                 "CONTAINERS", "SUBMITTED"}};
  for (const v1::ApplicationReport& r : resp.applications())
    rows.push_back({r.application_id(), r.name(), r.user(), r.queue(), store::ReportedAppState(r.state()),
                    store::ReportedFinalStatus(r.final_status()),
                    absl::StrCat(static_cast<int>(r.progress() * 100 + 0.5), "%"),
                    absl::StrCat(r.current_attempt()), absl::StrCat(r.running_containers()),
                    FormatTimeMs(r.submit_time_ms())});
  PrintTable(rows);
  return 0;
}

struct IdFlags {
  CommonFlags common;
  std::string app_id;
  double timeout_s = 0;
  std::string diagnostics;
  // `app status`: the history server asked when the RM does not know the app; "" = none (then
  // $WEFT_HISTORY_ADDRESS, if set). Never a default address: the CLI's credential goes only
  // where the user said a history server is, as YARN asks its history service only when
  // configured.
  std::string history;
};

int Status(const IdFlags& f) {
  RmClient client(f.common.rm_address, f.common.user);
  absl::StatusOr<v1::ApplicationReport> r = client.GetApplication(f.app_id);
  // An app the RM does not hold: the history server's record, as YARN's client falls back.
  std::string from;
  const std::string history = !f.history.empty() ? f.history : ConfiguredHistoryAddress();
  if (r.status().code() == absl::StatusCode::kNotFound && history.empty()) {
    return PrintError(absl::StrCat(r.status().message(),
                                   " (give --history URL or set WEFT_HISTORY_ADDRESS to ask the "
                                   "history server for an application the RM no longer holds)"));
  }
  if (r.status().code() == absl::StatusCode::kNotFound) {
    absl::StatusOr<v1::ApplicationReport> finished = FinishedAppReport(history, f.app_id);
    if (!finished.ok()) {
      return PrintError(absl::StrCat(
          r.status().message(), " by the RM, and ",
          finished.status().code() == absl::StatusCode::kNotFound
              ? ""
              : "the history server could not tell: ",
          finished.status().message()));
    }
    r = std::move(finished);
    from = absl::StrCat("the history server at ", history,
                        " (the RM no longer holds this application)");
  }
  if (!r.ok()) return PrintError(r.status().message());
  if (f.common.json) {
    std::cout << ToJson(*r) << std::endl;
    if (!from.empty()) std::cerr << "weft: from " << from << std::endl;
    return 0;
  }
  std::string am_resource = FormatResource(r->am_resource());
  std::string am_sizing = r->am_sizing_decisions().empty()
                              ? "by the client"
                              : absl::StrJoin(r->am_sizing_decisions(), " | ");
  if (!from.empty()) am_resource = am_sizing = "-";  // not in the history's record
  std::vector<std::vector<std::string>> rows = {
      {"Application-Id:", r->application_id()},
      {"Name:", r->name()},
      {"User:", r->user()},
      {"Queue:", r->queue()},
      {"Priority:", absl::StrCat(r->priority())},
      {"State:", store::ReportedAppState(r->state())},
      {"Final-Status:", store::ReportedFinalStatus(r->final_status())},
      {"Progress:", absl::StrCat(static_cast<int>(r->progress() * 100 + 0.5), "%")},
      {"Attempt:", absl::StrCat(r->current_attempt())},
      {"AM-Host:", r->am_host().empty() ? "-" : r->am_host()},
      {"Running-Containers:", absl::StrCat(r->running_containers())},
      {"Allocated:", FormatResource(r->allocated())},
      {"AM-Resource:", am_resource},
      {"AM-Sizing:", am_sizing},
      {"Goal:", r->completion_goal_ms() > 0 ? FormatTimeMs(r->completion_goal_ms()) : "-"},
      {"Submitted:", FormatTimeMs(r->submit_time_ms())},
      {"Started:", FormatTimeMs(r->start_time_ms())},
      {"Finished:", FormatTimeMs(r->finish_time_ms())},
      {"Diagnostics:", r->diagnostics()},
  };
  if (!from.empty()) rows.push_back({"From:", from});
  PrintTable(rows);
  return 0;
}

int Kill(const IdFlags& f) {
  RmClient client(f.common.rm_address, f.common.user);
  v1::KillApplicationRequest req;
  req.set_application_id(f.app_id);
  req.set_diagnostics(f.diagnostics.empty()
                          ? absl::StrCat("killed by user ",
                                         f.common.user.empty() ? DefaultUser() : f.common.user,
                                         " from the CLI")
                          : f.diagnostics);
  v1::KillApplicationResponse resp;
  // Killing is idempotent (a final application's kill is OK): a retry after a failover is safe,
  // and so is asking again until the kill completed (a federated app's, once its home record
  // says it ended), as YARN's client does.
  const absl::Time start = absl::Now();
  bool told = false;
  while (true) {
    if (absl::Status s = client.Call(&v1::ClientService::Stub::KillApplication, req, &resp);
        !s.ok())
      return PrintError(s.message());
    if (resp.kill_completed()) break;
    const double elapsed_s = absl::ToDoubleSeconds(absl::Now() - start);
    if (f.timeout_s > 0 && elapsed_s >= f.timeout_s)
      return PrintError(absl::StrCat(
          "the RM took the kill of ", f.app_id, " but it has not completed after ", f.timeout_s,
          " s: its end waits to be written into its home record in the federation store; run "
          "the kill again, or see `weft app status`"));
    if (!told && !f.common.json) {
      std::cerr << "waiting for " << EscapeForTerminal(f.app_id) << " to be killed" << std::endl;
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (f.common.json) {
    std::cout << ToJson(resp) << std::endl;
  } else {
    std::cout << "killed " << EscapeForTerminal(f.app_id) << std::endl;
  }
  return 0;
}

int Wait(const IdFlags& f) {
  RmClient client(f.common.rm_address, f.common.user);
  return WaitForApp(client, f.app_id, f.timeout_s, f.common.json);
}

}  // namespace

void AddAppCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand("app", "Submit, list, inspect, kill and wait for apps");
  group->require_subcommand(1);

  {
    auto f = std::make_shared<SubmitFlags>();
    CLI::App* cmd = group->add_subcommand("submit", "Submit an application; prints its id");
    AddCommonFlags(cmd, &f->common);
    cmd->add_option("--command", f->command, "the AM's shell command (run with /bin/bash -c)")
        ->required();
    AddSubmitFlags(cmd, f.get());
    cmd->add_flag("--raw", f->raw,
                  "CMD is an ApplicationMaster itself (registers and unregisters with the RM); "
                  "without it CMD runs under `weft am command`, SUCCEEDED when it exits 0");
    cmd->callback([f, exit_code] { *exit_code = SubmitCommand(*f); });
  }
  {
    auto f = std::make_shared<RunShellFlags>();
    f->submit.name = "distributed-shell";
    f->submit.am_memory_mb = 256;
    f->submit.application_type = "DISTRIBUTED_SHELL";
    CLI::App* cmd = group->add_subcommand(
        "run-shell", "Run N containers of a shell command (the distributed-shell AM)");
    AddCommonFlags(cmd, &f->submit.common);
    cmd->add_option("--num-containers", f->num_containers,
                    "containers to run (with --placement: the spec's counts)");
    cmd->add_option("--command", f->command, "each container's shell command")->required();
    cmd->add_option("--placement", f->placement,
                    "placement spec in YARN's distributed shell syntax, e.g. "
                    "'zk=3,NOTIN,NODE,zk:web=2,IN,RACK,all/zk' (docs/scheduler.md)");
    cmd->add_option("--node-label", f->node_label, "run only on nodes of this node label");
    cmd->add_option("--gang", f->gang,
                    "ask for the containers in gangs of N: each placed all together or not at all");
    cmd->add_option("--gang-timeout-ms", f->gang_timeout_ms,
                    "with --gang: give up on a gang not placed within this long (0 = never)")
        ->capture_default_str();
    cmd->add_option("--resize-mb", f->resize_mb,
                    "dynamic negotiation: once all run, change every container's memory to each "
                    "of these MiB in turn (e.g. 512,128)")
        ->delimiter(',');
    cmd->add_option("--resize-interval-ms", f->resize_interval_ms, "between --resize-mb steps")
        ->capture_default_str();
    cmd->add_option("--memory-mb", f->memory_mb, "memory of each container, MiB")
        ->capture_default_str();
    cmd->add_option("--vcores", f->vcores, "vcores of each container")->capture_default_str();
    cmd->add_option("--network-mbps", f->network_mbps,
                    "egress bandwidth of each container, Mbit/s: its guaranteed HTB rate")
        ->capture_default_str();
    cmd->add_option("--gpu-milli", f->gpu_milli,
                    "GPU of each container, thousandths: 1-999 a share of one GPU, k x 1000 "
                    "whole GPUs (docs/gpu.md)")
        ->capture_default_str();
    cmd->add_flag("--gpu-same-group", f->gpu_same_group,
                  "with --gpu-milli k x 1000: all of a container's GPUs from one topology group "
                  "(NVLink / PCIe switch)");
    cmd->add_option("--max-retries", f->max_retries, "retries of a failed container")
        ->capture_default_str();
    cmd->add_option("--am-timeout-s", f->am_timeout_s,
                    "the AM gives up (FAILED) after this long (0 = never)")
        ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
    AddSubmitFlags(cmd, &f->submit);
    cmd->callback([f, exit_code] { *exit_code = RunShell(*f); });
  }
  {
    auto f = std::make_shared<RunTransferFlags>();
    f->shell.submit.name = "transfer";
    f->shell.submit.am_memory_mb = 256;
    f->shell.submit.application_type = "TRANSFER";
    f->shell.memory_mb = 128;
    f->shell.max_retries = 0;
    CLI::App* cmd = group->add_subcommand(
        "run-transfer",
        "The transfer job: K containers each sending S MB to a sink (`weft transfer sink`); "
        "each container's stdout has its throughput per second");
    AddCommonFlags(cmd, &f->shell.submit.common);
    cmd->add_option("--num-containers", f->shell.num_containers, "senders (K)")->required();
    cmd->add_option("--to", f->to, "the sink, HOST:PORT")->required();
    cmd->add_option("--megabytes", f->megabytes, "what each sender sends (S), MB")
        ->capture_default_str()
        ->check(FiniteNumberValidator("MB", 0, 1e12));
    cmd->add_option("--network-mbps", f->shell.network_mbps,
                    "egress bandwidth of each sender, Mbit/s (its guaranteed rate)")
        ->capture_default_str();
    cmd->add_option("--memory-mb", f->shell.memory_mb, "memory of each sender, MiB")
        ->capture_default_str();
    cmd->add_option("--vcores", f->shell.vcores, "vcores of each sender")->capture_default_str();
    AddSubmitFlags(cmd, &f->shell.submit);
    cmd->callback([f, exit_code] { *exit_code = RunTransfer(*f); });
  }
  {
    auto f = std::make_shared<ListFlags>();
    CLI::App* cmd = group->add_subcommand("list", "List applications");
    AddRmOption(cmd, &f->common.rm_address);
    cmd->add_flag("--json", f->common.json, "print protobuf JSON instead of a human table");
    cmd->add_option("--state", f->states, "only these states, e.g. RUNNING,ACCEPTED");
    cmd->add_option("--queue", f->queue, "only this queue");
    cmd->add_option("--user", f->user, "only this user's applications")
        ->check(UserNameValidator());
    cmd->add_option("--limit", f->limit, "at most this many (0 = all)");
    cmd->add_flag("--finished", f->finished,
                  "finished applications, from the history server (`weft history`)");
    cmd->add_option("--since", f->since,
                    "with --finished: those that finished from 7d, 12h, an ISO date or ms ago");
    AddHistoryOption(cmd, &f->history);
    cmd->callback([f, exit_code] { *exit_code = List(*f); });
  }
  {
    auto f = std::make_shared<IdFlags>();
    CLI::App* cmd = group->add_subcommand(
        "status", "Show one application's report (from the history server when the RM no longer "
                  "holds it)");
    AddCommonFlags(cmd, &f->common, /*with_user_flag=*/false);
    cmd->add_option("ID", f->app_id, "application id")->required();
    cmd->add_option("--history", f->history,
                    "when the RM no longer holds the app, ask this history server, "
                    "http://HOST:PORT (default $WEFT_HISTORY_ADDRESS; none when unset)");
    cmd->callback([f, exit_code] { *exit_code = Status(*f); });
  }
  {
    auto f = std::make_shared<IdFlags>();
    CLI::App* cmd = group->add_subcommand("kill", "Kill an application");
    AddCommonFlags(cmd, &f->common);
    cmd->add_option("ID", f->app_id, "application id")->required();
    cmd->add_option("--diagnostics", f->diagnostics, "why (recorded in the app's diagnostics)");
    f->timeout_s = 60;
    cmd->add_option("--timeout-s", f->timeout_s,
                    "give up waiting for the kill to complete after this long (0 = never)")
        ->capture_default_str()
        ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
    cmd->callback([f, exit_code] { *exit_code = Kill(*f); });
  }
  {
    auto f = std::make_shared<IdFlags>();
    CLI::App* cmd = group->add_subcommand(
        "wait", "Wait for an application to end; exit 0 only if it FINISHED and SUCCEEDED");
    AddCommonFlags(cmd, &f->common, /*with_user_flag=*/false);
    cmd->add_option("ID", f->app_id, "application id")->required();
    cmd->add_option("--timeout-s", f->timeout_s, "give up after this long (0 = never)")
        ->capture_default_str()
        ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
    cmd->callback([f, exit_code] { *exit_code = Wait(*f); });
  }
  AddAppLogsCommand(group, exit_code);
}

}  // namespace weft::cli
