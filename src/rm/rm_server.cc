#include "rm/rm_server.h"

#include <grpcpp/grpcpp.h>
#include <openssl/crypto.h>
#include <pthread.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "common/log.h"
#include "common/reachable_host.h"
#include "federation/store/federation_store.h"
#include "rm/node_tracker.h"
#include "rm/rm_server_calls.h"
#include "security/grpc_server.h"
#include "security/munge.h"
#include "security/user_identity.h"
#include "store/memory_store.h"
#include "store/sqlite_store.h"
#include "weft/v1/admin.grpc.pb.h"
#include "weft/v1/am.grpc.pb.h"
#include "weft/v1/client.grpc.pb.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::rm {

using rm_server_internal::Metadata;
using rm_server_internal::ToGrpc;

// Scheduling passes into the RM's metrics: their wall-clock duration (measured here, on a
// monotonic clock; the RM itself reads only its loop's clock) and their count.
class RmServer::PassMetrics final : public PassObserver {
 public:
  PassMetrics(metrics::Registry* registry, LoopWork* loop_work)
      : loop_work_(loop_work),
        duration_(
            registry->GetHistogram("weft_rm_scheduler_pass_duration_seconds",
                                   "Wall-clock time of one scheduling pass of the RM, seconds.",
                                   metrics::LatencyBuckets())),
        passes_(registry->GetCounter("weft_rm_scheduler_passes_total",
                                     "Scheduling passes the RM ran.")) {}
  void BeforePass() override { start_ = loop_work_->Begin(LoopWork::kOwnCpu); }
  void AfterPass(int64_t allocations) override {
    duration_->Observe(static_cast<double>(LoopWork::Now() - start_.wall_ns) / 1e9);
    passes_->Increment();
    loop_work_->Record(kPassWork, start_, allocations);
  }

 private:
  LoopWork* loop_work_;
  metrics::Histogram* duration_;
  metrics::Counter* passes_;
  LoopWork::Start start_;  // when the pass began
};

void RmServer::RecordRpc(const char* method, std::chrono::steady_clock::time_point start,
                         absl::StatusCode code) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The series are looked up once per (method, code), not on every call: a registry lookup
  // validates names and builds label keys, microseconds the RM loop would pay per heartbeat.
  metrics::Histogram* duration;
  metrics::Counter* requests;
  {
    absl::MutexLock l(&rpc_series_mu_);
    metrics::Histogram*& h = rpc_durations_[method];
    if (h == nullptr)
      h = metrics_.GetHistogram("weft_rm_rpc_duration_seconds",
                                "RM gRPC calls: time from arrival to reply (queueing on the RM "
                                "loop included), seconds, by method.",
                                metrics::LatencyBuckets(), {{"method", method}});
    metrics::Counter*& c = rpc_requests_[{method, code}];
    if (c == nullptr)
      c = metrics_.GetCounter("weft_rm_rpc_requests_total",
                              "RM gRPC calls by method and status code.",
                              {{"method", method}, {"code", absl::StatusCodeToString(code)}});
    duration = h;
    requests = c;
  }
  duration->Observe(seconds);
  requests->Increment();
}

// The four services; each handler posts to the RM loop and finishes the reactor there.
// The four gRPC services over the call helpers (rm_server_calls.h).
class RmServer::Services : public RmServer::Calls {
 public:
  explicit Services(RmServer* server)
      : client(server), am(server), tracker(server), admin(server) {}

