#include "web/rm_web_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/files.h"
#include "web/rm_metrics.h"
#include "web/ui_assets.h"

namespace weft::web {
namespace {

constexpr absl::Duration kWriteTimeout = absl::Seconds(10);

bool ValidAssetName(absl::string_view name) {
  return !name.empty() && name.size() <= 64 && name[0] != '.' &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
         });
}

const char* ContentTypeOf(absl::string_view name) {
  if (absl::EndsWith(name, ".html")) return "text/html; charset=utf-8";
  if (absl::EndsWith(name, ".css")) return "text/css; charset=utf-8";
  if (absl::EndsWith(name, ".js")) return "text/javascript; charset=utf-8";
  if (absl::EndsWith(name, ".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

}  // namespace

// The snapshot and the flag that keeps at most one periodic rebuild queued on the RM loop.
// RM-loop tasks hold it by shared_ptr, so a task that runs after Stop() touches nothing freed.
struct RmWebServer::Shared {
  SnapshotHolder snapshots;
  std::atomic<bool> build_queued{false};
  // What /ws/v1/cluster/info says of HA and the store (set before the first rebuild).
  std::string ha_description = "ResourceManager HA is not enabled.";
  std::string store_name = "weft-sqlite-or-memory";

  // Loop time of the last full rebuild, µs (the refresher spaces rebuilds by it).
  std::atomic<int64_t> last_full_build_us{0};

  // On the RM loop. kFresh rebuilds everything and records its loop time; kReuse (after a
  // write) shares the previous snapshot's node reports, whose cost grows with the cluster.
  void Rebuild(rm::ResourceManager& rm, SnapshotNodes nodes = SnapshotNodes::kFresh) {
    const auto started = std::chrono::steady_clock::now();
    std::shared_ptr<const ClusterSnapshot> previous = snapshots.Get();
    std::shared_ptr<ClusterSnapshot> next = BuildSnapshot(rm, rm.NowMs(), previous.get(), nodes);
    next->ha_description = ha_description;
    next->store_name = store_name;
    snapshots.Set(std::move(next));
    if (nodes == SnapshotNodes::kFresh)
      last_full_build_us.store(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - started)
                                   .count());
  }

  // How long the refresher waits before the next periodic rebuild, ms: refresh_ms, or longer
  // when rebuilds are expensive (a large cluster), so that they take at most
  // 1/kMaxLoopShareInverse of the RM loop.
  int64_t NextRefreshMs(int64_t refresh_ms) const {
    return std::max<int64_t>(refresh_ms, last_full_build_us.load() * kMaxLoopShareInverse / 1000);
  }
  static constexpr int64_t kMaxLoopShareInverse = 20;  // at most 5% of the loop
};

class RmWebServer::Writer final : public RmWriter {
 public:
  Writer(rm::RmServer* rm, std::shared_ptr<Shared> shared) : rm_(rm), shared_(std::move(shared)) {}

  absl::StatusOr<v1::NewApplicationResponse> NewApplication(const rm::Caller&) override {
    return Run<v1::NewApplicationResponse>(
        [](rm::ResourceManager& rm) { return rm.NewApplication(); });
  }
  absl::Status SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                 const rm::Caller& caller) override {
    return Run<bool>([context, caller](rm::ResourceManager& rm) -> absl::StatusOr<bool> {
             absl::Status s = rm.SubmitApplication(context, caller);
             if (!s.ok()) return s;
             return true;
           })
        .status();
  }
  absl::StatusOr<v1::ApplicationReport> KillApplication(const std::string& app_id,
                                                        const std::string& diagnostics,
                                                        const rm::Caller& caller) override {
    return Run<v1::ApplicationReport>(
        [app_id, diagnostics,
         caller](rm::ResourceManager& rm) -> absl::StatusOr<v1::ApplicationReport> {
          if (absl::Status s = rm.KillApplication(app_id, diagnostics, caller); !s.ok()) return s;
          return rm.GetApplication(app_id);
        });
  }

 private:
  // Runs `fn` on the RM loop, publishes a fresh snapshot after a success (so the writer's next
  // read sees its write) and waits at most kWriteTimeout for it.
  template <typename T>
  absl::StatusOr<T> Run(std::function<absl::StatusOr<T>(rm::ResourceManager&)> fn) {
    struct Call {
      absl::Mutex mu;
      bool done ABSL_GUARDED_BY(mu) = false;
      absl::StatusOr<T> result ABSL_GUARDED_BY(mu) = absl::UnavailableError("not run");
    };
    auto call = std::make_shared<Call>();
    rm_->Post([call, shared = shared_, fn = std::move(fn)](rm::ResourceManager& rm) {
      absl::StatusOr<T> r = fn(rm);
      if (r.ok()) shared->Rebuild(rm, SnapshotNodes::kReuse);  // writes change apps, not nodes
      absl::MutexLock l(&call->mu);
      call->result = std::move(r);
      call->done = true;
    });
    absl::MutexLock l(&call->mu);
    if (!call->mu.AwaitWithTimeout(absl::Condition(&call->done), kWriteTimeout))
      return absl::UnavailableError(absl::StrCat("the ResourceManager did not answer within ",
                                                 absl::FormatDuration(kWriteTimeout)));
    return call->result;
  }

  rm::RmServer* rm_;
  std::shared_ptr<Shared> shared_;
};

