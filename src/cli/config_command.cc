#include "cli/config_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/cli_common.h"
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

int UsageError(const std::string& message) {
  PrintError(message);
  return 2;
}

absl::StatusOr<config::XmlFile> ReadInput(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream s;
  s << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading ", path));
  return config::XmlFile{path, s.str()};
}

// Writes `text` to `path` through a temporary file renamed into place.
absl::Status WriteOutput(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot write ", path.string(), ": ", ec.message()));
  return absl::OkStatus();
}

int ImportYarn(const ImportYarnFlags& f) {
  if (f.out_dir.empty()) return UsageError(absl::StrCat(kImport, "--out-dir is required"));
  if (f.yarn_site.empty() && f.capacity_scheduler.empty() && f.fair_scheduler.empty())
    return UsageError(absl::StrCat(
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
  std::string unconverted = absl::StrJoin(result->unconverted, "\n");
  if (!unconverted.empty()) unconverted += "\n";
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
              << outputs[2].first.string() << "):\n"
              << unconverted;
  }
  return 0;
}

}  // namespace

void AddConfigCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand("config", "Convert other resource managers' configuration");
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
}

}  // namespace weft::cli