  class Client final : public v1::ClientService::CallbackService {
   public:
    explicit Client(RmServer* s) : s_(s) {}
    grpc::ServerUnaryReactor* NewApplication(grpc::CallbackServerContext* ctx,
                                             const v1::NewApplicationRequest*,
                                             v1::NewApplicationResponse* resp) override {
      return Authorized(s_, "ClientService/NewApplication", RmCall::kNewApplication, ctx, resp,
                        [](ResourceManager& rm) { return rm.NewApplication(); });
    }
    grpc::ServerUnaryReactor* SubmitApplication(grpc::CallbackServerContext* ctx,
                                                const v1::SubmitApplicationRequest* req,
                                                v1::SubmitApplicationResponse* resp) override {
      return AuthorizedForApp(
          s_, "ClientService/SubmitApplication", RmCall::kSubmitApplication, ctx, resp,
          req->context().application_id(), &req->context(),
          [req](ResourceManager& rm,
                const Caller& c) -> absl::StatusOr<v1::SubmitApplicationResponse> {
            if (absl::Status st = rm.SubmitApplication(req->context(), c); !st.ok()) return st;
            return v1::SubmitApplicationResponse();
          },
          NoReader<v1::SubmitApplicationResponse>());
    }
    grpc::ServerUnaryReactor* GetApplication(grpc::CallbackServerContext* ctx,
                                             const v1::GetApplicationRequest* req,
                                             v1::GetApplicationResponse* resp) override {
      return AuthorizedForApp(
          s_, "ClientService/GetApplication", RmCall::kGetApplication, ctx, resp,
          req->application_id(), nullptr,
          [req](ResourceManager& rm,
                const Caller& c) -> absl::StatusOr<v1::GetApplicationResponse> {
            auto r = rm.GetApplication(req->application_id(), c);
            if (!r.ok()) return r.status();
            v1::GetApplicationResponse out;
            *out.mutable_report() = *r;
            return out;
          },
          // Another sub-cluster's RM: the whole report, without an unmanaged AM's token.
          [req](ResourceManager& rm) -> absl::StatusOr<v1::GetApplicationResponse> {
            auto r = rm.GetApplication(req->application_id());
            if (!r.ok()) return r.status();
            v1::GetApplicationResponse out;
            *out.mutable_report() = *r;
            out.mutable_report()->clear_amrm_token();
            return out;
          });
    }
    grpc::ServerUnaryReactor* ListApplications(grpc::CallbackServerContext* ctx,
                                               const v1::ListApplicationsRequest* req,
                                               v1::ListApplicationsResponse* resp) override {
      return Authorized(s_, "ClientService/ListApplications", RmCall::kListApplications, ctx, resp,
                        [req](ResourceManager& rm,
                              const Caller& c) -> absl::StatusOr<v1::ListApplicationsResponse> {
                          return rm.ListApplications(*req, c);
                        });
    }
    grpc::ServerUnaryReactor* KillApplication(grpc::CallbackServerContext* ctx,
                                              const v1::KillApplicationRequest* req,
                                              v1::KillApplicationResponse* resp) override {
      return AuthorizedForApp(
          s_, "ClientService/KillApplication", RmCall::kKillApplication, ctx, resp,
          req->application_id(), nullptr,
          [req](ResourceManager& rm,
                const Caller& c) -> absl::StatusOr<v1::KillApplicationResponse> {
            absl::Status st = rm.KillApplication(req->application_id(), req->diagnostics(), c);
            if (!st.ok()) return st;
            v1::KillApplicationResponse out;
            // Not yet while a federated app's end waits for its home record: the client asks
            // again, as YARN's YarnClient does until isKillCompleted.
            out.set_kill_completed(!rm.AppEndPending(req->application_id()));
            return out;
          },
          NoReader<v1::KillApplicationResponse>());
    }
    grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* ctx,
                                        const v1::ListNodesRequest* req,
                                        v1::ListNodesResponse* resp) override {
      return Authorized(s_, "ClientService/ListNodes", RmCall::kListNodes, ctx, resp,
                        [req](ResourceManager& rm) -> absl::StatusOr<v1::ListNodesResponse> {
                          return rm.ListNodes(*req);
                        });
    }

