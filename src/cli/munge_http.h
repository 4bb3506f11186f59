// Copyright Weft authors. HTTP calls of `weft` commands to Weft's web servers (the RM's, the
// NMs'), made as the calling user: a fresh MUNGE credential in X-Weft-Munge-Credential.
#ifndef WEFT_CLI_MUNGE_HTTP_H_
#define WEFT_CLI_MUNGE_HTTP_H_

#include <httplib.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::cli {

// A web server's answer.
struct HttpAnswer {
  int status = 0;
  std::string body;
  httplib::Headers headers;

  // A header's first value, "" when absent.
  std::string Header(const std::string& name) const;
  // The message of a JSON error body (YARN's RemoteException), else the body's first 200 bytes.
  std::string ErrorMessage() const;
};

// `method` ("GET" or "POST", with an empty JSON body) http://`host_port``target` with a fresh
// MUNGE credential (each decodes once), waiting at most `timeout_s` to connect and to read.
// Errors: InvalidArgument "'<host_port>' is not HOST:PORT" (SplitHttpHostPort); MUNGE's; for
// a server that cannot be reached, Unavailable whose message is the transport's reason alone
// (e.g. "Connection"), for the caller to name the server.
absl::StatusOr<HttpAnswer> CallAsUser(absl::string_view method, const std::string& host_port,
                                      const std::string& target, int timeout_s);

}  // namespace weft::cli

#endif  // WEFT_CLI_MUNGE_HTTP_H_
