// A bounded fuzz test of the REST API: 20,000 random and mutated requests (paths, query
// parameters, headers, JSON bodies) against a real ResourceManager's snapshot and writes.
// Every answer must be well-formed: a known status and, for errors, a JSON RemoteException.
// Deterministic (fixed seed); runs under ASan/UBSan in CI.
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "web/rest_api.h"
#include "web/test_cluster.h"
#include "web/yarn_json.h"

namespace weft::web {
namespace {

class Fuzzer {
 public:
  explicit Fuzzer(uint32_t seed) : rng_(seed) {}

  size_t Below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool Coin() { return Below(2) == 0; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

  std::string RandomBytes(size_t max) {
    std::string s(Below(max + 1), '\0');
    for (char& c : s) c = static_cast<char>(Below(256));
    return s;
  }

  // Flips, inserts, deletes, duplicates and splices `s` a few times.
  std::string Mutate(std::string s) {
    static const std::vector<std::string> kFragments = {"{",
                                                        "}",
                                                        "[",
                                                        "]",
                                                        ":",
                                                        ",",
                                                        "\"",
                                                        "\\",
                                                        "null",
                                                        "true",
                                                        "-1",
                                                        "1e309",
                                                        "0.5",
                                                        "18446744073709551616",
                                                        "\"\\ud800\"",
                                                        "\xff\xfe",
                                                        std::string(1, '\0'),
                                                        "{\"a\":",
                                                        "[[[[[[[[",
                                                        "\"application_1_1\"",
                                                        "\"KILLED\""};
    const size_t rounds = 1 + Below(4);
    for (size_t r = 0; r < rounds; ++r) {
      const size_t pos = s.empty() ? 0 : Below(s.size() + 1);
      switch (Below(5)) {
        case 0:
          if (!s.empty()) s[Below(s.size())] = static_cast<char>(Below(256));
          break;
        case 1:
          s.insert(pos, Pick(kFragments));
          break;
        case 2:
          if (!s.empty()) s.erase(Below(s.size()), 1 + Below(8));
          break;
        case 3:
          s = s.substr(0, pos);
          break;
        default:
          if (!s.empty()) s.insert(pos, s.substr(Below(s.size()), 1 + Below(16)));
      }
    }
    return s;
  }

 private:
  std::mt19937 rng_;
};

TEST(RestFuzzTest, RandomRequestsNeverCrashAndAlwaysGetWellFormedAnswers) {
  TestCluster c;
  DirectWriter writer(&c);
  RestApiOptions o;
  o.writes_enabled = true;
  o.client_secret = "fuzz-secret";
  o.max_body_bytes = 8192;
  RestApi api(o, &c.snapshots_, &writer);
  Fuzzer f(20240601);
  const std::string running = c.running_;
  const std::vector<std::string> paths = {"/ws/v1/cluster",
                                          "/ws/v1/cluster/info",
                                          "/ws/v1/cluster/metrics",
                                          "/ws/v1/cluster/scheduler",
                                          "/ws/v1/cluster/apps",
                                          "/ws/v1/cluster/apps/new-application",
                                          "/ws/v1/cluster/apps/" + running,
                                          "/ws/v1/cluster/apps/" + running + "/appattempts",
                                          "/ws/v1/cluster/apps/" + running + "/state",
                                          "/ws/v1/cluster/nodes",
                                          "/ws/v1/cluster/nodes/h1:1",
                                          "/ws/v1/cluster/apps/application_9_9/state",
                                          "/ws/v1"};
  const std::vector<std::string> methods = {"GET",   "POST",    "PUT", "DELETE", "HEAD",
                                            "PATCH", "OPTIONS", "get", ""};
  const std::vector<std::string> param_names = {"states",
                                                "state",
                                                "queue",
                                                "user",
                                                "limit",
                                                "finalStatus",
                                                "startedTimeBegin",
                                                "startedTimeEnd",
                                                "finishedTimeBegin",
                                                "finishedTimeEnd",
                                                "user.name",
                                                "x"};
  const std::vector<std::string> param_values = {
      "RUNNING", "killed,FINISHED", "",    "0",          "-1",       "1",   "99999999999999999999",
      "default", "root.default",    ",,,", "NEW_SAVING", "REBOOTED", "a b", "\xff"};
  const std::vector<std::string> bodies = {
      R"({"state":"KILLED"})",
      R"({"state":"KILLED","diagnostics":"fuzz"})",
      R"({"application-id":"application_1_1","application-name":"f","queue":"default",)"
      R"("priority":0,"max-app-attempts":1,"resource":{"memory":128,"vCores":1},)"
      R"("am-container-spec":{"commands":{"command":"true"},"environment":{"entry":[)"
      R"({"key":"A","value":"B"}]}},"application-tags":{"tag":["x"]},"unmanaged-AM":false})",
      R"({"application-id":"application_1_2","am-container-spec":{"commands":{"command":["a"]}}})",
      "",
      "{}",
      "[]",
      "null",
      "\"str\""};
  const std::set<int> allowed = {200, 202, 400, 401, 403, 404, 405, 409, 413, 415, 429, 503};

  int errors = 0;
  for (int i = 0; i < 20000; ++i) {
    HttpRequest req;
    req.method = f.Pick(methods);
    req.path = f.Coin() ? f.Pick(paths) : f.Mutate(f.Pick(paths));
    const size_t params = f.Below(4);
    for (size_t p = 0; p < params; ++p) {
      req.params.emplace(f.Coin() ? f.Pick(param_names) : f.RandomBytes(8),
                         f.Coin() ? f.Pick(param_values) : f.RandomBytes(12));
    }
    switch (f.Below(6)) {
      case 0:
        req.body = f.RandomBytes(64);
        break;
      case 1:
        req.body = f.Pick(bodies);
        break;
      case 2:
        req.body = std::string(f.Below(3) == 0 ? 9000 : 200, '[');
        break;
      default:
        req.body = f.Mutate(f.Pick(bodies));
    }
    if (f.Below(4) != 0) req.headers["x-weft-secret"] = f.Coin() ? "fuzz-secret" : "guess";
    if (f.Below(5) == 0)
      req.headers["authorization"] =
          f.Coin() ? "Bearer fuzz-secret" : "Bearer " + f.RandomBytes(12);
    if (f.Below(3) == 0) req.headers["x-weft-user"] = f.Coin() ? "fuzzer" : f.RandomBytes(10);
    if (f.Below(4) == 0) req.headers["content-type"] = f.Coin() ? "application/xml" : "text/plain";
    if (f.Coin()) req.headers["host"] = f.Coin() ? "rm:8088" : f.RandomBytes(20);

    HttpResponse r = api.Handle(req);
    ASSERT_TRUE(allowed.contains(r.status))
        << "status " << r.status << " for " << req.method << " " << req.path << ": " << r.body;
    if (r.status == 202 && r.body.empty()) continue;  // a submission's Location-only answer
    Json j = Json::parse(r.body, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON for " << req.path << ": " << r.body;
    if (r.status >= 400) {
      ++errors;
      ASSERT_TRUE(j.contains("RemoteException")) << r.body;
      ASSERT_TRUE(j["RemoteException"]["message"].is_string());
    }
  }
  EXPECT_GT(errors, 1000);  // the fuzzer does reach the error paths
  // The RM behind it is still consistent and answering.
  EXPECT_TRUE(c.rm_->GetApplication(running).ok());
}

TEST(RestFuzzTest, ParseSubmissionOnRandomBytes) {
  Fuzzer f(7);
  for (int i = 0; i < 20000; ++i) {
    std::string body = f.Coin() ? f.RandomBytes(128)
                                : f.Mutate(R"({"application-id":"application_1_1",)"
                                           R"("am-container-spec":{"commands":{"command":"x"},)"
                                           R"("environment":{"K":"V"}},"resource":{"vCores":1}})");
    auto r = ParseSubmission(body);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_FALSE(r.status().message().empty());
    }
  }
}

}  // namespace
}  // namespace weft::web