    grpc::ServerUnaryReactor* GetClusterMetrics(grpc::CallbackServerContext* ctx,
                                                const v1::GetClusterMetricsRequest*,
                                                v1::GetClusterMetricsResponse* resp) override {
      return Authorized(s_, "ClientService/GetClusterMetrics", RmCall::kGetClusterMetrics, ctx,
                        resp,
                        [](ResourceManager& rm) -> absl::StatusOr<v1::GetClusterMetricsResponse> {
                          return rm.GetClusterMetrics();
                        });
    }
    grpc::ServerUnaryReactor* GetQueue(grpc::CallbackServerContext* ctx,
                                       const v1::GetQueueRequest* req,
                                       v1::GetQueueResponse* resp) override {
      return Authorized(s_, "ClientService/GetQueue", RmCall::kGetQueue, ctx, resp,
                        [req](ResourceManager& rm) { return rm.GetQueue(*req); });
    }
    grpc::ServerUnaryReactor* GetApplicationAttempts(
        grpc::CallbackServerContext* ctx, const v1::GetApplicationAttemptsRequest* req,
        v1::GetApplicationAttemptsResponse* resp) override {
      return AuthorizedForApp(
          s_, "ClientService/GetApplicationAttempts", RmCall::kGetApplicationAttempts, ctx, resp,
          req->application_id(), nullptr,
          [req](ResourceManager& rm, const Caller& c) {
            return rm.GetApplicationAttempts(req->application_id(), c);
          },
          [req](ResourceManager& rm) { return rm.GetApplicationAttempts(req->application_id()); });
    }

