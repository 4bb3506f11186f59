// Copyright Weft authors. `weft certs init-ca|issue|show`: the cluster CA and the daemons'
// mutual-TLS certificates (security/tls.h), made with OpenSSL's library.
#ifndef WEFT_CLI_CERTS_COMMAND_H_
#define WEFT_CLI_CERTS_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

// Adds the `certs` subcommand group to `app`; when one runs, its exit code is stored in
// *exit_code: 0 on success, 2 for a usage error (a missing or malformed argument), 1 for any
// other failure. Errors are one line on stderr.
void AddCertsCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_CERTS_COMMAND_H_
