// Copyright Weft authors. One configuration file for the daemons (`weft rm`, `weft nm`,
// `weft router`, `weft gpg`, `weft dev`): a YAML mapping with one section per daemon, named after
// its subcommand, whose keys are that daemon's long flags without "--":
//
//   rm:
//     port: 8032
//     resource-limit: [network-mbps:1:200]   # a repeatable flag takes a list (or one value)
//     http-enable-writes: true               # a flag without a value takes true or false
//   nm:
//     rm: 127.0.0.1:8032
//
// The file is --config PATH when given (it must exist), else $WEFT_CONFIG when set (it must
// exist), else /etc/weft/weft.yaml when it exists. A flag on the command line overrides the
// file; the file overrides the built-in default. A daemon reads only its own section, but every
// section must be a known daemon's and every key one of that daemon's flags. The keys are the
// CLI11 options of the daemon's subcommand, walked generically: a flag added to a daemon is a
// key of its section with no change here. Values go through the option's own parsing and checks
// exactly as on the command line; they are taken verbatim (a relative path is relative to the
// daemon's working directory, as on the command line).
#ifndef WEFT_CLI_DAEMON_CONFIG_H_
#define WEFT_CLI_DAEMON_CONFIG_H_

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"

namespace weft::cli {

// The file read when neither --config nor $WEFT_CONFIG names one (skipped when absent).
inline constexpr char kDefaultConfigPath[] = "/etc/weft/weft.yaml";
// The environment variable naming the config file when --config is not given.
inline constexpr char kConfigEnvVar[] = "WEFT_CONFIG";
// The exit code of a daemon whose config file is refused (a usage error).
inline constexpr int kConfigErrorExitCode = 2;
// The sections a config file may have: the daemons' subcommand names.
inline constexpr std::array<const char*, 5> kDaemonSections = {"rm", "nm", "router", "gpg", "dev"};

// A config error as CLI11 reports errors: main() prints its message and exits with
// kConfigErrorExitCode.
class ConfigFileError : public CLI::ParseError {
 public:
  explicit ConfigFileError(std::string message)
      : CLI::ParseError("ConfigFileError", std::move(message), kConfigErrorExitCode) {}
};

// One option of a daemon and where its effective value came from.
struct OptionSetting {
  std::string key;  // the long flag name without "--", e.g. "port"
  // The value as CLI11 holds it when set by a flag or the file: one item for a scalar or a flag
  // ("true"/"false"), the items of a repeatable option (a comma-separated value split); empty
  // when at the default.
  std::vector<std::string> values;
  // The built-in default as text (CLI11's rendering: "[a,b]" for a list); "" when it has none
  // or is empty. Filled by ShowDaemonConfig only.
  std::string default_value;
  bool flag = false;      // takes no value on the command line: true or false in a file
  bool list = false;      // repeatable: a YAML list (or a single value) in a file
  bool required = false;  // must be given, on the command line or in the file
  std::string source;     // "default", "flag" (the command line) or "FILE:LINE"
};

// A daemon's options after its command line and its config file.
struct EffectiveConfig {
  std::string daemon;                  // the subcommand: rm, nm, ...
  std::string path;                    // the config file read; "" when none
  std::vector<OptionSetting> options;  // in the order the daemon declares them
};

// Makes daemon subcommand `cmd` (named after its section) read the config file once its command
// line is parsed, before CLI11 checks its required() options (the file may give them) and runs
// its callback: adds `--config PATH`, whose callback applies the file (ApplyDaemonConfig). Call
// it once cmd's options are added (options added later are keys too). A config error throws
// ConfigFileError out of the parse, "FILE:LINE: what" (or the missing file), so nothing of the
// daemon runs. With --help the file is not read.
void AddDaemonConfig(CLI::App* cmd);

// Which config file applies: `flag` when given (it must exist), else $WEFT_CONFIG when set and
// non-empty (it must exist), else kDefaultConfigPath when it exists, else "" (none). NotFound
// naming the path and who named it.
absl::StatusOr<std::string> ResolveConfigPath(const std::optional<std::string>& flag);

// Applies the section of config file `path` named cmd->get_name() to `cmd`, whose command line
// has been parsed (given options hold their results): every option not given on the command
// line takes the file's value, through the option's own conversion and checks; a file value for
// an option given on the command line is checked the same way but not used. `path` "" = no file.
// Returns every option (not help, not --config) with its value and source. Errors,
// InvalidArgument "FILE:LINE: what": not YAML; not a mapping of sections; an unknown section;
// an unknown or repeated key in cmd's section (listing the known ones); a value of the wrong
// shape (a list for a single-valued option, not true/false for a flag, a mapping, nothing); a
// value the option refuses (CLI11's message, naming the flag). NotFound / PermissionDenied when
// the file cannot be read. On error, some of cmd's options may have been set.
absl::StatusOr<EffectiveConfig> ApplyDaemonConfig(CLI::App* cmd, const std::string& path);

// The effective configuration of daemon `daemon` run with the flags `args` (what follows
// `weft DAEMON` on its command line, --config included), without running it. `add_command` adds
// the daemon's subcommand to an app, as main() does (e.g. AddRmCommand); the subcommand must
// call AddDaemonConfig. Required options may be missing (their settings say so). Errors:
// InvalidArgument with CLI11's message for a bad flag; ResolveConfigPath's and
// ApplyDaemonConfig's.
absl::StatusOr<EffectiveConfig> ShowDaemonConfig(
    const std::function<void(CLI::App&, int*)>& add_command, const std::string& daemon,
    const std::vector<std::string>& args);

// `config` as rows for PrintTable: OPTION, VALUE, SOURCE (the header first). A list's items are
// joined by ","; "(none)" stands for no value. Values are what the flags hold: paths of key
// and secret files, never their contents.
std::vector<std::vector<std::string>> EffectiveConfigTable(const EffectiveConfig& config);

// `config` as a config file with config.daemon's section only: every option set by a flag or a
// file as a key (its source in a comment), every option at its default as a comment. Feeding it
// back as --config gives the same effective values.
std::string EffectiveConfigYaml(const EffectiveConfig& config);

}  // namespace weft::cli

#endif  // WEFT_CLI_DAEMON_CONFIG_H_