   private:
    RmServer* s_;
  };

  class Am final : public v1::AmService::CallbackService {
   public:
    explicit Am(RmServer* s) : s_(s) {}
    static v1::Token TokenOf(grpc::CallbackServerContext* ctx) {
      v1::Token t;
      // A garbled token is no token: the call is refused by its authentication.
      if (!t.ParseFromString(Metadata(ctx, "weft-amrm-token-bin"))) t.Clear();
      return t;
    }
    grpc::ServerUnaryReactor* RegisterApplicationMaster(
        grpc::CallbackServerContext* ctx, const v1::RegisterApplicationMasterRequest* req,
        v1::RegisterApplicationMasterResponse* resp) override {
      if (absl::Status st = CheckAmCaller(s_, "AmService/RegisterApplicationMaster", ctx); !st.ok())
        return Refused(ctx, st);
      v1::Token t = TokenOf(ctx);
      return OnLoop(
          s_, "AmService/RegisterApplicationMaster", ctx, resp,
          [t, req](ResourceManager& rm) { return rm.RegisterApplicationMaster(t, *req); });
    }
    grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* ctx,
                                       const v1::AllocateRequest* req,
                                       v1::AllocateResponse* resp) override {
      // A long poll (AllocateRequest.wait_ms) may be answered later, from the RM loop.
      if (absl::Status st = CheckAmCaller(s_, "AmService/Allocate", ctx); !st.ok())
        return Refused(ctx, st);
      v1::Token t = TokenOf(ctx);
      // The token's signature is checked here, off the loop (issue 29). The loop uses the
      // result only if these were its RM's keys, checks the signature itself if they refused
      // it, and checks the attempt's state either way.
      std::shared_ptr<const AmRmVerifier> verifier = s_->AmRmView();
      std::string verified;
      if (verifier != nullptr) {
        absl::StatusOr<std::string> attempt =
            verifier->Verify({t.identifier(), t.password()}, s_->loop_.NowMs());
        if (attempt.ok()) verified = *std::move(attempt);
      }
      return OnLoopLater(s_, "AmService/Allocate", ctx, resp,
                         [t, req, verifier, verified](ResourceManager& rm, auto reply) {
                           const bool ours = verifier != nullptr && verifier == rm.amrm_verifier();
                           rm.Allocate(t, *req, std::move(reply), ours ? verified : "");
                         });
    }
    grpc::ServerUnaryReactor* FinishApplicationMaster(
        grpc::CallbackServerContext* ctx, const v1::FinishApplicationMasterRequest* req,
        v1::FinishApplicationMasterResponse* resp) override {
      if (absl::Status st = CheckAmCaller(s_, "AmService/FinishApplicationMaster", ctx); !st.ok())
        return Refused(ctx, st);
      v1::Token t = TokenOf(ctx);
      if (s_->options_.federation_store != nullptr && !s_->options_.rm.sub_cluster_id.empty())
        return FinishAmAtHome(s_, ctx, req, resp, std::move(t));
      return OnLoop(s_, "AmService/FinishApplicationMaster", ctx, resp,
                    [t, req](ResourceManager& rm) { return rm.FinishApplicationMaster(t, *req); });
    }

   private:
    RmServer* s_;
  };

  // TrackerService: with TLS, the caller's certificate must name the node the call speaks for
  // (nm/<node id>); anything else is refused before it touches state, and logged.
  class Tracker final : public v1::TrackerService::CallbackService {
   public:
    explicit Tracker(RmServer* s) : s_(s) {}
    grpc::ServerUnaryReactor* RegisterNodeManager(grpc::CallbackServerContext* ctx,
                                                  const v1::RegisterNodeManagerRequest* req,
                                                  v1::RegisterNodeManagerResponse* resp) override {
      const char* method = "TrackerService/RegisterNodeManager";
      if (absl::Status st = CheckNode(ctx, req->node_id()); !st.ok())
        return Refuse(method, ctx, st);
      return OnLoop(s_, method, ctx, resp,
                    [req](ResourceManager& rm) { return rm.RegisterNode(*req); });
    }
    grpc::ServerUnaryReactor* NodeHeartbeat(grpc::CallbackServerContext* ctx,
                                            const v1::NodeHeartbeatRequest* req,
                                            v1::NodeHeartbeatResponse* resp) override {
      const char* method = "TrackerService/NodeHeartbeat";
      if (absl::Status st = CheckNode(ctx, req->node_id()); !st.ok())
        return Refuse(method, ctx, st);
      grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
      PendingHeartbeat h{std::chrono::steady_clock::now(), ctx, reactor, req, resp};
      // The node is found here, not on the loop (issue 29), and its record fetched towards
      // the caches the loop reads from.
      h.directory = s_->NodesView();
      if (h.directory) {
        h.node = h.directory->Find(req->node_id());
        if (h.node != nullptr) PrefetchForHeartbeat(h.node);
      }
      s_->AddHeartbeat(std::move(h));
      return reactor;
    }

   private:
    absl::Status CheckNode(grpc::CallbackServerContext* ctx, const std::string& node_id) {
      if (!s_->options_.tls.has_value()) return absl::OkStatus();
      absl::StatusOr<security::DaemonIdentity> peer = security::PeerIdentity(*ctx);
      absl::Status st;
      if (!peer.ok()) {
        st = absl::Status(peer.status().code(),
                          absl::StrCat("node '", node_id, "': ", peer.status().message(),
                                       "; NodeManagers present their node certificate"));
      } else if (peer->role != security::DaemonRole::kNodeManager || peer->name != node_id) {
        st = absl::PermissionDeniedError(absl::StrCat("the certificate of ", peer->ToString(),
                                                      " may not speak for node '", node_id, "'"));
      }
      if (!st.ok())
        log::Warn("node_refused",
                  {{"node", node_id}, {"peer", ctx->peer()}, {"reason", st.message()}});
      return st;
    }
    grpc::ServerUnaryReactor* Refuse(const char* method, grpc::CallbackServerContext* ctx,
                                     const absl::Status& st) {
      s_->RecordRpc(method, std::chrono::steady_clock::now(), st.code());
      grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
      reactor->Finish(ToGrpc(st));
      return reactor;
    }

   public:
   private:
    RmServer* s_;
  };

  class Admin final : public v1::AdminService::CallbackService {
   public:
    explicit Admin(RmServer* s) : s_(s) {}
    grpc::ServerUnaryReactor* RefreshQueues(grpc::CallbackServerContext* ctx,
                                            const v1::RefreshQueuesRequest*,
                                            v1::RefreshQueuesResponse* resp) override {
      return Authorized(
          s_, "AdminService/RefreshQueues", RmCall::kAdminService, ctx, resp,
          [](ResourceManager& rm) -> absl::StatusOr<v1::RefreshQueuesResponse> {
            if (absl::Status st = rm.RefreshQueues(); !st.ok()) return st;
            return v1::RefreshQueuesResponse();
          },
          /*admin_only=*/true);
    }
    grpc::ServerUnaryReactor* RefreshNodes(grpc::CallbackServerContext* ctx,
                                           const v1::RefreshNodesRequest* req,
                                           v1::RefreshNodesResponse* resp) override {
      return Authorized(
          s_, "AdminService/RefreshNodes", RmCall::kAdminService, ctx, resp,
          [req](ResourceManager& rm) -> absl::StatusOr<v1::RefreshNodesResponse> {
            if (absl::Status st = rm.RefreshNodes(*req); !st.ok()) return st;
            return v1::RefreshNodesResponse();
          },
          /*admin_only=*/true);
    }
    grpc::ServerUnaryReactor* NodeAttributes(grpc::CallbackServerContext* ctx,
                                             const v1::NodeAttributesRequest* req,
                                             v1::NodeAttributesResponse* resp) override {
      return Authorized(
          s_, "AdminService/NodeAttributes", RmCall::kAdminService, ctx, resp,
          [req](ResourceManager& rm) -> absl::StatusOr<v1::NodeAttributesResponse> {
            if (absl::Status st = rm.SetNodeAttributes(*req); !st.ok()) return st;
            return v1::NodeAttributesResponse();
          },
          /*admin_only=*/true);
    }
    // Answered by a standby too: it is how operators and tools find the active.
    grpc::ServerUnaryReactor* GetServiceState(grpc::CallbackServerContext* ctx,
                                              const v1::GetServiceStateRequest*,
                                              v1::GetServiceStateResponse* resp) override {
      const char* method = "AdminService/GetServiceState";
      if (auto c = Authenticate(s_, method, RmCall::kAdminService, ctx, /*admin_only=*/false);
          !c.ok())
        return Refused(ctx, c.status());
      grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
      const auto start = std::chrono::steady_clock::now();
      RmServer* s = s_;
      s->loop_.Post([s, method, start, reactor, resp] {
        resp->set_state("STARTED");
        if (s->rm_) {
          resp->set_rm_epoch(s->rm_->epoch());
          resp->set_started_ms(s->rm_->started_ms());
        }
        HaStatus ha = s->ha_status();
        resp->set_ha_enabled(ha.enabled);
        resp->set_ha_state(ha.active ? "ACTIVE" : "STANDBY");
        resp->set_rm_id(ha.rm_id);
        if (ha.leader.has_value()) {
          resp->set_active_rm_id(ha.leader->rm_id);
          resp->set_active_address(ha.leader->address);
          resp->set_active_http_address(ha.leader->http_address);
        }
        s->RecordRpc(method, start, absl::StatusCode::kOk);
        reactor->Finish(grpc::Status::OK);
      });
      return reactor;
    }

    // Manual failover: the active steps down and holds off the election (ha_elector.h).
    grpc::ServerUnaryReactor* TransitionToStandby(grpc::CallbackServerContext* ctx,
                                                  const v1::TransitionToStandbyRequest* req,
                                                  v1::TransitionToStandbyResponse*) override {
      const char* method = "AdminService/TransitionToStandby";
      if (auto c = Authenticate(s_, method, RmCall::kAdminService, ctx, /*admin_only=*/true);
          !c.ok())
        return Refused(ctx, c.status());
      const auto start = std::chrono::steady_clock::now();
      absl::Status st;
      if (!s_->elector_) {
        st = absl::FailedPreconditionError(
            s_->options_.ha.has_value()
                ? "this ResourceManager has not joined the election yet"
                : "this ResourceManager runs without HA (weft rm --ha-id): there is no standby "
                  "to fail over to");
      } else if (req->hold_ms() < 0) {
        st = absl::InvalidArgumentError(absl::StrCat("hold_ms ", req->hold_ms(), " is negative"));
      } else {
        // Blocks this gRPC thread until the RM is standby: a rare operator call, and the
        // step-down does not wait on gRPC.
        st = s_->elector_->StepDown(
            absl::Milliseconds(req->hold_ms() == 0 ? 10000 : req->hold_ms()));
      }
      s_->RecordRpc(method, start, st.code());
      grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
      reactor->Finish(ToGrpc(st));
      return reactor;
    }

   private:
    RmServer* s_;
  };

  Client client;
  Am am;
  Tracker tracker;
  Admin admin;
};

