// Stand-alone driver of the RM load benchmark (the CLI offers the same as `weft bench rm`).
// Usage: rm_bench [nodes] [apps] [duration_s] [threads]
#include <cstdlib>
#include <iostream>

#include "rm/rm_bench.h"

int main(int argc, char** argv) {
  weft::rm::RmBenchOptions o;
  if (argc > 1) o.nodes = std::atoi(argv[1]);
  if (argc > 2) o.apps = std::atoi(argv[2]);
  if (argc > 3) o.duration_ms = std::atoll(argv[3]) * 1000;
  if (argc > 4) o.client_threads = std::atoi(argv[4]);
  auto r = weft::rm::RunRmBench(o);
  if (!r.ok()) {
    std::cerr << "rm_bench: " << r.status().message() << "\n";
    return 1;
  }
  std::cout << r->ToText() << r->ToJson() << "\n";
  return 0;
}
