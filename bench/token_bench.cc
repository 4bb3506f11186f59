// Container tokens: what issuing one costs the RM loop (one per container allocated).
//
//   BM_HmacSha256            one HMAC-SHA256 of a 200-byte message under a 32-byte key (the
//                            token password).
//   BM_IssueContainerToken   a container token as the RM issues it: the identifier encoded,
//                            then its HMAC.
//
// See docs/performance.md.
#include <string>

#include "benchmark/benchmark.h"
#include "security/test_util.h"
#include "security/tokens.h"

namespace weft::security {
namespace {

void BM_HmacSha256(benchmark::State& state) {
  const std::string key(32, 'k'), message(200, 'm');
  for (auto _ : state) benchmark::DoNotOptimize(HmacSha256(key, message));
}
BENCHMARK(BM_HmacSha256);

void BM_IssueContainerToken(benchmark::State& state) {
  const ContainerTokenData d = SampleContainer();
  MasterKey key;
  key.id = 1;
  key.secret = std::string(32, 's');
  key.expires_ms = 1'000'000;
  for (auto _ : state) benchmark::DoNotOptimize(IssueContainerToken(d, key));
}
BENCHMARK(BM_IssueContainerToken);

}  // namespace
}  // namespace weft::security

BENCHMARK_MAIN();