absl::Status ValidateLoopPoll(int64_t loop_poll_us) {
  if (loop_poll_us >= -1 && loop_poll_us <= 1'000'000) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "loop poll ", loop_poll_us, " µs must be -1 (never sleep), 0 (sleep at once) .. 1000000"));
}

absl::StatusOr<std::unique_ptr<RmServer>> RmServer::Start(RmServerOptions options) {
  std::unique_ptr<RmServer> s(new RmServer());
  s->options_ = std::move(options);
  s->options_.auth.admin_secret = s->options_.client_secret;
  if (s->options_.auth.rm_user.empty()) {
    absl::StatusOr<security::UnixUser> me = security::CurrentUser();
    if (!me.ok()) return me.status();
    s->options_.auth.rm_user = me->name;
  }
  if (s->options_.auth.mode == UserAuthentication::kMunge) {
    // Fail at start, not at the first client: users are authenticated through munged.
    absl::StatusOr<std::string> probe =
        security::MungeEncode(s->options_.auth.munge_socket, "weft-rm-start");
    if (!probe.ok())
      return absl::FailedPreconditionError(
          absl::StrCat("the RM authenticates users with MUNGE: ", probe.status().message()));
  }
  if (s->options_.federation_proxies && !s->options_.tls.has_value())
    return absl::InvalidArgumentError(
        "a federation sub-cluster RM trusts routers and NMs by their TLS certificates: it "
        "needs TLS");
  if (s->options_.ha.has_value()) {
    if (absl::Status st = ValidateHaOptions(*s->options_.ha); !st.ok()) return st;
    if (!s->options_.state_store_path.empty())
      return absl::InvalidArgumentError(
          "an HA ResourceManager keeps its state in ZooKeeper, not in a SQLite file: give "
          "either the HA options or a state store path");
  } else if (s->options_.state_store_path.empty()) {
    s->store_ = store::NewMemoryStore();
  } else {
    auto st = store::OpenSqliteStore(s->options_.state_store_path);
    if (!st.ok()) return st.status();
    s->store_ = std::move(*st);
  }
  s->secrets_ = std::make_unique<security::OpenSslSecretSource>();
  if (!s->options_.rm.pass_observer) {
    s->pass_metrics_ = std::make_unique<PassMetrics>(&s->metrics_, &s->loop_work_);
    s->options_.rm.pass_observer = s->pass_metrics_.get();
  }
  s->launcher_ =
      s->options_.launcher ? std::move(s->options_.launcher) : NewGrpcAmLauncher(s->options_.tls);
  if (!s->options_.rm.sub_cluster_id.empty() && s->options_.federation_store != nullptr &&
      !s->options_.rm.federation_epoch) {
    s->options_.rm.federation_epoch = [store = s->options_.federation_store,
                                       id = s->options_.rm.sub_cluster_id](int64_t own) {
      return store->ClaimContainerEpoch(id, own);
    };
  }
  if (s->options_.federation_proxies) {
    s->directory_ = s->options_.federation_directory;
    if (s->directory_ == nullptr && s->options_.federation_store != nullptr)
      s->directory_ = NewFederationDirectory(s->options_.federation_store, s->options_.tls);
  }
  if (s->directory_ != nullptr ||
      (s->options_.federation_store != nullptr && !s->options_.rm.sub_cluster_id.empty())) {
    // Two: one slow home RM (up to the directory's deadline) does not hold every claim.
    for (int i = 0; i < 2; ++i) {
      s->claim_checkers_.push_back(std::make_unique<ThreadEventLoop>());
      s->claim_checkers_.back()->Start();
    }
  }
  if (s->options_.federation_store != nullptr && !s->options_.rm.sub_cluster_id.empty() &&
      !s->options_.rm.record_end_at_home) {
    // A kill or failure of a federated app is written into its home record (on a claim
    // checker thread) before the app ends: app_lifecycle.h FederationEnds.
    s->options_.rm.record_end_at_home = [srv = s.get()](const std::string& app_id,
                                                        int64_t ended_ms,
                                                        std::function<void(absl::Status)> done) {
      srv->NextClaimChecker().Post([srv, app_id, ended_ms, done = std::move(done)] {
        done(RecordEndAtHome(*srv->options_.federation_store, app_id,
                             srv->options_.rm.sub_cluster_id, ended_ms));
      });
    };
  }
  if (s->options_.heartbeat_batch_ms < 0 || s->options_.heartbeat_batch_ms > 100)
    return absl::InvalidArgumentError(absl::StrCat(
        "heartbeat batch ", s->options_.heartbeat_batch_ms, " ms must be 0 (none) .. 100 ms"));
  if (absl::Status s_poll = ValidateLoopPoll(s->options_.loop_poll_us); !s_poll.ok())
    return s_poll;
  if (s->options_.call_finishers < -1 || s->options_.call_finishers > 64)
    return absl::InvalidArgumentError(absl::StrCat("call finishers ", s->options_.call_finishers,
                                                   " must be -1 (auto), 0 (the loop) .. 64"));
  // By default a quarter of the cores (1..4) finish calls; each is far cheaper than the
  // loop's work.
  const int finishers =
      s->options_.call_finishers >= 0
          ? s->options_.call_finishers
          : static_cast<int>(std::clamp(std::thread::hardware_concurrency() / 4, 1u, 4u));
  for (int i = 0; i < finishers; ++i) {
    s->finishers_.push_back(std::make_unique<ThreadEventLoop>());
    s->finishers_.back()->Start();
  }
  s->loop_.Start(s->options_.loop_poll_us < 0
                     ? absl::InfiniteDuration()
                     : absl::Microseconds(s->options_.loop_poll_us));
  // Best effort: the name only lets `top -H`, perf and gdb tell the RM loop's thread apart.
  s->loop_.Post([] { pthread_setname_np(pthread_self(), "weft-rm-loop"); });
  if (!s->options_.ha.has_value()) {
    // Without HA the RM serves from the start; with HA, once elected (JoinElection()).
    absl::Status created;
    s->WaitOnLoop([&] { created = s->CreateRm(); });
    if (!created.ok()) return created;
  }
  s->services_ = std::make_unique<Services>(s.get());
  absl::StatusOr<security::StartedGrpcServer> started = security::StartGrpcServer(
      "ResourceManager", s->options_.bind_host, s->options_.port, s->options_.tls,
      {&s->services_->client, &s->services_->am, &s->services_->tracker, &s->services_->admin});
  if (!started.ok()) return started.status();
  s->server_ = std::move(started->server);
  s->port_ = started->port;
  s->RunOnLoop([addr = s->AmFacingAddress()](ResourceManager& rm) { rm.set_rm_address(addr); });
  return s;
}

