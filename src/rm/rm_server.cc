#include "rm/rm_server.h"

#include <grpcpp/grpcpp.h>
#include <openssl/crypto.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "common/log.h"
#include "common/reachable_host.h"
#include "federation/store/federation_store.h"
#include "rm/federation_fencing.h"
#include "security/tokens.h"
#include "security/munge.h"
#include "security/user_identity.h"
#include "store/memory_store.h"
#include "store/sqlite_store.h"
#include "weft/v1/admin.grpc.pb.h"
#include "weft/v1/am.grpc.pb.h"
#include "weft/v1/client.grpc.pb.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::rm {
namespace {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

std::string Metadata(grpc::CallbackServerContext* ctx, const std::string& key) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(key);
  return it == md.end() ? "" : std::string(it->second.data(), it->second.size());
}

}  // namespace

// Scheduling passes into the RM's metrics: their wall-clock duration (measured here, on a
// monotonic clock; the RM itself reads only its loop's clock) and their count.
class RmServer::PassMetrics final : public PassObserver {
 public:
  explicit PassMetrics(metrics::Registry* registry)
      : duration_(
            registry->GetHistogram("weft_rm_scheduler_pass_duration_seconds",
                                   "Wall-clock time of one scheduling pass of the RM, seconds.",
                                   metrics::LatencyBuckets())),
        passes_(registry->GetCounter("weft_rm_scheduler_passes_total",
                                     "Scheduling passes the RM ran.")) {}
  void BeforePass() override { start_ = std::chrono::steady_clock::now(); }
  void AfterPass(int64_t) override {
    duration_->Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    passes_->Increment();
  }

 private:
  metrics::Histogram* duration_;
  metrics::Counter* passes_;
  std::chrono::steady_clock::time_point start_;
};

void RmServer::RecordRpc(const char* method, std::chrono::steady_clock::time_point start,
                         absl::StatusCode code) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  metrics_
      .GetHistogram("weft_rm_rpc_duration_seconds",
                    "RM gRPC calls: time from arrival to reply (queueing on the RM loop "
                    "included), seconds, by method.",
                    metrics::LatencyBuckets(), {{"method", method}})
      ->Observe(seconds);
  metrics_
      .GetCounter("weft_rm_rpc_requests_total", "RM gRPC calls by method and status code.",
                  {{"method", method}, {"code", absl::StatusCodeToString(code)}})
      ->Increment();
}

// The four services; each handler posts to the RM loop and finishes the reactor there.
class RmServer::Services {
 public:
  explicit Services(RmServer* server)
      : client(server), am(server), tracker(server), admin(server) {}

  // Runs `fn` on the loop and finishes the call with its result; the call's latency (from
  // here to Finish) and status code go to the RPC metrics under `method`. While there is no
  // ResourceManager (a standby, or one shutting down) the call gets the standby's answer
  // instead (StandbyStatus).
  template <typename Resp, typename Fn>
  static grpc::ServerUnaryReactor* OnLoop(RmServer* s, const char* method,
                                          grpc::CallbackServerContext* ctx, Resp* resp, Fn fn) {
    return OnLoopLater(s, method, ctx, resp,
                       [fn = std::move(fn)](ResourceManager& rm, auto reply) mutable {
                         reply(fn(rm));
                       });
  }

