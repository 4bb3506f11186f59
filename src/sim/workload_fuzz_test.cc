// Copyright Weft authors. Every loader on randomly damaged inputs: never a crash (the
// sanitizer build turns memory errors and UB into failures), and whatever loads keeps the
// promises of workload.h.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/resource_types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/workload.h"
#include "sim/workload_common.h"
#include "sim/workload_test_util.h"

namespace weft::sim {
namespace {

using testing::SourceDir;

std::string ReadPrefix(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str().substr(0, max_bytes);
}

using Loader =
    std::function<absl::StatusOr<Workload>(const std::string& path, const LoadOptions& opts)>;

// Characters that matter to the formats, plus arbitrary bytes.
constexpr char kAlphabet[] = "{}[]\":,\\\t\n\r -.0123456789eE+xnulltrueSUCCESS#&*!|>";

std::string Mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    size_t pos = pick(s.size() + 1);
    switch (rng() % 6) {
      case 0:  // truncate
        s.resize(pos);
        break;
      case 1:  // delete a span
        s.erase(pos, pick(64));
        break;
      case 2:  // insert format characters
        for (size_t i = 0, n = 1 + pick(8); i < n; ++i)
          s.insert(s.begin() + static_cast<std::ptrdiff_t>(std::min(pos, s.size())),
                   kAlphabet[pick(sizeof(kAlphabet) - 1)]);
        break;
      case 3:  // overwrite a byte with anything
        if (pos < s.size()) s[pos] = static_cast<char>(rng() & 0xff);
        break;
      case 4: {  // duplicate a span elsewhere
        size_t from = pick(s.size() + 1);
        std::string span = s.substr(from, pick(200));
        s.insert(std::min(pos, s.size()), span);
        break;
      }
      case 5:  // a huge or negative number
        s.insert(std::min(pos, s.size()), rng() % 2 ? "-99999999999999999999" : "1e308");
        break;
    }
  }
  return s;
}

void FuzzLoader(const std::string& name, const std::string& seed, const Loader& load, int rounds) {
  std::mt19937_64 rng(0x5eed0000u + std::hash<std::string>()(name) % 1000);
  std::string path = absl::StrCat(::testing::TempDir(), "/weft_fuzz_", getpid(), "_", name);
  for (int round = 0; round < rounds; ++round) {
    std::string input = Mutate(seed, rng);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << input;
    for (bool strict : {false, true}) {
      LoadOptions opts;
      opts.strict = strict;
      opts.max_jobs = round % 5 == 0 ? 2 : 0;
      absl::StatusOr<Workload> w = load(path, opts);
      if (!w.ok()) {
        // Errors name the file.
        EXPECT_NE(w.status().message().find(path), std::string::npos)
            << name << " round " << round << ": " << w.status();
        continue;
      }
      absl::Status check = internal::CheckWorkload(*w);
      EXPECT_TRUE(check.ok()) << name << " round " << round << ": " << check << "\n" << input;
      if (strict) {
        EXPECT_EQ(w->skipped_records, 0);
      }
      EXPECT_LE(w->skipped_records, static_cast<int64_t>(w->warnings.size()));
      if (opts.max_jobs > 0) {
        EXPECT_LE(static_cast<int64_t>(w->jobs.size()), opts.max_jobs);
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// Rounds per loader; WEFT_FUZZ_ROUNDS raises it for a longer soak.
const int kRounds = [] {
  const char* env = std::getenv("WEFT_FUZZ_ROUNDS");
  int n = env != nullptr ? std::atoi(env) : 0;
  return n > 0 ? n : 400;
}();

TEST(WorkloadFuzzTest, Swim) {
  ResourceTypeRegistry registry;
  std::string seed =
      ReadPrefix(SourceDir() + "/src/sim/testdata/swim_small.tsv", 1 << 20) +
      ReadPrefix(SourceDir() + "/data/traces/swim_FB-2009_samples_24_times_1hr_0.tsv", 2000);
  FuzzLoader(
      "swim", seed,
      [&](const std::string& p, const LoadOptions& o) {
        return LoadSwim(p, SwimModel(), registry, o);
      },
      kRounds);
}

TEST(WorkloadFuzzTest, Sls) {
  ResourceTypeRegistry registry;
  std::string seed = ReadPrefix(SourceDir() + "/src/sim/testdata/sls_small.json", 1 << 20) +
                     ReadPrefix(SourceDir() + "/data/traces/sls_inputsls.json", 1 << 20);
  FuzzLoader(
      "sls", seed,
      [&](const std::string& p, const LoadOptions& o) {
        return LoadSls(p, DefaultTaskResources(), registry, o);
      },
      kRounds);
}

TEST(WorkloadFuzzTest, Rumen) {
  ResourceTypeRegistry registry;
  std::string seed = ReadPrefix(SourceDir() + "/src/sim/testdata/rumen_small.json", 1 << 20);
  FuzzLoader(
      "rumen", seed,
      [&](const std::string& p, const LoadOptions& o) {
        return LoadRumen(p, DefaultTaskResources(), registry, o);
      },
      kRounds);
}

TEST(WorkloadFuzzTest, Alibaba) {
  ResourceTypeRegistry registry;
  std::string seed = ReadPrefix(SourceDir() + "/src/sim/testdata/alibaba_small.csv", 1 << 20) +
                     ReadPrefix(SourceDir() + "/data/traces/alibaba2017_batch_task.csv", 3000);
  AlibabaModel unfinished;
  unfinished.include_unfinished = true;
  FuzzLoader(
      "alibaba", seed,
      [&](const std::string& p, const LoadOptions& o) {
        return LoadAlibaba2017(p, o.max_jobs == 0 ? unfinished : AlibabaModel(), registry, o);
      },
      kRounds);
}

TEST(WorkloadFuzzTest, JobsYaml) {
  ResourceTypeRegistry registry;
  std::string seed = ReadPrefix(SourceDir() + "/src/sim/testdata/jobs_small.yaml", 1 << 20);
  FuzzLoader(
      "jobs", seed,
      [&](const std::string& p, const LoadOptions& o) { return LoadJobsYaml(p, registry, o); },
      kRounds);
}

}  // namespace
}  // namespace weft::sim