std::string RmServer::AmFacingAddress() const {
  if (options_.ha.has_value() && !options_.ha->rm_addresses.empty())
    return absl::StrJoin(options_.ha->rm_addresses, ",");
  // AMs run on other hosts: a wildcard bind address would have them dial their own host.
  return absl::StrCat(ReachableHost(options_.bind_host), ":", port_);
}

absl::Status RmServer::CreateRm() {
  auto rm =
      ResourceManager::Create(options_.rm, &loop_, store_.get(), launcher_.get(), secrets_.get());
  if (!rm.ok()) return rm.status();
  rm_ = std::move(*rm);
  SetViews({rm_->node_directory(), rm_->amrm_verifier()});
  if (port_ != 0) rm_->set_rm_address(AmFacingAddress());
  absl::MutexLock l(&ha_mu_);
  active_ = true;
  return absl::OkStatus();
}

RmServer::~RmServer() { Shutdown(); }

std::string RmServer::address() const { return absl::StrCat(options_.bind_host, ":", port_); }

void RmServer::WaitOnLoop(const std::function<void()>& fn) {
  absl::Notification done;
  loop_.Post([&] {
    fn();
    done.Notify();
  });
  done.WaitForNotification();
}

void RmServer::AddHeartbeat(PendingHeartbeat heartbeat) {
  absl::MutexLock l(&heartbeats_mu_);
  heartbeats_.push_back(std::move(heartbeat));
  if (heartbeat_drain_scheduled_) return;
  heartbeat_drain_scheduled_ = true;
  if (options_.heartbeat_batch_ms == 0) {
    loop_.Post([this] { DrainHeartbeats(); });
  } else {
    loop_.Schedule(options_.heartbeat_batch_ms, [this] { DrainHeartbeats(); });
  }
}

