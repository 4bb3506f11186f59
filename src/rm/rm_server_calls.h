// Copyright Weft authors. How RmServer's gRPC services run a call (internal to rm_server.cc):
// on the RM loop, with its caller authenticated (client_auth.h) and, for federation daemons,
// their claims judged (federation_identity.h) and the sub-cluster's fencing checked
// (federation_fencing.h) on claim checker threads; every call's latency and status code go to
// the RPC metrics.
#ifndef WEFT_RM_RM_SERVER_CALLS_H_
#define WEFT_RM_RM_SERVER_CALLS_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "federation/store/federation_store.h"
#include "rm/federation_fencing.h"
#include "rm/federation_identity.h"
#include "rm/rm_server.h"
#include "weft/v1/am.grpc.pb.h"

namespace weft::rm {
namespace rm_server_internal {

inline grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

inline std::string Metadata(grpc::CallbackServerContext* ctx, const std::string& key) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(key);
  return it == md.end() ? "" : std::string(it->second.data(), it->second.size());
}

}  // namespace rm_server_internal

class RmServer::Calls {
 public:
  // Runs `fn` on the loop and finishes the call with its result; the call's latency (from
  // here to Finish) and status code go to the RPC metrics under `method`. While there is no
  // ResourceManager (a standby, or one shutting down) the call gets the standby's answer
  // instead (StandbyStatus).
  template <typename Resp, typename Fn>
  static grpc::ServerUnaryReactor* OnLoop(RmServer* s, const char* method,
                                          grpc::CallbackServerContext* ctx, Resp* resp, Fn fn) {
    return OnLoopLater(
        s, method, ctx, resp,
        [fn = std::move(fn)](ResourceManager& rm, auto reply) mutable { reply(fn(rm)); });
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
      const LoopWork::Start on_loop = s->loop_work_.Begin();
      if (!s->rm_) {
        grpc::Status st = s->StandbyStatus(ctx);
        s->RecordRpc(method, start, static_cast<absl::StatusCode>(st.error_code()));
        reactor->Finish(st);
        return;
      }
      fn(*s->rm_, [s, method, start, reactor, resp](absl::StatusOr<Resp> r) {
        if (r.ok()) *resp = std::move(*r);
        // Encoding the reply and writing it to the socket happen on a finisher thread, not
        // on the RM loop (they were about half of its time per heartbeat); without finishers
        // (call_finishers = 0), here.
        auto finish = [s, method, start, reactor, code = r.status().code(),
                       status = rm_server_internal::ToGrpc(r.status())] {
          s->RecordRpc(method, start, code);
          reactor->Finish(status);
        };
        s->HandToFinisher(std::move(finish));
      });
      // The call's own loop time (a reply given later, e.g. a parked Allocate answered by a
      // pass, counts in the work that gives it).
      s->loop_work_.Record(method, on_loop);
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
    log::Warn("federation_peer_refused",
              {{"peer", peer.ToString()}, {"call", RmCallName(call)}, {"reason", st.message()}});
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
    p.munge_credential = rm_server_internal::Metadata(ctx, "weft-munge-cred");
    p.secret = rm_server_internal::Metadata(ctx, "weft-secret");
    p.declared_user = rm_server_internal::Metadata(ctx, "weft-user");
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
      caller = absl::PermissionDeniedError(
          absl::StrCat("user '", caller->user, "' is not a cluster admin (weft rm --admins)"));
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
    reactor->Finish(rm_server_internal::ToGrpc(status));
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
      return RoutedSubmission(s, method, ctx, resp, app_id, std::move(fn), std::move(a->caller));
    }
    if (a->access != PeerAccess::kAppCheck) {
      // The GPG reads for users but never gets an unmanaged AM's token (only the AMRMProxy,
      // through its claim, and routers, for the users they authenticated, do).
      const bool strip_token = a->peer.has_value() && a->peer->role == security::DaemonRole::kGpg;
      return OnLoop(
          s, method, ctx, resp,
          [fn = std::move(fn), c = std::move(a->caller), strip_token](ResourceManager& rm) mutable {
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
      absl::Status st = absl::PermissionDeniedError(
          absl::StrCat("federation daemon ", a->peer->ToString(), " may not call ",
                       RmCallName(call), " for application ", app_id,
                       ": this RM has no federation store to check its claim against"));
      LogPeerRefused(*a->peer, call, st);
      s->RecordRpc(method, start, st.code());
      reactor->Finish(rm_server_internal::ToGrpc(st));
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
        reactor->Finish(rm_server_internal::ToGrpc(grant.status()));
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
        reactor->Finish(rm_server_internal::ToGrpc(st));
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
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    const auto start = std::chrono::steady_clock::now();
    FinishOnLoop(
        s, kMethod, start, ctx, reactor, resp,
        [s, start, ctx, reactor, resp, unregister, token](ResourceManager& rm, auto reply) {
          // The token is verified before anything is written: a caller whose token
          // does not verify gets the unregistration's own refusal, the store untouched.
          absl::StatusOr<FederationApp> app = rm.FederationAppOfAmToken(token);
          if (!app.ok() || !app->federation_home_sub_cluster_id.empty()) {
            unregister(rm, std::move(reply));
            return;
          }
          const int64_t now_ms = rm.NowMs();
          s->NextClaimChecker().Post(
              [s, start, ctx, reactor, resp, unregister, now_ms, app_id = app->app_id]() {
                if (absl::Status st = RecordEndAtHome(*s->options_.federation_store, app_id,
                                                      s->options_.rm.sub_cluster_id, now_ms);
                    !st.ok()) {
                  log::Warn("am_unregister_refused", {{"app", app_id}, {"why", st.message()}});
                  s->RecordRpc(kMethod, start, st.code());
                  reactor->Finish(rm_server_internal::ToGrpc(st));
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
};

}  // namespace weft::rm

#endif  // WEFT_RM_RM_SERVER_CALLS_H_
