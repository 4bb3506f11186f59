// Copyright Weft authors. The daemons' config file (cli/daemon_config.h) on a daemon-like
// subcommand: precedence (flag > file > default), lists, booleans, refusals naming FILE:LINE,
// the missing --config file, required flags from the file, and `config show --yaml` reading back
// to the same values.
#include "cli/daemon_config.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// The settings of the fake daemon below, with their built-in defaults.
struct FakeFlags {
  std::string rm;  // required
  int port = 8032;
  std::string bind = "127.0.0.1";
  std::vector<std::string> resource_limits;
  std::vector<std::string> banned_users = {"hdfs", "yarn"};
  std::vector<std::string> admins;
  bool http_enable_writes = false;
  double commitment = 1.0;
  std::string secret_file;
};

// A daemon subcommand shaped like `weft nm` / `weft rm`: its section is "rm".
void AddFakeCommand(CLI::App& app, int* exit_code, FakeFlags* f) {
  CLI::App* cmd = app.add_subcommand("rm", "a fake daemon");
  cmd->add_option("--rm", f->rm, "the RM")->required();
  cmd->add_option("--port", f->port, "port")->capture_default_str();
  cmd->add_option("--bind", f->bind, "address")->capture_default_str();
  cmd->add_option("--resource-limit", f->resource_limits, "NAME:MIN:MAX, repeatable");
  cmd->add_option("--banned-users", f->banned_users, "comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--admins", f->admins, "comma-separated")->delimiter(',');
  cmd->add_flag("--http-enable-writes", f->http_enable_writes, "a flag");
  cmd->add_option("--commitment", f->commitment, "in [0, 1]")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str()
      ->group("Federation");
  cmd->add_option("--secret-file", f->secret_file, "a secret's path");
  AddDaemonConfig(cmd);
  cmd->callback([exit_code] { *exit_code = 0; });
}

class DaemonConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv(kConfigEnvVar);
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("daemon_config_test_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    unsetenv(kConfigEnvVar);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Writes `text` to DIR/name; returns its path.
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // Parses `weft rm ARGS...` as main() does. Returns the exit code: 0 when the daemon's
  // callback ran, the error's otherwise (its message in error_).
  int Run(const std::vector<std::string>& args) {
    flags_ = FakeFlags();
    error_.clear();
    CLI::App app{"weft"};
    app.fallthrough();
    int exit_code = -1;
    AddFakeCommand(app, &exit_code, &flags_);
    std::vector<std::string> argv = {"rm"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::reverse(argv.begin(), argv.end());
    try {
      app.parse(argv);
    } catch (const CLI::ParseError& e) {
      error_ = e.what();
      EXPECT_EQ(exit_code, -1) << "the daemon ran despite: " << error_;
      return e.get_exit_code();
    }
    return exit_code;
  }

  absl::StatusOr<EffectiveConfig> Show(const std::vector<std::string>& args) {
    auto add = [this](CLI::App& app, int* exit_code) { AddFakeCommand(app, exit_code, &flags_); };
    return ShowDaemonConfig(add, "rm", args);
  }

  static const OptionSetting& Setting(const EffectiveConfig& config, const std::string& key) {
    for (const OptionSetting& s : config.options)
      if (s.key == key) return s;
    ADD_FAILURE() << "no option " << key;
    static const OptionSetting none;
    return none;
  }

  std::filesystem::path dir_;
  FakeFlags flags_;
  std::string error_;
};

TEST_F(DaemonConfigTest, FlagOverridesFileOverridesDefault) {
  const std::string path = Write("weft.yaml",
                                 "rm:\n"
                                 "  rm: 10.0.0.1:8032\n"
                                 "  port: 9000\n"
                                 "  bind: 0.0.0.0\n"
                                 "nm:\n"
                                 "  rm: 127.0.0.1:8032\n");
  ASSERT_EQ(Run({"--config", path, "--port", "7000"}), 0) << error_;
  EXPECT_EQ(flags_.port, 7000);           // flag
  EXPECT_EQ(flags_.bind, "0.0.0.0");      // file
  EXPECT_EQ(flags_.rm, "10.0.0.1:8032");  // file (rm's section, not nm's)
  EXPECT_EQ(flags_.commitment, 1.0);      // default

  absl::StatusOr<EffectiveConfig> shown = Show({"--config", path, "--port", "7000"});
  ASSERT_TRUE(shown.ok()) << shown.status();
  EXPECT_EQ(shown->path, path);
  EXPECT_EQ(Setting(*shown, "port").source, "flag");
  EXPECT_THAT(Setting(*shown, "port").values, ElementsAre("7000"));
  EXPECT_EQ(Setting(*shown, "bind").source, path + ":4");
  EXPECT_EQ(Setting(*shown, "rm").source, path + ":2");
  EXPECT_EQ(Setting(*shown, "commitment").source, "default");
  EXPECT_EQ(Setting(*shown, "commitment").default_value, "1");
  // --config is how the file is named, not a setting of it.
  for (const OptionSetting& s : shown->options) EXPECT_NE(s.key, "config");
}

TEST_F(DaemonConfigTest, EnvironmentNamesTheFileWhenNoFlagDoes) {
  const std::string env = Write("env.yaml", "rm:\n  rm: a:1\n  port: 9001\n");
  const std::string flag = Write("flag.yaml", "rm:\n  rm: a:1\n  port: 9002\n");
  setenv(kConfigEnvVar, env.c_str(), 1);
  ASSERT_EQ(Run({}), 0) << error_;
  EXPECT_EQ(flags_.port, 9001);
  ASSERT_EQ(Run({"--config", flag}), 0) << error_;
  EXPECT_EQ(flags_.port, 9002);
}

TEST_F(DaemonConfigTest, ListsTakeAListOrOneValue) {
  std::string path = Write("lists.yaml",
                           "rm:\n"
                           "  rm: a:1\n"
                           "  resource-limit: [network-mbps:1:200, gpu:0:4]\n"
                           "  admins: alice,bob\n"
                           "  banned-users:\n"
                           "    - bin\n");
  ASSERT_EQ(Run({"--config", path}), 0) << error_;
  EXPECT_THAT(flags_.resource_limits, ElementsAre("network-mbps:1:200", "gpu:0:4"));
  EXPECT_THAT(flags_.admins, ElementsAre("alice", "bob"));  // the flag's delimiter applies
  EXPECT_THAT(flags_.banned_users, ElementsAre("bin"));

  path = Write("scalar.yaml", "rm:\n  rm: a:1\n  resource-limit: network-mbps:1:200\n");
  ASSERT_EQ(Run({"--config", path}), 0) << error_;
  EXPECT_THAT(flags_.resource_limits, ElementsAre("network-mbps:1:200"));

  // A list on the command line replaces the file's, as a scalar does.
  path = Write("both.yaml", "rm:\n  rm: a:1\n  admins: [alice, bob]\n");
  ASSERT_EQ(Run({"--config", path, "--admins", "carol"}), 0) << error_;
  EXPECT_THAT(flags_.admins, ElementsAre("carol"));

  // An empty list is the default only where the default is empty.
  path = Write("empty.yaml", "rm:\n  rm: a:1\n  admins: []\n");
  ASSERT_EQ(Run({"--config", path}), 0) << error_;
  EXPECT_THAT(flags_.admins, IsEmpty());
  path = Write("empty2.yaml", "rm:\n  rm: a:1\n  banned-users: []\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_THAT(error_, StartsWith(path + ":3: 'banned-users' in section 'rm': an empty list"));
  ASSERT_EQ(Run({"--config", path, "--banned-users", "lp"}), 0) << error_;  // the flag wins
  EXPECT_THAT(flags_.banned_users, ElementsAre("lp"));

  // A single-valued flag refuses a list.
  path = Write("portlist.yaml", "rm:\n  rm: a:1\n  port: [1, 2]\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_EQ(error_, path + ":3: 'port' in section 'rm': takes a single value, found a list of 2");
}

TEST_F(DaemonConfigTest, BooleansAreTrueOrFalse) {
  std::string path = Write("t.yaml", "rm:\n  rm: a:1\n  http-enable-writes: true\n");
  ASSERT_EQ(Run({"--config", path}), 0) << error_;
  EXPECT_TRUE(flags_.http_enable_writes);
  path = Write("f.yaml", "rm:\n  rm: a:1\n  http-enable-writes: false\n");
  ASSERT_EQ(Run({"--config", path}), 0) << error_;
  EXPECT_FALSE(flags_.http_enable_writes);
  // The command line's flag wins over the file's false.
  ASSERT_EQ(Run({"--config", path, "--http-enable-writes"}), 0) << error_;
  EXPECT_TRUE(flags_.http_enable_writes);
  path = Write("bad.yaml", "rm:\n  rm: a:1\n\n  http-enable-writes: maybe\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_EQ(error_, path +
                        ":4: 'http-enable-writes' in section 'rm': expected true or false, "
                        "found 'maybe'");
}

TEST_F(DaemonConfigTest, UnknownKeyIsRefusedWithItsLine) {
  const std::string path = Write("weft.yaml",
                                 "# the RM\n"
                                 "rm:\n"
                                 "  rm: a:1\n"
                                 "  prot: 9000\n");
  EXPECT_EQ(Run({"--config", path, "--port", "1"}), kConfigErrorExitCode);
  EXPECT_EQ(error_, path +
                        ":4: unknown key 'prot' in section 'rm' (known: admins, "
                        "banned-users, bind, commitment, http-enable-writes, port, "
                        "resource-limit, rm, secret-file)");
  EXPECT_EQ(Show({"--config", path}).status().message(), error_);
}

TEST_F(DaemonConfigTest, UnknownSectionIsRefusedWithItsLine) {
  const std::string path = Write("weft.yaml",
                                 "rm:\n"
                                 "  rm: a:1\n"
                                 "nodemanager:\n"
                                 "  port: 1\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_EQ(error_, path + ":3: unknown section 'nodemanager' (known: rm, nm, router, gpg, dev)");
}

TEST_F(DaemonConfigTest, OtherDaemonsSectionsAreNotRead) {
  // One file for the whole host: nm's keys are nm's business.
  const std::string path = Write("weft.yaml",
                                 "nm:\n"
                                 "  work-root: /var/lib/weft/nm\n"
                                 "  anything: [1, 2]\n"
                                 "rm:\n"
                                 "  rm: a:1\n"
                                 "router:\n");
  EXPECT_EQ(Run({"--config", path}), 0) << error_;
}

TEST_F(DaemonConfigTest, BadValuesAreRefusedWithTheirLineAndTheFlagsMessage) {
  std::string path = Write("port.yaml", "rm:\n  rm: a:1\n  port: abc\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_EQ(error_, path + ":3: 'port' in section 'rm': Could not convert: --port = abc");

  // The flag's own check (CLI::Range here) speaks.
  path = Write("range.yaml", "rm:\n  rm: a:1\n  commitment: 2\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_THAT(error_, StartsWith(path + ":3: 'commitment' in section 'rm': --commitment: "));
  EXPECT_THAT(error_, HasSubstr("not in range"));

  // A bad value is refused even where the command line overrides it; the flag's value holds.
  EXPECT_EQ(Run({"--config", path, "--commitment", "0.5"}), kConfigErrorExitCode);
  EXPECT_THAT(error_, StartsWith(path + ":3: 'commitment' in section 'rm'"));
  path = Write("ok.yaml", "rm:\n  rm: a:1\n  commitment: 0.25\n");
  ASSERT_EQ(Run({"--config", path, "--commitment", "0.5"}), 0) << error_;
  EXPECT_EQ(flags_.commitment, 0.5);

  path = Write("null.yaml", "rm:\n  rm: a:1\n  bind:\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_THAT(error_, StartsWith(path + ":3: 'bind' in section 'rm' has no value"));
  path = Write("map.yaml", "rm:\n  rm: a:1\n  bind: {host: x}\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_THAT(error_, StartsWith(path + ":3: 'bind' in section 'rm': expected a value"));
  path = Write("twice.yaml", "rm:\n  rm: a:1\n  port: 1\n  port: 2\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_EQ(error_, path + ":4: 'port' in section 'rm' is set twice (also at line 3)");
  path = Write("notyaml.yaml", "rm:\n  rm: a:1\n  port: [1,\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_THAT(error_, StartsWith(path + ":"));
  EXPECT_THAT(error_, HasSubstr("not valid YAML"));
  path = Write("list.yaml", "- rm\n- nm\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_THAT(error_, StartsWith(path + ":1: expected a mapping of daemon sections"));
  path = Write("section.yaml", "rm: 8032\n");
  EXPECT_EQ(Run({"--config", path}), kConfigErrorExitCode);
  EXPECT_EQ(error_, path + ":1: section 'rm' must map flag names to values");
}

TEST_F(DaemonConfigTest, MissingConfigFileIsRefused) {
  const std::string missing = (dir_ / "nope.yaml").string();
  EXPECT_EQ(Run({"--config", missing, "--rm", "a:1"}), kConfigErrorExitCode);
  EXPECT_EQ(error_, "--config " + missing + ": no such file");
  setenv(kConfigEnvVar, missing.c_str(), 1);
  EXPECT_EQ(Run({"--rm", "a:1"}), kConfigErrorExitCode);
  EXPECT_EQ(error_, absl::StrCat("$", kConfigEnvVar, " ", missing, ": no such file"));
  EXPECT_EQ(Show({"--rm", "a:1"}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(DaemonConfigTest, RequiredFlagMayComeFromTheFile) {
  std::string path = Write("with.yaml", "rm:\n  rm: a:1\n");
  ASSERT_EQ(Run({"--config", path}), 0) << error_;
  EXPECT_EQ(flags_.rm, "a:1");
  path = Write("without.yaml", "rm:\n  port: 1\n");
  EXPECT_NE(Run({"--config", path}), 0);
  EXPECT_THAT(error_, HasSubstr("--rm is required"));
  // `config show` shows what is missing instead.
  absl::StatusOr<EffectiveConfig> shown = Show({"--config", path});
  ASSERT_TRUE(shown.ok()) << shown.status();
  EXPECT_TRUE(Setting(*shown, "rm").required);
  EXPECT_THAT(Setting(*shown, "rm").values, IsEmpty());
}

TEST_F(DaemonConfigTest, NoFileMeansDefaults) {
  if (std::filesystem::exists(kDefaultConfigPath)) GTEST_SKIP() << kDefaultConfigPath << " exists";
  ASSERT_EQ(Run({"--rm", "a:1"}), 0) << error_;
  EXPECT_EQ(flags_.port, 8032);
  absl::StatusOr<EffectiveConfig> shown = Show({"--rm", "a:1"});
  ASSERT_TRUE(shown.ok()) << shown.status();
  EXPECT_EQ(shown->path, "");
  EXPECT_EQ(Setting(*shown, "port").source, "default");
}

TEST_F(DaemonConfigTest, ShowYamlReadsBackToTheSameValues) {
  const std::string path = Write("weft.yaml",
                                 "rm:\n"
                                 "  rm: 10.0.0.1:8032\n"
                                 "  bind: \"0.0.0.0\"\n"
                                 "  resource-limit: [network-mbps:1:200, 'gpu:0:4']\n"
                                 "  http-enable-writes: true\n"
                                 "  secret-file: /etc/weft/secret \"quoted\"\n"
                                 "  commitment: 0.5\n");
  const std::vector<std::string> flags = {"--config", path,       "--port",
                                          "7000",     "--admins", "alice,bob"};
  absl::StatusOr<EffectiveConfig> first = Show(flags);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string yaml = EffectiveConfigYaml(*first);
  EXPECT_THAT(yaml, HasSubstr("\n  port: 7000  # flag\n"));
  EXPECT_THAT(yaml, HasSubstr(absl::StrCat("\n  bind: \"0.0.0.0\"  # ", path, ":3\n")));
  EXPECT_THAT(yaml, HasSubstr("\n  # banned-users: [\"hdfs\", \"yarn\"]  # default\n"));
  const std::string back = Write("back.yaml", yaml);
  absl::StatusOr<EffectiveConfig> second = Show({"--config", back});
  ASSERT_TRUE(second.ok()) << second.status() << "\n" << yaml;
  ASSERT_EQ(first->options.size(), second->options.size());
  for (size_t i = 0; i < first->options.size(); ++i) {
    const OptionSetting& a = first->options[i];
    const OptionSetting& b = second->options[i];
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.values, b.values) << a.key;
    EXPECT_EQ(a.default_value, b.default_value) << a.key;
    // What a flag or the first file set, the printed file sets; defaults stay defaults.
    EXPECT_EQ(a.source == "default", b.source == "default") << a.key << ": " << b.source;
  }
  // The daemon runs on it with the same values.
  ASSERT_EQ(Run({"--config", back}), 0) << error_;
  EXPECT_EQ(flags_.port, 7000);
  EXPECT_EQ(flags_.secret_file, "/etc/weft/secret \"quoted\"");
  EXPECT_THAT(flags_.admins, ElementsAre("alice", "bob"));
  EXPECT_THAT(flags_.resource_limits, ElementsAre("network-mbps:1:200", "gpu:0:4"));
  EXPECT_TRUE(flags_.http_enable_writes);
  EXPECT_EQ(flags_.commitment, 0.5);
}

TEST_F(DaemonConfigTest, ShowRefusesWhatTheDaemonWould) {
  absl::StatusOr<EffectiveConfig> shown = Show({"--rm", "a:1", "--bogus", "1"});
  EXPECT_EQ(shown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(shown.status().message(), HasSubstr("--bogus"));
  shown = Show({"--rm", "a:1", "--port", "abc"});
  EXPECT_THAT(shown.status().message(), HasSubstr("Could not convert: --port = abc"));
}

TEST_F(DaemonConfigTest, TableNamesEveryOptionItsValueAndSource) {
  const std::string path = Write("weft.yaml", "rm:\n  rm: a:1\n  banned-users: [bin, lp]\n");
  absl::StatusOr<EffectiveConfig> shown = Show({"--config", path, "--port", "1"});
  ASSERT_TRUE(shown.ok()) << shown.status();
  const std::vector<std::vector<std::string>> rows = EffectiveConfigTable(*shown);
  ASSERT_EQ(rows.size(), shown->options.size() + 1);
  EXPECT_THAT(rows[0], ElementsAre("OPTION", "VALUE", "SOURCE"));
  auto row = [&](const std::string& key) {
    for (const auto& r : rows)
      if (r[0] == key) return r;
    return std::vector<std::string>{};
  };
  EXPECT_THAT(row("port"), ElementsAre("port", "1", "flag"));
  EXPECT_THAT(row("banned-users"), ElementsAre("banned-users", "bin,lp", path + ":3"));
  EXPECT_THAT(row("bind"), ElementsAre("bind", "127.0.0.1", "default"));
  EXPECT_THAT(row("admins"), ElementsAre("admins", "(none)", "default"));
  EXPECT_THAT(row("http-enable-writes"), ElementsAre("http-enable-writes", "false", "default"));
}

}  // namespace
}  // namespace weft::cli
