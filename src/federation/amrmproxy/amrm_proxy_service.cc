// Copyright Weft authors.
#include "federation/amrmproxy/amrm_proxy_service.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "security/secret_source.h"
#include "security/tokens.h"

namespace weft::amrmproxy {
namespace {

constexpr size_t kKeyBytes = 32;

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// appattempt_<ts>_<seq>_<n> -> application_<ts>_<seq>; "" when it is not an attempt id.
std::string AppOfAttempt(absl::string_view attempt_id) {
  if (!absl::ConsumePrefix(&attempt_id, "appattempt_")) return "";
  const size_t last = attempt_id.rfind('_');
  if (last == absl::string_view::npos || last == 0) return "";
  return absl::StrCat("application_", attempt_id.substr(0, last));
}

std::string Metadata(const grpc::CallbackServerContext* context, const char* key) {
  auto it = context->client_metadata().find(key);
  if (it == context->client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace

absl::Status ValidateAmrmProxyOptions(const AmrmProxyOptions& options) {
  const bool federation = !options.sub_cluster_id.empty() || options.federation_store != nullptr;
  if (federation && options.sub_cluster_id.empty()) {
    return absl::InvalidArgumentError(
        "AMRMProxy: a federation store needs this NM's sub-cluster id (--sub-cluster-id)");
  }
  if (federation && options.federation_store == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("AMRMProxy: sub-cluster id '", options.sub_cluster_id,
                     "' needs a federation store (--federation-store)"));
  }
  if (federation) {
    if (absl::Status s = federation::ValidateSubClusterId(options.sub_cluster_id); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("AMRMProxy: ", s.message()));
    }
  }
  if (!options.interceptors.empty()) {
    if (absl::Status s = ValidateInterceptorList(options.interceptors, federation); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("AMRMProxy interceptors: ", s.message()));
    }
  }
  const ThrottleOptions& t = options.throttle;
  if (t.max_outstanding_containers < 0 || t.max_outstanding_memory_mb < 0 ||
      t.max_total_containers < 0 || t.max_allocates_per_second < 0 || t.max_violations < 0) {
    return absl::InvalidArgumentError("AMRMProxy throttle: quotas and rates must be >= 0");
  }
  if (options.worker_threads < 1) {
    return absl::InvalidArgumentError("AMRMProxy: worker_threads must be >= 1");
  }
  if (options.rm_call_timeout_ms <= 0 || options.federation_cache_ttl_ms < 0 ||
      options.membership_expiry_ms <= 0) {
    return absl::InvalidArgumentError(
        "AMRMProxy: rm_call_timeout_ms and membership_expiry_ms must be > 0, "
        "federation_cache_ttl_ms >= 0");
  }
  return absl::OkStatus();
}

// AmService on gRPC's callback API: authenticates, then a worker runs the call.
class AmrmProxyService::Service final : public v1::AmService::CallbackService {
 public:
  explicit Service(AmrmProxyService* proxy) : proxy_(proxy) {}

  grpc::ServerUnaryReactor* RegisterApplicationMaster(
      grpc::CallbackServerContext* context, const v1::RegisterApplicationMasterRequest* request,
      v1::RegisterApplicationMasterResponse* response) override {
    return Handle(context, [request, response](RequestInterceptor& chain) {
      return Into(chain.RegisterApplicationMaster(*request), response);
    });
  }
  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* context,
                                     const v1::AllocateRequest* request,
                                     v1::AllocateResponse* response) override {
    return Handle(context, [proxy = proxy_, request, response](RequestInterceptor& chain) {
      if (request->wait_ms() == 0) return Into(chain.Allocate(*request), response);
      // A long poll holds this worker while the RM holds the call: only while another worker
      // stays free (AmrmProxyOptions::worker_threads); otherwise answered at once.
      if (proxy->TakeLongPollSlot()) {
        absl::Status s = Into(chain.Allocate(*request), response);
        proxy->ReturnLongPollSlot();
        return s;
      }
      v1::AllocateRequest now = *request;
      now.set_wait_ms(0);
      return Into(chain.Allocate(now), response);
    });
  }
  grpc::ServerUnaryReactor* FinishApplicationMaster(
      grpc::CallbackServerContext* context, const v1::FinishApplicationMasterRequest* request,
      v1::FinishApplicationMasterResponse* response) override {
    return Handle(context, [request, response](RequestInterceptor& chain) {
      return Into(chain.FinishApplicationMaster(*request), response);
    });
  }

