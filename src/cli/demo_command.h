// Copyright Weft authors. `weft demo drf`: seed 000's DRF example on real containers.
#ifndef WEFT_CLI_DEMO_COMMAND_H_
#define WEFT_CLI_DEMO_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

void AddDemoCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_DEMO_COMMAND_H_
