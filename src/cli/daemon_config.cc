// Copyright Weft authors.
#include "cli/daemon_config.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/files.h"
#include "yaml-cpp/yaml.h"

namespace weft::cli {
namespace {

constexpr char kConfigFlag[] = "config";

// The options of `cmd` a config file may set: every option with a long name but help and
// --config itself.
bool IsConfigurable(const CLI::App& cmd, const CLI::Option* op) {
  if (op == cmd.get_help_ptr() || op == cmd.get_help_all_ptr()) return false;
  if (op->get_lnames().empty()) return false;  // positional only
  return op->get_lnames().front() != kConfigFlag;
}

bool IsFlag(const CLI::Option* op) { return op->get_expected_min() == 0; }
bool IsList(const CLI::Option* op) { return !IsFlag(op) && op->get_items_expected_max() > 1; }

// The 1-based line of `node` in its file, or 0 when yaml-cpp does not know it.
int LineOf(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.line >= 0 ? mark.line + 1 : 0;
}

absl::Status ErrorAt(const std::string& path, int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", what));
}

// A list default as CLI11 renders it ("[a,b]", "[]", or one item without brackets) as items.
std::vector<std::string> DefaultItems(const std::string& text) {
  if (text.empty() || text == "[]") return {};
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']')
    return absl::StrSplit(text.substr(1, text.size() - 2), ',');
  return {text};
}

// The values `node` (the value of `key`) gives option `op`, as CLI11 takes them from a command
// line; an error names what is wrong with its shape.
absl::StatusOr<std::vector<std::string>> ValuesOf(const YAML::Node& node, const CLI::Option* op,
                                                  const std::string& key,
                                                  const std::string& where) {
  const std::string what = absl::StrCat("'", key, "' in section '", where, "'");
  if (node.IsNull())
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has no value (write \"\" for an empty string)"));
  if (node.IsMap())
    return absl::InvalidArgumentError(absl::StrCat(what, ": expected a value, found a mapping"));
  if (IsFlag(op)) {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value))
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": expected true or false",
          node.IsScalar() ? absl::StrCat(", found '", node.Scalar(), "'") : ", found a list"));
    return std::vector<std::string>{value ? "true" : "false"};
  }
  if (node.IsScalar()) return std::vector<std::string>{node.Scalar()};
  // A sequence.
  if (!IsList(op))
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": takes a single value, found a list of ", node.size()));
  std::vector<std::string> values;
  for (const YAML::Node& item : node) {
    if (!item.IsScalar())
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": list items must be single values (line ", LineOf(item), ")"));
    values.push_back(item.Scalar());
  }
  return values;
}

