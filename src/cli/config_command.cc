#include "cli/config_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/files.h"
#include "cli/cli_common.h"
#include "cli/daemon_config.h"
#include "cli/dev_command.h"
#include "cli/gpg_command.h"
#include "cli/nm_command.h"
#include "cli/rm_command.h"
#include "cli/router_command.h"
#include "common/terminal_text.h"
#include "config/yarn_import.h"

namespace weft::cli {
namespace {

constexpr char kImport[] = "config import-yarn: ";

struct ImportYarnFlags {
  std::string yarn_site;
  std::string capacity_scheduler;
  std::string fair_scheduler;
  std::string out_dir;
  bool force = false;
};

int ConfigUsageError(const std::string& message) {
  PrintError(message);
  return 2;
}

absl::StatusOr<config::XmlFile> ReadInput(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return config::XmlFile{path, *std::move(text)};
}

// Writes `text` to `path` (mode 0644) through a temporary file renamed into place.
absl::Status WriteOutput(const std::filesystem::path& path, const std::string& text) {
  return WriteFileAtomically(path.string(), text, 0644);
}

int ImportYarn(const ImportYarnFlags& f) {
  if (f.out_dir.empty()) return ConfigUsageError(absl::StrCat(kImport, "--out-dir is required"));
  if (f.yarn_site.empty() && f.capacity_scheduler.empty() && f.fair_scheduler.empty())
    return ConfigUsageError(absl::StrCat(
        kImport, "give --yarn-site and one of --capacity-scheduler or --fair-scheduler"));
  config::YarnImportInput input;
  for (auto [path, field] : {std::pair{&f.yarn_site, &input.yarn_site},
                             std::pair{&f.capacity_scheduler, &input.capacity_scheduler},
                             std::pair{&f.fair_scheduler, &input.fair_scheduler}}) {
    if (path->empty()) continue;
    auto file = ReadInput(*path);
    if (!file.ok()) return PrintError(absl::StrCat(kImport, file.status().message()));
    *field = *std::move(file);
  }
  auto result = config::ImportYarnConfig(input);
  if (!result.ok()) return PrintError(absl::StrCat(kImport, result.status().message()));

  const std::filesystem::path dir(f.out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return PrintError(absl::StrCat(kImport, "cannot create ", f.out_dir, ": ", ec.message()));
  // One line an item, as printed below: an item quotes the XML, whose values may hold
  // newlines and control characters.
  std::string unconverted;
  for (const std::string& item : result->unconverted)
    absl::StrAppend(&unconverted, EscapeForTerminal(item), "\n");
  const std::vector<std::pair<std::filesystem::path, const std::string*>> outputs = {
      {dir / "scheduler.yaml", &result->scheduler_yaml},
      {dir / "weft.yaml", &result->daemon_yaml},
      {dir / "unconverted.txt", &unconverted}};
  if (!f.force) {
    for (const auto& [path, text] : outputs)
      if (std::filesystem::exists(path, ec))
        return PrintError(
            absl::StrCat(kImport, path.string(), " exists; not overwriting it without --force"));
  }
  for (const auto& [path, text] : outputs)
    if (absl::Status s = WriteOutput(path, *text); !s.ok())
      return PrintError(absl::StrCat(kImport, s.message()));
  std::cout << "wrote " << outputs[0].first.string() << " (weft rm --scheduler-config) and "
            << outputs[1].first.string() << " (daemon flags)\n";
  if (result->unconverted.empty()) {
    std::cout << "everything was converted\n";
  } else {
    std::cout << result->unconverted.size() << " not converted (also in "
              << outputs[2].first.string() << "):\n";
    // One line each: an item quotes the XML, whose values may hold anything.
    for (const std::string& item : result->unconverted)
      std::cout << EscapeForTerminal(item) << "\n";
  }
  return 0;
}

struct ShowFlags {
  std::string daemon;
  bool yaml = false;
};

// The daemons a config file configures, by section (daemon_config.h kDaemonSections).
using AddCommandFn = void (*)(CLI::App&, int*);
const std::map<std::string, AddCommandFn>& DaemonCommands() {
  static const auto* commands =
      new std::map<std::string, AddCommandFn>{{"rm", AddRmCommand},
                                              {"nm", AddNmCommand},
                                              {"router", AddRouterCommand},
                                              {"gpg", AddGpgCommand},
                                              {"dev", AddDevCommand}};
  return *commands;
}

// `weft config show DAEMON [FLAGS...]`: `flags` are the daemon's own (--config among them).
int Show(const ShowFlags& f, const std::vector<std::string>& flags) {
  auto effective = ShowDaemonConfig(DaemonCommands().at(f.daemon), f.daemon, flags);
  if (!effective.ok()) {
    PrintError(absl::StrCat("config show: ", effective.status().message()));
    // A file that is not there, a flag or a file the daemon would refuse: usage errors.
    return effective.status().code() == absl::StatusCode::kInvalidArgument ||
                   effective.status().code() == absl::StatusCode::kNotFound
               ? 2
               : 1;
  }
  if (f.yaml) {
    std::cout << EffectiveConfigYaml(*effective);
  } else {
    std::cout << "weft " << f.daemon << ": config file "
              << (effective->path.empty() ? "none" : effective->path) << "\n";
    PrintTable(EffectiveConfigTable(*effective));
  }
  return 0;
}

}  // namespace

void AddConfigCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand(
      "config", "The daemons' configuration: show a daemon's effective settings, convert YARN's");
  group->require_subcommand(1);
  auto f = std::make_shared<ImportYarnFlags>();
  CLI::App* cmd = group->add_subcommand(
      "import-yarn",
      "Convert YARN's yarn-site.xml and capacity-scheduler.xml or fair-scheduler.xml into "
      "Weft's scheduler.yaml and weft.yaml (daemon flags); list what cannot be converted");
  cmd->add_option("--yarn-site", f->yarn_site, "YARN's yarn-site.xml");
  CLI::Option* cs = cmd->add_option("--capacity-scheduler", f->capacity_scheduler,
                                    "the CapacityScheduler's capacity-scheduler.xml");
  CLI::Option* fs = cmd->add_option("--fair-scheduler", f->fair_scheduler,
                                    "the FairScheduler's allocation file (fair-scheduler.xml)");
  cs->excludes(fs);
  cmd->add_option("--out-dir", f->out_dir,
                  "directory for scheduler.yaml, weft.yaml and unconverted.txt (created)");
  cmd->add_flag("--force", f->force, "overwrite files already in --out-dir");
  cmd->callback([f, exit_code] { *exit_code = ImportYarn(*f); });

  auto show_flags = std::make_shared<ShowFlags>();
  CLI::App* show = group->add_subcommand(
      "show",
      "Print a daemon's effective configuration: every option, its value and where it came from "
      "(default, FILE:LINE of the config file, or flag); the daemon's own flags may follow, "
      "--config among them. Nothing is started");
  std::vector<std::string> sections;
  for (const auto& [name, add] : DaemonCommands()) sections.push_back(name);
  show->add_option("daemon", show_flags->daemon, "rm, nm, router, gpg or dev")
      ->required()
      ->check(CLI::IsMember(sections));
  show->add_flag("--yaml", show_flags->yaml,
                 "print it as a config file (the values set by flags or files as keys, the "
                 "defaults as comments), which --config reads back to the same values");
  show->allow_extras();      // the daemon's flags, parsed as the daemon parses them
  show->fallthrough(false);  // ... all of them, even those named like weft's own
  show->callback(
      [show_flags, show, exit_code] { *exit_code = Show(*show_flags, show->remaining()); });
}

}  // namespace weft::cli