 private:
  template <typename T>
  static absl::Status Into(absl::StatusOr<T> result, T* response) {
    if (!result.ok()) return result.status();
    *response = *std::move(result);
    return absl::OkStatus();
  }

  grpc::ServerUnaryReactor* Handle(grpc::CallbackServerContext* context,
                                   std::function<absl::Status(RequestInterceptor&)> work) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    v1::Token token;
    if (std::string raw = Metadata(context, "weft-amrm-token-bin");
        !raw.empty() && !token.ParseFromString(raw)) {
      reactor->Finish(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                                   "the AMRM token in weft-amrm-token-bin does not parse"));
      return reactor;
    }
    absl::StatusOr<std::shared_ptr<Entry>> entry = proxy_->Authenticate(token);
    if (!entry.ok()) {
      reactor->Finish(ToGrpc(entry.status()));
      return reactor;
    }
    const bool queued = proxy_->Run([entry = *entry, work = std::move(work), reactor] {
      absl::Status status;
      {
        absl::MutexLock lock(&entry->call_mu);
        if (entry->ended) {
          status = absl::FailedPreconditionError(
              absl::StrCat("attempt ", entry->attempt.attempt_id, " has ended at this AMRMProxy"));
        } else {
          status = work(*entry->chain);
        }
      }
      reactor->Finish(ToGrpc(status));
    });
    if (!queued) {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the AMRMProxy is stopping"));
    }
    return reactor;
  }

  AmrmProxyService* const proxy_;
};

absl::StatusOr<std::unique_ptr<AmrmProxyService>> AmrmProxyService::Create(
    AmrmProxyOptions options, std::shared_ptr<grpc::ChannelCredentials> rm_credentials) {
  if (absl::Status s = ValidateAmrmProxyOptions(options); !s.ok()) return s;
  std::unique_ptr<AmrmProxyService> proxy(new AmrmProxyService());
  const bool federation = options.federation_store != nullptr;
  proxy->interceptors_ =
      options.interceptors.empty() ? DefaultInterceptorList(federation) : options.interceptors;
  if (!options.now_ms) {
    options.now_ms = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  if (!options.sleep_ms) {
    options.sleep_ms = [](int64_t ms) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    };
  }
  proxy->rpc_ = options.rpc;
  if (proxy->rpc_ == nullptr) {
    GrpcSubClusterRpcOptions rpc_options;
    rpc_options.credentials =
        rm_credentials != nullptr ? rm_credentials : grpc::InsecureChannelCredentials();
    rpc_options.call_timeout_ms = options.rm_call_timeout_ms;
    proxy->rpc_ = std::make_shared<GrpcSubClusterRpc>(std::move(rpc_options));
  }
  if (federation) {
    FederationViewOptions view;
    view.store = options.federation_store.get();
    view.machine_list = options.machine_list;
    view.rpc = proxy->rpc_.get();
    view.cache_ttl_ms = options.federation_cache_ttl_ms;
    view.membership_expiry_ms = options.membership_expiry_ms;
    view.now_ms = options.now_ms;
    proxy->federation_ = std::make_unique<FederationView>(std::move(view));
  }
  // The key of an earlier proxy on this NM, so that its AMs' tokens still verify.
  std::optional<std::string> stored_key;
  if (options.state_store != nullptr) {
    absl::StatusOr<std::optional<std::string>> got = options.state_store->GetTokenKey();
    if (!got.ok()) {
      return absl::Status(got.status().code(), absl::StrCat("AMRMProxy: reading its token key: ",
                                                            got.status().message()));
    }
    if (got->has_value() && (*got)->size() == kKeyBytes) stored_key = **got;
  }
  if (stored_key.has_value()) {
    proxy->key_ = *std::move(stored_key);
  } else {
    security::OpenSslSecretSource secrets;
    absl::StatusOr<std::string> key = secrets.Generate(kKeyBytes);
    if (!key.ok()) {
      return absl::InternalError(
          absl::StrCat("AMRMProxy: drawing its token key: ", key.status().message()));
    }
    proxy->key_ = *std::move(key);
    if (options.state_store != nullptr) {
      if (absl::Status s = options.state_store->SetTokenKey(proxy->key_); !s.ok()) {
        return absl::Status(s.code(),
                            absl::StrCat("AMRMProxy: recording its token key: ", s.message()));
      }
    }
  }
  InterceptorEnvironment& env = proxy->env_;
  env.rpc = proxy->rpc_.get();
  env.throttle = options.throttle;
  env.federation = proxy->federation_.get();
  env.home_sub_cluster_id = options.sub_cluster_id;
  env.now_ms = options.now_ms;
  env.sleep_ms = options.sleep_ms;
  env.secondary_timeout_ms = options.secondary_timeout_ms;
  env.state_store = options.state_store;
  proxy->options_ = std::move(options);
  proxy->service_ = std::make_unique<Service>(proxy.get());
  for (int i = 0; i < proxy->options_.worker_threads; ++i) {
    proxy->workers_.emplace_back([p = proxy.get()] { p->WorkerLoop(); });
  }
  return proxy;
}