absl::StatusOr<std::unique_ptr<RmWebServer>> RmWebServer::Start(rm::RmServer* rm,
                                                                RmWebOptions options) {
  if (options.writes_enabled && rm->client_secret().empty())
    return absl::InvalidArgumentError(
        "REST writes need a client secret: enabling them without one would let anyone who "
        "reaches the HTTP port run commands on the cluster (give the RM --secret-file)");
  if (options.refresh_ms <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot refresh interval ", options.refresh_ms, " ms must be > 0"));
  std::unique_ptr<RmWebServer> s(new RmWebServer());
  s->rm_ = rm;
  s->options_ = std::move(options);
  s->shared_ = std::make_shared<Shared>();
  if (rm::HaStatus ha = rm->ha_status(); ha.enabled) {
    s->shared_->ha_description =
        absl::StrCat("ResourceManager HA is enabled: this is ", ha.rm_id,
                     ", serving as the active (a standby redirects here)");
    s->shared_->store_name = "weft-zookeeper";
  }
  s->writer_ = std::make_unique<Writer>(rm, s->shared_);
  RestApiOptions api;
  api.writes_enabled = s->options_.writes_enabled;
  api.anonymous_view = s->options_.anonymous_view;
  api.authenticate = [rm](const rm::Presented& presented) { return rm->Authenticate(presented); };
  api.max_body_bytes = s->options_.max_body_bytes;
  api.log_aggregation_dir = s->options_.log_aggregation_dir;
  if (s->options_.sessions == nullptr) s->options_.sessions = std::make_shared<WebSessions>();
  api.sessions = s->options_.sessions.get();
  s->api_ = std::make_unique<RestApi>(api, &s->shared_->snapshots, s->writer_.get());
  s->Refresh();  // the first snapshot, before any request
  HttpServerOptions http;
  http.bind_host = s->options_.bind_host;
  http.port = s->options_.port;
  http.max_body_bytes = s->options_.max_body_bytes;
  http.limits = s->options_.limits;
  RmWebServer* self = s.get();
  auto server = HttpServer::Start(http, [self](const HttpRequest& r) { return self->Handle(r); });
  if (!server.ok()) return server.status();
  s->http_ = *std::move(server);
  s->refresher_ = std::thread([self] {
    for (;;) {
      {
        absl::MutexLock l(&self->mu_);
        if (self->mu_.AwaitWithTimeout(
                absl::Condition(&self->stopping_),
                absl::Milliseconds(self->shared_->NextRefreshMs(self->options_.refresh_ms))))
          return;
      }
      if (self->shared_->build_queued.exchange(true)) continue;  // the last one has not run
      // The flag clears when the task is gone, run or dropped (a standby RM drops it).
      struct Unqueue {
        std::shared_ptr<Shared> shared;
        ~Unqueue() {
          if (shared) shared->build_queued.store(false);
        }
      };
      auto unqueue = std::make_shared<Unqueue>();
      unqueue->shared = self->shared_;
      self->rm_->Post([unqueue](rm::ResourceManager& rm) {
        unqueue->shared->build_queued.store(false);
        unqueue->shared->Rebuild(rm);
      });
    }
  });
  return s;
}

RmWebServer::~RmWebServer() { Stop(); }

void RmWebServer::Stop() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (refresher_.joinable()) refresher_.join();
  if (http_) http_->Stop();
}

void RmWebServer::Refresh() {
  if (!rm_->ha_status().active) return;  // a standby has no RM to snapshot
  struct Done {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
  };
  auto done = std::make_shared<Done>();
  rm_->Post([shared = shared_, done](rm::ResourceManager& rm) {
    shared->Rebuild(rm);
    absl::MutexLock l(&done->mu);
    done->done = true;
  });
  absl::MutexLock l(&done->mu);
  done->mu.AwaitWithTimeout(absl::Condition(&done->done), absl::Seconds(10));
}