  // The same for a call `fn` may answer later: it gets the RM and a `reply` to call once, on
  // the loop, with the result (a long-poll Allocate). The latency includes the wait.
  template <typename Resp, typename Fn>
  static grpc::ServerUnaryReactor* OnLoopLater(RmServer* s, const char* method,
                                               grpc::CallbackServerContext* ctx, Resp* resp,
                                               Fn fn) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    FinishOnLoop(s, method, std::chrono::steady_clock::now(), ctx, reactor, resp, std::move(fn));
    return reactor;
  }

  // OnLoopLater's work for a call whose reactor exists already (`start`: when it arrived).
  template <typename Resp, typename Fn>
  static void FinishOnLoop(RmServer* s, const char* method,
                           std::chrono::steady_clock::time_point start,
                           grpc::CallbackServerContext* ctx, grpc::ServerUnaryReactor* reactor,
                           Resp* resp, Fn fn) {
    s->loop_.Post([s, method, start, ctx, reactor, resp, fn = std::move(fn)]() mutable {
      if (!s->rm_) {
        grpc::Status st = s->StandbyStatus(ctx);
        s->RecordRpc(method, start, static_cast<absl::StatusCode>(st.error_code()));
        reactor->Finish(st);
        return;
      }
      fn(*s->rm_, [s, method, start, reactor, resp](absl::StatusOr<Resp> r) {
        if (r.ok()) *resp = std::move(*r);
        s->RecordRpc(method, start, r.status().code());
        reactor->Finish(ToGrpc(r.status()));
      });
    });
  }

  // Who called ClientService or AdminService.
  struct Authn {
    Caller caller;
    // The federation daemon whose certificate the call presented, when its role counts here
    // (rm/federation_identity.h); unset for other callers.
    std::optional<security::DaemonIdentity> peer;
    PeerAccess access = PeerAccess::kPlainClient;
  };

  static void LogPeerRefused(const security::DaemonIdentity& peer, RmCall call,
                             const absl::Status& st) {
    log::Warn("federation_peer_refused", {{"peer", peer.ToString()},
                                          {"call", RmCallName(call)},
                                          {"reason", st.message()}});
  }

  // The federation daemon a call's certificate names, when this RM is a sub-cluster with TLS.
  static std::optional<security::DaemonIdentity> FederationPeer(RmServer* s,
                                                               grpc::CallbackServerContext* ctx) {
    if (!s->options_.federation_proxies || !s->options_.tls.has_value()) return std::nullopt;
    absl::StatusOr<security::DaemonIdentity> peer = security::PeerIdentity(*ctx);
    if (!peer.ok()) return std::nullopt;
    return *std::move(peer);
  }

  // Authenticates a ClientService or AdminService caller (client_auth.h); a federation daemon's
  // certificate counts only for what its role may call (CheckPeerCall). `admin_only`: cluster
  // admins only. A refusal is counted in the RPC metrics; the caller finishes the call.
  static absl::StatusOr<Authn> Authenticate(RmServer* s, const char* method, RmCall call,
                                            grpc::CallbackServerContext* ctx, bool admin_only) {
    Authn a;
    Presented p;
    p.munge_credential = Metadata(ctx, "weft-munge-cred");
    p.secret = Metadata(ctx, "weft-secret");
    p.declared_user = Metadata(ctx, "weft-user");
    absl::StatusOr<Caller> caller;
    if (std::optional<security::DaemonIdentity> peer = FederationPeer(s, ctx)) {
      absl::StatusOr<PeerAccess> access = CheckPeerCall(*peer, call);
      if (!access.ok()) {
        LogPeerRefused(*peer, call, access.status());
        s->RecordRpc(method, std::chrono::steady_clock::now(), access.status().code());
        return access.status();
      }
      a.access = *access;
      if (a.access != PeerAccess::kPlainClient) a.peer = *std::move(peer);
    }
    if (a.access == PeerAccess::kFederationReader) {
      a.caller.user = a.caller.real_user = a.peer->ToString();
      return a;
    }
    if (a.peer.has_value()) p.federation_peer = a.peer->ToString();
    caller = AuthenticateClient(s->options_.auth, p);
    if (caller.ok() && admin_only && !caller->admin)
      caller = absl::PermissionDeniedError(absl::StrCat(
          "user '", caller->user, "' is not a cluster admin (weft rm --admins)"));
    if (!caller.ok()) {
      s->RecordRpc(method, std::chrono::steady_clock::now(), caller.status().code());
      return caller.status();
    }
    a.caller = *std::move(caller);
    return a;
  }

  static grpc::ServerUnaryReactor* Refused(grpc::CallbackServerContext* ctx,
                                           const absl::Status& status) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(ToGrpc(status));
    return reactor;
  }

  // ClientService and AdminService calls about no one app: the caller is authenticated
  // (client_auth.h) before the call touches state; `fn` gets the Caller when it takes one.
  // `admin_only`: AdminService, for cluster admins only.
  template <typename Resp, typename Fn>
  static grpc::ServerUnaryReactor* Authorized(RmServer* s, const char* method, RmCall call,
                                              grpc::CallbackServerContext* ctx, Resp* resp, Fn fn,
                                              bool admin_only = false) {
    absl::StatusOr<Authn> a = Authenticate(s, method, call, ctx, admin_only);
    if (!a.ok()) return Refused(ctx, a.status());
    // CheckPeerCall gives claims and reads as an RM only for calls about one app, which take
    // AuthorizedForApp: never here.
    if (a->access == PeerAccess::kAppCheck || a->access == PeerAccess::kFederationReader)
      return Refused(ctx, absl::PermissionDeniedError(absl::StrCat(
                              a->peer->ToString(), " may not call ", RmCallName(call))));
    if constexpr (std::is_invocable_v<Fn, ResourceManager&, const Caller&>) {
      return OnLoop(s, method, ctx, resp,
                    [fn = std::move(fn), c = std::move(a->caller)](ResourceManager& rm) mutable {
                      return fn(rm, c);
                    });
    } else {
      return OnLoop(s, method, ctx, resp, std::move(fn));
    }
  }

  // ClientService calls about application `app_id`: as Authorized, except that
  // - another sub-cluster's RM (PeerAccess::kFederationReader) gets `as_reader(rm)`;
  // - an NM's or the GPG's claim (PeerAccess::kAppCheck) is judged first on a claim checker
  //   thread (JudgeAppClaim: the federation store, the app's home RM), then checked again on
  //   the loop (CheckGrantOnLoop) right before `fn(rm, caller)` runs.
  // `submission`: SubmitApplication's context (it lives as long as the call).
  template <typename Resp, typename Fn, typename ReaderFn>
  static grpc::ServerUnaryReactor* AuthorizedForApp(
      RmServer* s, const char* method, RmCall call, grpc::CallbackServerContext* ctx, Resp* resp,
      const std::string& app_id, const v1::ApplicationSubmissionContext* submission, Fn fn,
      ReaderFn as_reader) {
    absl::StatusOr<Authn> a = Authenticate(s, method, call, ctx, /*admin_only=*/false);
    if (!a.ok()) return Refused(ctx, a.status());
    if (a->access == PeerAccess::kFederationReader) {
      return OnLoop(s, method, ctx, resp, std::move(as_reader));
    }
    if (call == RmCall::kSubmitApplication && a->peer.has_value() &&
        a->peer->role == security::DaemonRole::kRouter && s->directory_ != nullptr &&
        !s->options_.rm.sub_cluster_id.empty()) {
      return RoutedSubmission(s, method, ctx, resp, app_id, std::move(fn),
                              std::move(a->caller));
    }
    if (a->access != PeerAccess::kAppCheck) {
      // The GPG reads for users but never gets an unmanaged AM's token (only the AMRMProxy,
      // through its claim, and routers, for the users they authenticated, do).
      const bool strip_token =
          a->peer.has_value() && a->peer->role == security::DaemonRole::kGpg;
      return OnLoop(s, method, ctx, resp,
                    [fn = std::move(fn), c = std::move(a->caller),
                     strip_token](ResourceManager& rm) mutable {
                      auto r = fn(rm, c);
                      if constexpr (std::is_same_v<Resp, v1::GetApplicationResponse>) {
                        if (strip_token && r.ok()) r->mutable_report()->clear_amrm_token();
                      }
                      return r;
                    });
    }
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    const auto start = std::chrono::steady_clock::now();
    if (s->directory_ == nullptr) {
      absl::Status st = absl::PermissionDeniedError(absl::StrCat(
          "federation daemon ", a->peer->ToString(), " may not call ", RmCallName(call),
          " for application ", app_id,
          ": this RM has no federation store to check its claim against"));
      LogPeerRefused(*a->peer, call, st);
      s->RecordRpc(method, start, st.code());
      reactor->Finish(ToGrpc(st));
      return reactor;
    }
    AppClaim claim;
    claim.peer = *a->peer;
    claim.call = call;
    claim.app_id = app_id;
    claim.caller = a->caller;
    claim.root_allowed = s->options_.auth.federation_root_apps;
    claim.submission = submission;
    claim.self_sub_cluster_id = s->options_.rm.sub_cluster_id;
    claim.local_uam_home = [s, app_id] {
      std::string home;
      s->RunOnLoop([&](ResourceManager& rm) {
        for (const FederationApp& f : rm.FederationApps())
          if (f.app_id == app_id) home = f.federation_home_sub_cluster_id;
      });
      return home;
    };
    s->NextClaimChecker().Post([s, method, start, ctx, reactor, resp, claim = std::move(claim),
                  fn = std::move(fn), caller = std::move(a->caller)]() mutable {
      absl::StatusOr<FederationGrant> grant = JudgeAppClaim(claim, *s->directory_);
      if (!grant.ok()) {
        LogPeerRefused(claim.peer, claim.call, grant.status());
        s->RecordRpc(method, start, grant.status().code());
        reactor->Finish(ToGrpc(grant.status()));
        return;
      }
      FinishOnLoop(s, method, start, ctx, reactor, resp,
                   [grant = *std::move(grant), fn = std::move(fn), caller = std::move(caller)](
                       ResourceManager& rm, auto reply) mutable {
                     if (absl::Status st = CheckGrantOnLoop(grant, rm); !st.ok()) {
                       LogPeerRefused(grant.peer, grant.call, st);
                       reply(st);
                       return;
                     }
                     reply(fn(rm, caller));
                   });
    });
    return reactor;
  }

  // A router's SubmitApplication at a sub-cluster RM (federation_fencing.h): taken only while
  // the app's home record names this sub-cluster, read on a claim checker thread; a call that
  // took longer than the federation fence between that read and the loop (the RM was stopped
  // in between, and the app may have moved since) is refused as Unavailable.
  template <typename Resp, typename Fn>
  static grpc::ServerUnaryReactor* RoutedSubmission(RmServer* s, const char* method,
                                                    grpc::CallbackServerContext* ctx, Resp* resp,
                                                    const std::string& app_id, Fn fn,
                                                    Caller caller) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    const auto start = std::chrono::steady_clock::now();
    s->NextClaimChecker().Post([s, method, start, ctx, reactor, resp, app_id, fn = std::move(fn),
                                caller = std::move(caller)]() mutable {
      const auto read = std::chrono::steady_clock::now();
      if (absl::Status st =
              CheckRoutedSubmissionHome(*s->directory_, app_id, s->options_.rm.sub_cluster_id);
          !st.ok()) {
        log::Warn("routed_submission_refused", {{"app", app_id}, {"why", st.message()}});
        s->RecordRpc(method, start, st.code());
        reactor->Finish(ToGrpc(st));
        return;
      }
      FinishOnLoop(s, method, start, ctx, reactor, resp,
                   [s, read, app_id, fn = std::move(fn), caller = std::move(caller)](
                       ResourceManager& rm, auto reply) mutable {
                     const int64_t fence_ms = s->options_.rm.federation_fence_ms;
                     const int64_t waited_ms =
                         std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - read)
                             .count();
                     if (fence_ms > 0 && waited_ms > fence_ms) {
                       reply(absl::UnavailableError(absl::StrCat(
                           "application ", app_id, ": ", waited_ms,
                           " ms passed between the check of its home and the submission "
                           "(longer than the federation fence, ",
                           fence_ms, " ms): not taken; submit again")));
                       return;
                     }
                     reply(fn(rm, caller));
                   });
    });
    return reactor;
  }

  // FinishApplicationMaster at a sub-cluster RM with a federation store: the end of an app
  // homed here goes into its home record first (RecordEndAtHome, on a claim checker thread),
  // then the AM unregisters on the loop. An unmanaged AM of an app homed elsewhere, and an app
  // with no home record, unregister as anywhere else.
  static grpc::ServerUnaryReactor* FinishAmAtHome(RmServer* s, grpc::CallbackServerContext* ctx,
                                                  const v1::FinishApplicationMasterRequest* req,
                                                  v1::FinishApplicationMasterResponse* resp,
                                                  v1::Token token) {
    static constexpr char kMethod[] = "AmService/FinishApplicationMaster";
    auto unregister = [req, token](ResourceManager& rm, auto reply) {
      reply(rm.FinishApplicationMaster(token, *req));
    };
    absl::StatusOr<security::AmRmTokenData> data = security::DecodeAmRmToken(token.identifier());
    if (!data.ok()) return OnLoopLater(s, kMethod, ctx, resp, unregister);  // refused there
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    const auto start = std::chrono::steady_clock::now();
    FinishOnLoop(s, kMethod, start, ctx, reactor, resp,
                 [s, start, ctx, reactor, resp, unregister, attempt = data->app_attempt_id](
                     ResourceManager& rm, auto reply) {
                   absl::StatusOr<FederationApp> app = rm.FederationAppOfAttempt(attempt);
                   if (!app.ok() || !app->federation_home_sub_cluster_id.empty()) {
                     unregister(rm, std::move(reply));
                     return;
                   }
                   const int64_t now_ms = rm.NowMs();
                   s->NextClaimChecker().Post([s, start, ctx, reactor, resp, unregister, now_ms,
                                               app_id = app->app_id]() {
                     if (absl::Status st =
                             RecordEndAtHome(*s->options_.federation_store, app_id,
                                             s->options_.rm.sub_cluster_id, now_ms);
                         !st.ok()) {
                       log::Warn("am_unregister_refused", {{"app", app_id}, {"why", st.message()}});
                       s->RecordRpc(kMethod, start, st.code());
                       reactor->Finish(ToGrpc(st));
                       return;
                     }
                     FinishOnLoop(s, kMethod, start, ctx, reactor, resp, unregister);
                   });
                 });
    return reactor;
  }

  // AmService is for AMs (their token) and the AMRMProxies that speak for them; a router's or
  // the GPG's certificate is refused there (CheckPeerCall).
  static absl::Status CheckAmCaller(RmServer* s, const char* method,
                                    grpc::CallbackServerContext* ctx) {
    std::optional<security::DaemonIdentity> peer = FederationPeer(s, ctx);
    if (!peer.has_value()) return absl::OkStatus();
    absl::StatusOr<PeerAccess> access = CheckPeerCall(*peer, RmCall::kAmService);
    if (access.ok()) return absl::OkStatus();
    LogPeerRefused(*peer, RmCall::kAmService, access.status());
    s->RecordRpc(method, std::chrono::steady_clock::now(), access.status().code());
    return access.status();
  }

  // AuthorizedForApp's `as_reader` for calls another sub-cluster's RM never reaches
  // (CheckPeerCall).
  template <typename Resp>
  static auto NoReader() {
    return [](ResourceManager&) -> absl::StatusOr<Resp> {
      return absl::PermissionDeniedError("only reads are open to another sub-cluster's RM");
    };
  }

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
            out.set_kill_completed(true);
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
      return Authorized(s_, "ClientService/GetClusterMetrics", RmCall::kGetClusterMetrics, ctx, resp,
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
      (void)t.ParseFromString(Metadata(ctx, "weft-amrm-token-bin"));
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
      return OnLoopLater(s_, "AmService/Allocate", ctx, resp,
                         [t, req](ResourceManager& rm, auto reply) {
                           rm.Allocate(t, *req, std::move(reply));
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
      if (absl::Status st = CheckNode(ctx, req->node_id()); !st.ok()) return Refuse(method, ctx, st);
      return OnLoop(s_, method, ctx, resp,
                    [req](ResourceManager& rm) { return rm.RegisterNode(*req); });
    }
    grpc::ServerUnaryReactor* NodeHeartbeat(grpc::CallbackServerContext* ctx,
                                            const v1::NodeHeartbeatRequest* req,
                                            v1::NodeHeartbeatResponse* resp) override {
      const char* method = "TrackerService/NodeHeartbeat";
      if (absl::Status st = CheckNode(ctx, req->node_id()); !st.ok()) return Refuse(method, ctx, st);
      return OnLoop(s_, method, ctx, resp,
                    [req](ResourceManager& rm) { return rm.NodeHeartbeat(*req); });
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
        log::Warn("node_refused", {{"node", node_id}, {"peer", ctx->peer()}, {"reason", st.message()}});
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
      return Authorized(s_, "AdminService/RefreshQueues", RmCall::kAdminService, ctx, resp,
                        [](ResourceManager& rm) -> absl::StatusOr<v1::RefreshQueuesResponse> {
                          if (absl::Status st = rm.RefreshQueues(); !st.ok()) return st;
                          return v1::RefreshQueuesResponse();
                        },
                        /*admin_only=*/true);
    }
    grpc::ServerUnaryReactor* RefreshNodes(grpc::CallbackServerContext* ctx,
                                           const v1::RefreshNodesRequest* req,
                                           v1::RefreshNodesResponse* resp) override {
      return Authorized(s_, "AdminService/RefreshNodes", RmCall::kAdminService, ctx, resp,
                        [req](ResourceManager& rm) -> absl::StatusOr<v1::RefreshNodesResponse> {
                          if (absl::Status st = rm.RefreshNodes(*req); !st.ok()) return st;
                          return v1::RefreshNodesResponse();
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
      return absl::FailedPreconditionError(absl::StrCat(
          "the RM authenticates users with MUNGE: ", probe.status().message()));
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
    s->pass_metrics_ = std::make_unique<PassMetrics>(&s->metrics_);
    s->options_.rm.pass_observer = s->pass_metrics_.get();
  }
  s->launcher_ = s->options_.launcher ? std::move(s->options_.launcher)
                                      : NewGrpcAmLauncher(s->options_.tls);
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
  s->loop_.Start();
  if (!s->options_.ha.has_value()) {
    // Without HA the RM serves from the start; with HA, once elected (JoinElection()).
    absl::Status created;
    s->WaitOnLoop([&] { created = s->CreateRm(); });
    if (!created.ok()) return created;
  }
  s->services_ = std::make_unique<Services>(s.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort(
      absl::StrCat(s->options_.bind_host, ":", s->options_.port),
      s->options_.tls.has_value()
          ? security::MutualTlsServerCredentials(
                *s->options_.tls, security::ClientCertMode::kRequestAndVerifyIfPresent)
          : grpc::InsecureServerCredentials(),
      &s->port_);
  builder.RegisterService(&s->services_->client);
  builder.RegisterService(&s->services_->am);
  builder.RegisterService(&s->services_->tracker);
  builder.RegisterService(&s->services_->admin);
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0)
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", s->options_.bind_host, ":", s->options_.port));
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
  auto rm = ResourceManager::Create(options_.rm, &loop_, store_.get(), launcher_.get(),
                                    secrets_.get());
  if (!rm.ok()) return rm.status();
  rm_ = std::move(*rm);
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
  if (rm_) WaitOnLoop([&] {
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
  if (rm_) WaitOnLoop([&] { rm_.reset(); });
  loop_.Stop();
  if (store_) (void)store_->Close();
}

}  // namespace weft::rm