AmrmProxyService::~AmrmProxyService() { Shutdown(); }

grpc::Service* AmrmProxyService::service() { return service_.get(); }

void AmrmProxyService::Start(const std::string& node_id) {
  absl::MutexLock lock(&mu_);
  address_ = node_id;
  tokens_ = std::make_unique<ProxyTokenSecretManager>(key_, node_id);
  started_ = true;
  log::Info("amrmproxy_started", {{"address", node_id},
                                  {"interceptors", absl::StrJoin(interceptors_, ",")},
                                  {"sub_cluster", options_.sub_cluster_id}});
}

absl::StatusOr<v1::Token> AmrmProxyService::AddAttempt(const AttemptContext& attempt) {
  absl::StatusOr<security::AmRmTokenData> real =
      security::DecodeAmRmToken(attempt.amrm_token.identifier());
  if (!real.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("AMRMProxy: the launch context's amrm token: ", real.status().message()));
  }
  if (real->app_attempt_id != attempt.attempt_id ||
      AppOfAttempt(attempt.attempt_id) != attempt.application_id) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AMRMProxy: the launch context's amrm token is for attempt '", real->app_attempt_id,
        "', not for attempt '", attempt.attempt_id, "' of ", attempt.application_id));
  }
  if (absl::StatusOr<std::vector<std::string>> rms = ParseRmAddresses(attempt.home_rm_address);
      !rms.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AMRMProxy: WEFT_RM_ADDRESS of ", attempt.attempt_id, ": ", rms.status().message()));
  }
  absl::MutexLock lock(&mu_);
  if (!started_ || stopping_) {
    return absl::FailedPreconditionError("the AMRMProxy is not serving");
  }
  if (attempts_.contains(attempt.attempt_id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("the AMRMProxy already serves attempt ", attempt.attempt_id));
  }
  absl::StatusOr<std::unique_ptr<RequestInterceptor>> chain = BuildChain(attempt);
  if (!chain.ok()) return chain.status();
  auto entry = std::make_shared<Entry>();
  entry->attempt = attempt;
  {
    absl::MutexLock call_lock(&entry->call_mu);
    entry->chain = *std::move(chain);
  }
  if (options_.state_store != nullptr) {
    AttemptState state;
    state.attempt = attempt;
    if (absl::Status s = options_.state_store->PutAttempt(state); !s.ok()) {
      // Served all the same; it just would not survive an NM restart.
      log::Error("amrmproxy_state_write_failed",
                 {{"attempt", attempt.attempt_id}, {"error", s}});
    }
  }
  attempts_[attempt.attempt_id] = entry;
  log::Info("amrmproxy_attempt_added", {{"attempt", attempt.attempt_id},
                                        {"user", attempt.user},
                                        {"container", attempt.am_container_id},
                                        {"home_rm", attempt.home_rm_address}});
  return tokens_->Issue(attempt.attempt_id);
}

absl::StatusOr<std::unique_ptr<RequestInterceptor>> AmrmProxyService::BuildChain(
    const AttemptContext& attempt) {
  InterceptorEnvironment env = env_;
  env.seed = next_seed_++;
  return BuildInterceptorChain(interceptors_, attempt, env);
}