void RmServer::DrainHeartbeats() {
  static constexpr char kMethod[] = "TrackerService/NodeHeartbeat";
  std::vector<PendingHeartbeat> batch;
  {
    absl::MutexLock l(&heartbeats_mu_);
    batch.swap(heartbeats_);
    heartbeat_drain_scheduled_ = false;
  }
  // Each reply's status; the replies themselves are in the calls' responses.
  std::vector<grpc::Status> statuses;
  statuses.reserve(batch.size());
  const std::shared_ptr<const NodeDirectory> directory = rm_ ? rm_->node_directory() : nullptr;
  for (PendingHeartbeat& h : batch) {
    const LoopWork::Start on_loop = loop_work_.Begin();
    if (!rm_) {
      statuses.push_back(StandbyStatus(h.ctx));
      continue;
    }
    RmNode* resolved = h.directory == directory ? h.node : nullptr;
    h.directory.reset();  // an RM replaced since may free its directory
    absl::StatusOr<v1::NodeHeartbeatResponse> r = rm_->NodeHeartbeat(*h.request, resolved);
    if (r.ok()) *h.response = *std::move(r);
    statuses.push_back(ToGrpc(r.status()));
    loop_work_.Record(kMethod, on_loop);
  }
  // Encoding the replies and writing them happen on a finisher (without finishers, here).
  auto finish = [this, batch = std::move(batch), statuses = std::move(statuses)] {
    for (size_t i = 0; i < batch.size(); ++i) {
      RecordRpc(kMethod, batch[i].start, static_cast<absl::StatusCode>(statuses[i].error_code()));
      batch[i].reactor->Finish(statuses[i]);
    }
  };
  HandToFinisher(std::move(finish));
}