// Runs `op`'s conversion and checks over `values` (CLI11's message when they refuse them).
std::optional<std::string> Refusal(CLI::Option* op, const std::vector<std::string>& values) {
  op->add_result(values);
  try {
    op->run_callback();
  } catch (const CLI::ParseError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

// `s` as a YAML scalar that reads back as `s`: plain for integers, double-quoted otherwise.
std::string YamlScalar(const std::string& s) {
  const bool integer =
      !s.empty() && s.size() < 19 &&
      std::all_of(s.begin() + (s[0] == '-' && s.size() > 1 ? 1 : 0), s.end(),
                  [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); });
  if (integer) return s;
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          const auto byte = static_cast<unsigned char>(c);
          out += {'\\', 'x', "0123456789abcdef"[byte >> 4], "0123456789abcdef"[byte & 15]};
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string YamlValue(const OptionSetting& s, const std::vector<std::string>& values) {
  if (s.flag) return values.empty() ? "false" : values.front();
  if (s.list) {
    std::vector<std::string> items;
    for (const std::string& v : values) items.push_back(YamlScalar(v));
    return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
  }
  return values.empty() ? "\"\"" : YamlScalar(values.front());
}

// While ShowDaemonConfig parses a daemon's command line, --config's callback hands it the
// parsed subcommand and the --config given (if any) instead of applying the file; it ends the
// parse by throwing. Null otherwise.
using ShowHook = std::function<void(CLI::App* cmd, const std::optional<std::string>& flag)>;
thread_local const ShowHook* show_hook = nullptr;

// Whether --help or --help-all was given to `cmd` or a parent: help is printed whatever the
// config file holds.
bool HelpRequested(const CLI::App* cmd) {
  for (const CLI::App* app = cmd; app != nullptr; app = app->get_parent()) {
    for (const CLI::Option* help : {app->get_help_ptr(), app->get_help_all_ptr()})
      if (help != nullptr && help->count() > 0) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::string> ResolveConfigPath(const std::optional<std::string>& flag) {
  std::error_code ec;
  if (flag.has_value()) {
    if (flag->empty()) return absl::InvalidArgumentError("--config: the path is empty");
    if (!std::filesystem::exists(*flag, ec))
      return absl::NotFoundError(absl::StrCat("--config ", *flag, ": no such file"));
    return *flag;
  }
  const char* env = std::getenv(kConfigEnvVar);
  if (env != nullptr && *env != '\0') {
    if (!std::filesystem::exists(env, ec))
      return absl::NotFoundError(absl::StrCat("$", kConfigEnvVar, " ", env, ": no such file"));
    return std::string(env);
  }
  if (std::filesystem::exists(kDefaultConfigPath, ec)) return std::string(kDefaultConfigPath);
  return std::string();
}

absl::StatusOr<EffectiveConfig> ApplyDaemonConfig(CLI::App* cmd, const std::string& path) {
  EffectiveConfig config;
  config.daemon = cmd->get_name();
  config.path = path;
  // Every configurable option, by each of its long names; whether the command line gave it.
  std::map<std::string, size_t> index_of;
  std::vector<CLI::Option*> options;
  for (CLI::Option* op : cmd->get_options()) {
    if (!IsConfigurable(*cmd, op)) continue;
    OptionSetting s;
    s.key = op->get_lnames().front();
    s.flag = IsFlag(op);
    s.list = IsList(op);
    s.required = op->get_required();
    if (op->count() > 0) {
      s.values = op->results();
      s.source = "flag";
    } else {
      s.source = "default";
    }
    for (const std::string& name : op->get_lnames()) index_of[name] = options.size();
    options.push_back(op);
    config.options.push_back(std::move(s));
  }
  if (path.empty()) return config;

  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("config file ", text.status().message()));
  }
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return ErrorAt(path, e.mark.line >= 0 ? e.mark.line + 1 : 0,
                   absl::StrCat("not valid YAML: ", e.msg));
  }
  if (root.IsNull()) return config;  // empty, or only comments
  if (!root.IsMap())
    return ErrorAt(path, LineOf(root),
                   absl::StrCat("expected a mapping of daemon sections (",
                                absl::StrJoin(kDaemonSections, ", "), ")"));
  const std::string known_sections = absl::StrJoin(kDaemonSections, ", ");
  std::map<std::string, int> section_lines;
  YAML::Node section;
  for (const auto& kv : root) {
    const int line = LineOf(kv.first);
    if (!kv.first.IsScalar()) return ErrorAt(path, line, "a section name must be a single word");
    const std::string name = kv.first.Scalar();
    if (std::find(kDaemonSections.begin(), kDaemonSections.end(), name) == kDaemonSections.end())
      return ErrorAt(path, line,
                     absl::StrCat("unknown section '", name, "' (known: ", known_sections, ")"));
    if (auto [it, inserted] = section_lines.emplace(name, line); !inserted)
      return ErrorAt(
          path, line,
          absl::StrCat("section '", name, "' appears twice (also at line ", it->second, ")"));
    if (!kv.second.IsNull() && !kv.second.IsMap())
      return ErrorAt(path, line,
                     absl::StrCat("section '", name, "' must map flag names to values"));
    if (name == config.daemon) section = kv.second;
  }
  if (!section.IsDefined() || section.IsNull()) return config;

  std::set<std::string> known;
  for (const auto& [name, i] : index_of) known.insert(name);
  std::map<size_t, int> set_at;  // option index -> line that set it
  for (const auto& kv : section) {
    const int line = LineOf(kv.first);
    if (!kv.first.IsScalar()) return ErrorAt(path, line, "a key must be a flag name");
    const std::string key = kv.first.Scalar();
    auto found = index_of.find(key);
    if (found == index_of.end())
      return ErrorAt(path, line,
                     absl::StrCat("unknown key '", key, "' in section '", config.daemon,
                                  "' (known: ", absl::StrJoin(known, ", "), ")"));
    const size_t i = found->second;
    if (auto [it, inserted] = set_at.emplace(i, line); !inserted)
      return ErrorAt(path, line,
                     absl::StrCat("'", key, "' in section '", config.daemon,
                                  "' is set twice (also at line ", it->second, ")"));
    CLI::Option* op = options[i];
    OptionSetting& s = config.options[i];
    absl::StatusOr<std::vector<std::string>> values = ValuesOf(kv.second, op, key, config.daemon);
    if (!values.ok()) return ErrorAt(path, line, values.status().message());
    const std::string what = absl::StrCat("'", key, "' in section '", config.daemon, "': ");
    if (values->empty()) {
      // CLI11 holds no value for an empty list: it means the default, so only an empty default.
      if (op->count() > 0) continue;  // the command line's list wins
      op->capture_default_str();      // the bound variable holds the default
      if (!DefaultItems(op->get_default_str()).empty())
        return ErrorAt(path, line,
                       absl::StrCat(what, "an empty list cannot replace the default ",
                                    op->get_default_str(), "; leave the key out for it"));
      if (s.source == "default") s.source = absl::StrCat(path, ":", line);
      continue;
    }
    if (op->count() == 0) {
      if (IsFlag(op)) {
        try {
          (*values)[0] = op->get_flag_value(key, (*values)[0]);
        } catch (const CLI::ParseError& e) {
          return ErrorAt(path, line, absl::StrCat(what, e.what()));
        }
      }
      if (std::optional<std::string> refused = Refusal(op, *values))
        return ErrorAt(path, line, absl::StrCat(what, *refused));
      s.values = op->results();
      s.source = absl::StrCat(path, ":", line);
      continue;
    }
    // Given on the command line, which wins: the file's value is checked all the same (a bad
    // file is refused whatever overrides it), then the command line's is put back.
    const std::vector<std::string> given = op->results();
    op->clear();
    std::optional<std::string> refused = Refusal(op, *values);
    op->clear();
    if (std::optional<std::string> again = Refusal(op, given))
      return absl::InternalError(
          absl::StrCat("--", key, ": restoring the command line's value: ", *again));
    if (refused.has_value()) return ErrorAt(path, line, absl::StrCat(what, *refused));
  }
  return config;
}

void AddDaemonConfig(CLI::App* cmd) {
  // The file is applied by --config's callback. CLI11 runs it (forced: given or not) once the
  // whole command line is parsed, after the callbacks of the options added before it, and before
  // it checks required() options (which the file may give) and runs cmd's callback.
  cmd->add_option(
         absl::StrCat("--", kConfigFlag),
         [cmd](const CLI::results_t& results) {
           // Not given: CLI11 hands the empty default.
           const std::optional<std::string> flag = results.empty() || results.back().empty()
                                                       ? std::nullopt
                                                       : std::optional<std::string>(results.back());
           if (show_hook != nullptr) (*show_hook)(cmd, flag);  // throws
           if (HelpRequested(cmd)) return true;
           absl::StatusOr<std::string> path = ResolveConfigPath(flag);
           if (!path.ok()) throw ConfigFileError(std::string(path.status().message()));
           absl::StatusOr<EffectiveConfig> applied = ApplyDaemonConfig(cmd, *path);
           if (!applied.ok()) throw ConfigFileError(std::string(applied.status().message()));
           return true;
         },
         absl::StrCat("YAML file whose '", cmd->get_name(),
                      "' section sets these flags (the key is the flag without --; flags given "
                      "here win); default: $",
                      kConfigEnvVar, ", else ", kDefaultConfigPath,
                      " when it exists (docs/operations.md)"))
      ->type_name("PATH")
      ->force_callback();
}

absl::StatusOr<EffectiveConfig> ShowDaemonConfig(
    const std::function<void(CLI::App&, int*)>& add_command, const std::string& daemon,
    const std::vector<std::string>& args) {
  CLI::App app{"weft"};
  app.fallthrough();
  int exit_code = 0;
  add_command(app, &exit_code);
  CLI::App* cmd = nullptr;
  try {
    cmd = app.get_subcommand(daemon);
  } catch (const CLI::OptionNotFound&) {
    return absl::InvalidArgumentError(absl::StrCat("no daemon '", daemon, "'"));
  }
  if (cmd->get_option_no_throw(absl::StrCat("--", kConfigFlag)) == nullptr)
    return absl::InternalError(absl::StrCat("weft ", daemon, " reads no config file"));
  // Shown as missing rather than refused.
  std::set<const CLI::Option*> required;
  for (CLI::Option* op : cmd->get_options()) {
    if (!op->get_required()) continue;
    required.insert(op);
    op->required(false);
  }
  // The command line is parsed as the daemon's is, then the file applied by --config's callback,
  // which stops the parse there: cmd's own callback never runs.
  struct Parsed {};
  absl::StatusOr<EffectiveConfig> effective = absl::InternalError("not parsed");
  const ShowHook hook = [&app, &effective](CLI::App* parsed,
                                           const std::optional<std::string>& flag) {
    // The check CLI11 would make after the callbacks: every argument was taken.
    if (std::vector<std::string> left = app.remaining(true); !left.empty())
      throw CLI::ExtrasError(left);
    absl::StatusOr<std::string> path = ResolveConfigPath(flag);
    effective = path.ok() ? ApplyDaemonConfig(parsed, *path) : path.status();
    throw Parsed();
  };
  std::vector<std::string> argv = {daemon};
  argv.insert(argv.end(), args.begin(), args.end());
  std::reverse(argv.begin(), argv.end());  // CLI11 takes them last first
  show_hook = &hook;
  try {
    app.parse(argv);
  } catch (const Parsed&) {
  } catch (const CLI::ParseError& e) {
    show_hook = nullptr;
    return absl::InvalidArgumentError(absl::StrCat("weft ", daemon, ": ", e.what()));
  }
  show_hook = nullptr;
  if (!effective.ok()) return effective.status();
  for (OptionSetting& s : effective->options) {
    CLI::Option* op = cmd->get_option_no_throw("--" + s.key);
    if (op == nullptr) continue;
    s.required = required.count(op) > 0;
    if (s.values.empty()) {  // the bound variable still holds the default
      op->capture_default_str();
      s.default_value = op->get_default_str();
    }
  }
  return effective;
}

std::vector<std::vector<std::string>> EffectiveConfigTable(const EffectiveConfig& config) {
  std::vector<std::vector<std::string>> rows = {{"OPTION", "VALUE", "SOURCE"}};
  for (const OptionSetting& s : config.options) {
    std::vector<std::string> values = s.values;
    if (values.empty() && !s.flag)
      values = s.list                    ? DefaultItems(s.default_value)
               : s.default_value.empty() ? std::vector<std::string>{}
                                         : std::vector<std::string>{s.default_value};
    std::string value;
    if (s.flag) {
      value = values.empty() ? "false" : values.front();
    } else if (values.empty()) {
      value = s.required ? "(none: required)" : "(none)";
    } else if (values.size() == 1 && values.front().empty()) {
      value = "\"\"";
    } else {
      value = absl::StrJoin(values, ",");
    }
    rows.push_back({s.key, value, s.source});
  }
  return rows;
}

std::string EffectiveConfigYaml(const EffectiveConfig& config) {
  std::string out = absl::StrCat(
      "# The effective configuration of `weft ", config.daemon, "` (`weft config show ",
      config.daemon, " --yaml`); config file: ", config.path.empty() ? "none" : config.path,
      ".\n# Keys set by a flag or a config file are set here; built-in defaults are comments.\n",
      config.daemon, ":\n");
  for (const OptionSetting& s : config.options) {
    if (s.source != "default") {
      absl::StrAppend(&out, "  ", s.key, ": ", YamlValue(s, s.values), "  # ", s.source, "\n");
      continue;
    }
    std::vector<std::string> values;
    if (s.list) {
      values = DefaultItems(s.default_value);
    } else if (!s.default_value.empty()) {
      values = {s.default_value};
    }
    absl::StrAppend(&out, "  # ", s.key, ": ", YamlValue(s, values), "  # default",
                    s.required ? ", required" : "", "\n");
  }
  return out;
}

}  // namespace weft::cli
