// Copyright Weft authors.
#include "cli/munge_http.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli/cli_common.h"
#include "nlohmann/json.hpp"
#include "security/munge.h"

namespace weft::cli {

std::string HttpAnswer::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

std::string HttpAnswer::ErrorMessage() const {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("RemoteException") && j["RemoteException"].is_object() &&
      j["RemoteException"].value("message", "") != "")
    return j["RemoteException"]["message"].get<std::string>();
  return body.substr(0, 200);
}

absl::StatusOr<HttpAnswer> CallAsUser(absl::string_view method, const std::string& host_port,
                                      const std::string& target, int timeout_s) {
  absl::StatusOr<std::pair<std::string, int>> address = SplitHttpHostPort(host_port);
  if (!address.ok()) return address.status();
  const auto& [host, port] = *address;
  absl::StatusOr<std::string> credential =
      security::MungeEncode(security::MungeSocketFromEnvironment(), security::kClientMungePayload);
  if (!credential.ok()) return credential.status();
  httplib::Client client(host, port);
  client.set_connection_timeout(timeout_s, 0);
  client.set_read_timeout(timeout_s, 0);
  httplib::Headers headers = {{"X-Weft-Munge-Credential", *credential}};
  httplib::Result res = method == "POST"
                            ? client.Post(target.c_str(), headers, "", "application/json")
                            : client.Get(target.c_str(), headers);
  if (!res) return absl::UnavailableError(httplib::to_string(res.error()));
  HttpAnswer answer;
  answer.status = res->status;
  answer.body = std::move(res->body);
  answer.headers = res->headers;
  return answer;
}

}  // namespace weft::cli
