// Copyright Weft authors.
#include "cli/web_command.h"

#include <iostream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cli/cli_common.h"
#include "cli/munge_http.h"
#include "nlohmann/json.hpp"

namespace weft::cli {
namespace {

// How long the sign-in request may take, s.
constexpr int kLoginTimeoutS = 30;

struct LoginFlags {
  std::string rm_address;
  std::string rm_http;
};

// One POST /ws/v1/cluster/session to `host_port` as the caller (CallAsUser).
absl::StatusOr<HttpAnswer> PostSignIn(const std::string& host_port) {
  absl::StatusOr<HttpAnswer> answer =
      CallAsUser("POST", host_port, "/ws/v1/cluster/session", kLoginTimeoutS);
  if (absl::IsInvalidArgument(answer.status()))
    return absl::InvalidArgumentError(absl::StrCat("--rm-http ", answer.status().message()));
  if (absl::IsUnavailable(answer.status()))
    return absl::UnavailableError(absl::StrCat("cannot reach the RM's web server at http://",
                                               host_port, ": ", answer.status().message(),
                                               " (is --rm-http right?)"));
  return answer;
}

// The HOST:PORT of an "http://HOST:PORT/..." Location, "" for anything else.
std::string RedirectTarget(const std::string& location) {
  absl::string_view rest = location;
  if (!absl::ConsumePrefix(&rest, "http://")) return "";
  return std::string(rest.substr(0, rest.find('/')));
}

// Signs in at `host_port`; a standby RM's redirect (307 to the active's web server) is followed
// once, with a new credential.
int Login(const LoginFlags& flags) {
  std::string host_port = RmHttpAddress(flags.rm_http, flags.rm_address);
  absl::StatusOr<HttpAnswer> answer = PostSignIn(host_port);
  if (!answer.ok()) return PrintError(answer.status().message());
  if (answer->status == 307 || answer->status == 308) {
    const std::string target = RedirectTarget(answer->Header("Location"));
    if (target.empty())
      return PrintError(absl::StrCat("http://", host_port, " redirected the sign-in to '",
                                     answer->Header("Location").substr(0, 200),
                                     "', not to another RM's web server"));
    std::cerr << "weft: http://" << host_port << " is a standby; signing in at the active, http://"
              << target << std::endl;
    host_port = target;
    answer = PostSignIn(host_port);
    if (!answer.ok()) return PrintError(answer.status().message());
  }
  if (answer->status != 200)
    return PrintError(absl::StrCat("http://", host_port, " refused the sign-in (HTTP ",
                                   answer->status, "): ", answer->ErrorMessage()));
  nlohmann::json j = nlohmann::json::parse(answer->body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("signIn") || !j["signIn"].is_object() ||
      !j["signIn"].contains("url") || !j["signIn"]["url"].is_string())
    return PrintError(absl::StrCat("http://", host_port, " answered no sign-in link"));
  const nlohmann::json& in = j["signIn"];
  std::cerr << "Open this link in your browser within " << in.value("expiresInSeconds", 0)
            << " s to sign it in as " << in.value("user", std::string("?"))
            << " (it works once; the session lasts " << in.value("sessionSeconds", 0) / 3600
            << " h, or until you sign out or the RM restarts):" << std::endl;
  std::cout << in["url"].get<std::string>() << std::endl;
  return 0;
}

}  // namespace

void AddWebCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand("web", "The RM's web UI");
  group->require_subcommand(1);
  auto f = std::make_shared<LoginFlags>();
  CLI::App* login = group->add_subcommand(
      "login",
      "Print a single-use link that signs your browser in to the RM's web UI as you "
      "(authenticated by MUNGE), so that it shows your apps' details and logs");
  AddRmOption(login, &f->rm_address);
  login->add_option("--rm-http", f->rm_http,
                    "the RM's web server, HOST:PORT (default: $WEFT_RM_HTTP, else the --rm host "
                    "on port 8088)");
  login->callback([f, exit_code] { *exit_code = Login(*f); });
}

}  // namespace weft::cli
