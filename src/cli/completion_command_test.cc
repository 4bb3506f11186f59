#include "cli/completion_command.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A small tree shaped like weft's: a root option that falls through, a group with two
// subcommands, an option group, and a hidden subcommand.
class CompletionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    app_.set_version_flag("--version", "weft test");
    app_.fallthrough();
    CLI::App* group = app_.add_subcommand("app", "apps");
    CLI::App* submit = group->add_subcommand("submit", "submit one");
    submit->add_option("--command", command_, "the command");
    submit->add_flag("--wait", wait_, "wait for it");
    group->add_subcommand("list", "list them");
    CLI::App* rm = app_.add_subcommand("rm", "the RM");
    rm->add_option("--port", port_, "port");
    rm->add_option("--ha-id", ha_id_, "HA id")->group("High availability");
    CLI::Option_group* tls = rm->add_option_group("TLS");
    tls->add_option("--tls-ca", tls_ca_, "CA");
    app_.add_subcommand("secret", "hidden")->group("");
    AddCompletionCommand(app_, &exit_code_);
    app_.add_option("--log-level", log_level_, "threshold");  // after: still included
    script_ = BashCompletionScript(app_, "weft");
  }

  // What bash completes for `words` (the last one being completed), with the script loaded.
  std::string Complete(const std::string& words) {
    const std::filesystem::path dir = ::testing::TempDir();
    const std::filesystem::path file = dir / ("weft-completion-" + std::to_string(getpid()));
    std::ofstream(file) << script_;
    const std::string cmd = "bash -c 'source \"" + file.string() + "\"; COMP_WORDS=(" + words +
                            "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _weft; " +
                            "echo \"${COMPREPLY[*]}\"' 2>&1";
    std::string out;
    FILE* pipe = popen(cmd.c_str(), "r");
    EXPECT_NE(pipe, nullptr);
    if (pipe == nullptr) return out;
    std::array<char, 512> buf;
    while (fgets(buf.data(), buf.size(), pipe) != nullptr) out += buf.data();
    EXPECT_EQ(pclose(pipe), 0) << out;
    std::filesystem::remove(file);
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  CLI::App app_{"test"};
  std::string command_, ha_id_, tls_ca_, log_level_;
  bool wait_ = false;
  int port_ = 0;
  int exit_code_ = 0;
  std::string script_;
};

TEST_F(CompletionTest, TablesNameEveryVisibleLevel) {
  EXPECT_THAT(script_, HasSubstr("[\"weft\"]=\"app rm\""));
  EXPECT_THAT(script_, HasSubstr("[\"weft app\"]=\"submit list\""));
  EXPECT_THAT(script_, Not(HasSubstr("secret")));
  EXPECT_THAT(script_, Not(HasSubstr("completion\"")));
  EXPECT_THAT(script_, HasSubstr("complete -F _weft weft\n"));
  // Deterministic.
  EXPECT_EQ(script_, BashCompletionScript(app_, "weft"));
}

TEST_F(CompletionTest, BashCompletesSubcommandsAndOptions) {
  EXPECT_EQ(Complete("weft a"), "app");
  EXPECT_EQ(Complete("weft app \"\""), "submit list");
  EXPECT_EQ(Complete("weft app submit --"), "--help --command --wait --log-level");
  // Options of a named group and of an option group; root's --log-level falls through.
  EXPECT_EQ(Complete("weft rm --ha"), "--ha-id");
  EXPECT_EQ(Complete("weft rm --tls"), "--tls-ca");
  EXPECT_EQ(Complete("weft --"), "--help --version --log-level");
  // An option's value is not taken for a subcommand: `app` after --log-level is its value.
  EXPECT_THAT(Complete("weft --log-level app s"), Not(HasSubstr("submit")));
  EXPECT_EQ(Complete("weft --log-level info app s"), "submit");
}

TEST_F(CompletionTest, ValueOfAnOptionCompletesFileNames) {
  const std::filesystem::path dir = ::testing::TempDir();
  const std::string name = "weft-completion-value-" + std::to_string(getpid());
  std::ofstream(dir / name) << "x";
  EXPECT_EQ(Complete("weft app submit --command " + (dir / name).string()), (dir / name).string());
  std::filesystem::remove(dir / name);
}

}  // namespace
}  // namespace weft::cli