absl::Status AmrmProxyService::Recover(
    const std::function<bool(const std::string&)>& am_running) {
  if (options_.state_store == nullptr) return absl::OkStatus();
  // The NM may have cleared its record (recovery off): the key is written again.
  if (absl::Status s = options_.state_store->SetTokenKey(key_); !s.ok()) return s;
  absl::StatusOr<std::vector<AttemptState>> states = options_.state_store->LoadAttempts();
  if (!states.ok()) return states.status();
  std::vector<std::shared_ptr<Entry>> not_running;
  {
    absl::MutexLock lock(&mu_);
    for (const AttemptState& state : *states) {
      const AttemptContext& attempt = state.attempt;
      absl::StatusOr<std::unique_ptr<RequestInterceptor>> chain = BuildChain(attempt);
      if (!chain.ok()) {
        log::Warn("amrmproxy_attempt_not_recovered",
                  {{"attempt", attempt.attempt_id}, {"error", chain.status()}});
        log::WarnIfError(options_.state_store->RemoveAttempt(attempt.attempt_id),
                         "amrmproxy_attempt_record_not_removed",
                         {{"attempt", attempt.attempt_id}});
        continue;
      }
      auto entry = std::make_shared<Entry>();
      entry->attempt = attempt;
      {
        absl::MutexLock call_lock(&entry->call_mu);
        entry->chain = *std::move(chain);
        entry->chain->Recover(state);
        entry->ended = state.ended;
      }
      if (state.ended) {
        ended_.emplace(attempt.application_id, entry);
      } else if (am_running(attempt.am_container_id)) {
        attempts_[attempt.attempt_id] = entry;
      } else {
        not_running.push_back(entry);
      }
    }
  }
  Remove(std::move(not_running), AttemptEnd::kAttemptEnded,
         "its AM container did not outlive the NodeManager's restart");
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<AmrmProxyService::Entry>> AmrmProxyService::Authenticate(
    const v1::Token& token) {
  absl::MutexLock lock(&mu_);
  if (!started_ || stopping_) return absl::UnavailableError("the AMRMProxy is not serving");
  absl::StatusOr<std::string> attempt = tokens_->Verify(token);
  if (!attempt.ok()) return attempt.status();
  auto it = attempts_.find(*attempt);
  if (it == attempts_.end()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "attempt ", *attempt, " is not served by this AMRMProxy (it ended or never ran here)"));
  }
  return it->second;
}

bool AmrmProxyService::TakeLongPollSlot() {
  int held = long_polls_.load();
  while (held < options_.worker_threads - 1) {
    if (long_polls_.compare_exchange_weak(held, held + 1)) return true;
  }
  return false;
}

bool AmrmProxyService::Run(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (workers_.empty()) return false;
  queue_.push_back(std::move(task));
  return true;
}

void AmrmProxyService::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || stopping_; };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void AmrmProxyService::Remove(std::vector<std::shared_ptr<Entry>> entries, AttemptEnd end,
                              const std::string& why) {
  for (std::shared_ptr<Entry>& entry : entries) {
    log::Info("amrmproxy_attempt_removed",
              {{"attempt", entry->attempt.attempt_id}, {"reason", why}});
    if (end == AttemptEnd::kAttemptEnded) {
      // Its chain may keep UAMs for the app's next attempt: the app's cleanup ends them.
      absl::MutexLock lock(&mu_);
      ended_.emplace(entry->attempt.application_id, entry);
    }
    const bool queued = Run([entry, end] {
      absl::MutexLock lock(&entry->call_mu);
      if (end == AttemptEnd::kAttemptEnded && entry->ended) return;
      entry->ended = true;
      entry->chain->Shutdown(end);
    });
    if (!queued) {
      absl::MutexLock lock(&entry->call_mu);
      entry->ended = true;
    }
  }
}

void AmrmProxyService::RemoveAttemptOfContainer(const std::string& container_id) {
  std::vector<std::shared_ptr<Entry>> removed;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = attempts_.begin(); it != attempts_.end();) {
      if (it->second->attempt.am_container_id != container_id) {
        ++it;
        continue;
      }
      removed.push_back(it->second);
      it = attempts_.erase(it);
    }
  }
  Remove(std::move(removed), AttemptEnd::kAttemptEnded,
         absl::StrCat("AM container ", container_id, " ended"));
}

void AmrmProxyService::RemoveApplication(const std::string& application_id) {
  std::vector<std::shared_ptr<Entry>> removed;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = attempts_.begin(); it != attempts_.end();) {
      if (it->second->attempt.application_id != application_id) {
        ++it;
        continue;
      }
      removed.push_back(it->second);
      it = attempts_.erase(it);
    }
    auto [first, last] = ended_.equal_range(application_id);
    for (auto it = first; it != last; ++it) removed.push_back(it->second);
    ended_.erase(first, last);
  }
  Remove(std::move(removed), AttemptEnd::kApplicationEnded,
         absl::StrCat("application ", application_id, " cleaned up"));
}

size_t AmrmProxyService::num_ended_attempts() const {
  absl::MutexLock lock(&mu_);
  return ended_.size();
}

size_t AmrmProxyService::num_attempts() const {
  absl::MutexLock lock(&mu_);
  return attempts_.size();
}

void AmrmProxyService::Shutdown() {
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    workers.swap(workers_);
    attempts_.clear();
    ended_.clear();
  }
  for (std::thread& worker : workers) worker.join();
}

}  // namespace weft::amrmproxy
