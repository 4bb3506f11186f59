// Copyright Weft authors. The federation router's own submission rate (seed 004's "support user
// requests cheaply"): NewApplication + SubmitApplication through a Router in this process over
// a federation store, forwarding over gRPC to three fake sub-cluster RMs on loopback. What it
// measures per submission: the policy, the store read of the queue's policy and membership
// (cached as in `weft router`), the durable app -> home write, and two RM calls.
//   build/bench/router_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "federation/router/router.h"
#include "federation/router/testing/fake_sub_cluster_rm.h"
#include "federation/store/federation_store.h"

namespace weft::federation {
namespace {

struct Federation {
  std::unique_ptr<FederationStateStore> store;
  std::vector<std::unique_ptr<testing_util::FakeSubClusterRm>> rms;
  std::unique_ptr<Router> router;
  std::string db;
};

// `store_kind`: 0 = memory, 1 = a SQLite file.
std::unique_ptr<Federation> Start(int store_kind) {
  auto f = std::make_unique<Federation>();
  std::string uri = "memory:";
  if (store_kind == 1) {
    f->db = (std::filesystem::temp_directory_path() /
             absl::StrCat("weft-router-bench-", ::getpid(), ".db"))
                .string();
    std::filesystem::remove(f->db);
    uri = "sqlite:" + f->db;
  }
  auto store = OpenFederationStore(uri);
  if (!store.ok()) return nullptr;
  f->store = *std::move(store);
  const int64_t now = absl::ToUnixMillis(absl::Now());
  for (int i = 1; i <= 3; ++i) {
    const std::string id = absl::StrCat("sc", i);
    f->rms.push_back(std::make_unique<testing_util::FakeSubClusterRm>(id, 1000 * i, nullptr));
    v1::SubClusterInfo info;
    info.set_sub_cluster_id(id);
    info.set_rm_address(f->rms.back()->address());
    info.set_state(v1::SC_RUNNING);
    info.set_last_start_ms(now);
    info.set_last_heartbeat_ms(now + 3'600'000);  // usable for the whole run
    if (!f->store->RegisterSubCluster(info).ok()) return nullptr;
  }
  v1::SubClusterPolicyConfiguration all;
  all.set_queue("*");
  all.set_router_policy("weighted-random");
  all.set_amrm_policy("home-only");
  if (!f->store->SetPolicyConfiguration(all).ok()) return nullptr;
  RouterOptions o;
  o.router_id = "bench";
  o.cache_ttl_ms = 60000;  // `weft router`'s default
  auto router = Router::Create(o, f->store.get());
  if (!router.ok()) return nullptr;
  f->router = *std::move(router);
  return f;
}

void BM_RouterSubmit(benchmark::State& state) {
  static std::unique_ptr<Federation> fed;
  // Thread 0 sets up; the loop's start is a barrier for every thread.
  if (state.thread_index() == 0) {
    fed = Start(static_cast<int>(state.range(0)));
    if (fed == nullptr) state.SkipWithError("starting the federation failed");
  }
  int64_t submitted = 0;
  for (auto _ : state) {
    if (fed == nullptr) break;
    auto id = fed->router->NewApplication("alice");
    if (!id.ok()) {
      state.SkipWithError(std::string(id.status().message()).c_str());
      break;
    }
    v1::ApplicationSubmissionContext ctx;
    ctx.set_application_id(id->application_id());
    ctx.mutable_am_container_spec()->add_command("true");
    if (absl::Status s = fed->router->SubmitApplication(ctx, "alice"); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
    ++submitted;
  }
  state.SetItemsProcessed(submitted);
  state.counters["submissions_per_s"] =
      benchmark::Counter(static_cast<double>(submitted), benchmark::Counter::kIsRate);
  if (state.thread_index() == 0) {
    const std::string db = fed != nullptr ? fed->db : "";
    fed.reset();
    if (!db.empty()) std::filesystem::remove(db);
  }
}
BENCHMARK(BM_RouterSubmit)
    ->ArgName("store(0=memory,1=sqlite)")
    ->Arg(0)
    ->Arg(1)
    ->Threads(1)
    ->Threads(4)
    ->UseRealTime()
    ->MinTime(3.0);

}  // namespace
}  // namespace weft::federation

BENCHMARK_MAIN();