LoopStats RmServer::LoopStatistics() {
  LoopStats stats;
  WaitOnLoop([&] { stats = loop_work_.Snapshot(loop_.BusyNanos()); });
  return stats;
}

void RmServer::RunOnLoop(std::function<void(ResourceManager&)> fn) {
  WaitOnLoop([&] {
    if (rm_) fn(*rm_);
  });
}

void RmServer::Post(std::function<void(ResourceManager&)> fn) {
  loop_.Post([this, fn = std::move(fn)] {
    if (rm_) fn(*rm_);
  });
}

void RmServer::Shutdown() {
  // Held long polls end first: the server's shutdown waits for every call.
  if (rm_)
    WaitOnLoop([&] {
      if (rm_) rm_->StopHoldingCalls();
    });
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_.reset();
  }
  // Claims still being judged finish their calls (on the loop, which still runs).
  for (auto& checker : claim_checkers_) checker->Stop();
  // An active gives up its leadership (a standby takes over at once) and its RM.
  elector_.reset();
  if (rm_)
    WaitOnLoop([&] {
      SetViews({});
      rm_.reset();
    });
  loop_.Stop();
  // Last: the loop's final tasks may still have handed them calls to finish.
  for (auto& finisher : finishers_) finisher->Stop();
  if (store_) log::WarnIfError(store_->Close(), "state_store_close_failed", {{"during", "stop"}});
}

}  // namespace weft::rm