namespace {

// A standby RM's web answer (YARN's standby redirect): 307 to the same path and query on the
// active's web server when it is known, else 503 naming the state.
HttpResponse StandbyResponse(const HttpRequest& req, const rm::HaStatus& ha) {
  if (!ha.leader.has_value() || ha.leader->rm_id == ha.rm_id || ha.leader->http_address.empty())
    return JsonError(503, absl::StrCat("ResourceManager ", ha.rm_id,
                                       " is standby and knows no active ResourceManager yet "
                                       "(an election is under way); retry shortly"));
  std::string location =
      absl::StrCat("http://", ha.leader->http_address, PercentEncode(req.path, /*keep_slash=*/true));
  char sep = '?';
  for (const auto& [k, v] : req.params) {
    absl::StrAppend(&location, std::string(1, sep), PercentEncode(k, /*keep_slash=*/true), "=",
                    PercentEncode(v, /*keep_slash=*/true));
    sep = '&';
  }
  HttpResponse r = JsonError(
      307, absl::StrCat("ResourceManager ", ha.rm_id, " is standby; the active is ",
                        ha.leader->rm_id, " at ", location));
  r.headers.emplace_back("Location", location);
  return r;
}

}  // namespace

scheduler::SchedulerConfig RmWebServer::QueueConfig() const {
  std::shared_ptr<const ClusterSnapshot> s = shared_->snapshots.Get();
  return s != nullptr ? s->queue_config : scheduler::SchedulerConfig{};
}

HttpResponse RmWebServer::Handle(const HttpRequest& req) const {
  if (options_.more_routes) {
    if (std::optional<HttpResponse> r = options_.more_routes(req)) return *std::move(r);
  }
  // Every RM serves its own /metrics; a standby sends everything else to the active.
  if (req.path != "/metrics") {
    if (rm::HaStatus ha = rm_->ha_status(); ha.enabled && !ha.active)
      return StandbyResponse(req, ha);
  }
  if (absl::StartsWith(req.path, "/ws/")) return api_->Handle(req);
  if (req.path == "/metrics") {
    if (req.method != "GET" && req.method != "HEAD") {
      HttpResponse r = JsonError(405, "only GET is allowed on /metrics");
      r.headers.emplace_back("Allow", "GET");
      return r;
    }
    return Metrics();
  }
  return Ui(req);
}

HttpResponse RmWebServer::Metrics() const {
  metrics::TextWriter out;
  rm_->metrics().RenderTo(&out);
  if (std::shared_ptr<const ClusterSnapshot> s = shared_->snapshots.Get())
    RenderClusterMetrics(*s, rm_->NowMs(), &out);
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = out.Take();
  return r;
}

HttpResponse RmWebServer::Ui(const HttpRequest& req) const {
  if (req.method != "GET" && req.method != "HEAD") {
    HttpResponse r = JsonError(405, "the web UI only answers GET");
    r.headers.emplace_back("Allow", "GET");
    return r;
  }
  absl::string_view path = req.path;
  if (path == "/" || path.empty()) {
    HttpResponse r;
    r.status = 302;
    r.content_type = "text/plain; charset=utf-8";
    r.body = "see /cluster\n";
    r.headers.emplace_back("Location", "/cluster");
    return r;
  }
  std::string name;
  if (absl::ConsumePrefix(&path, "/static/")) {
    name = std::string(path);
  } else if (path == "/cluster" || absl::StartsWith(path, "/cluster/")) {
    name = "index.html";  // every page is the same document; weft.js renders by path
  } else if (options_.history_page &&
             (path == "/applicationhistory" || path == "/applicationhistory/")) {
    name = "history.html";  // finished apps, from /ws/v1/applicationhistory (more_routes)
  } else {
    return JsonError(404, absl::StrCat("no such page: ", req.path.substr(0, 128)));
  }
  if (!ValidAssetName(name)) return JsonError(404, "no such file");
  HttpResponse r;
  r.content_type = ContentTypeOf(name);
  if (!options_.ui_dir.empty()) {
    absl::StatusOr<std::string> body = ReadFile(options_.ui_dir + "/" + name);
    if (!body.ok()) return JsonError(404, absl::StrCat("no such file: ", name));
    r.body = *std::move(body);
    return r;
  }
  const UiAsset* asset = FindUiAsset(name);
  if (asset == nullptr) return JsonError(404, absl::StrCat("no such file: ", name));
  r.content_type = asset->content_type;
  r.body.assign(reinterpret_cast<const char*>(asset->data), asset->size);
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                         "script-src 'self'; connect-src 'self'; frame-ancestors 'none'");
  return r;
}

}  // namespace weft::web
