// A stand-alone distributed-shell AM binary for tests (the CLI offers the same as
// `weft am shell`). Usage: shell_am_main NUM_CONTAINERS MAX_RETRIES COMMAND
#include <cstdlib>

#include "am/am_client.h"

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  weft::am::ShellAmOptions o;
  o.num_containers = std::atoi(argv[1]);
  o.max_retries = std::atoi(argv[2]);
  o.command = argv[3];
  o.memory_mb = 128;
  o.timeout_ms = 60000;
  return weft::am::RunShellAm(o);
}
