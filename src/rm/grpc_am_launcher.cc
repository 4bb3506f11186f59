// Copyright Weft authors. NewGrpcAmLauncher (rm_server.h): AM containers started with
// ContainerService.StartContainers on their node, over an async gRPC client.
#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "rm/rm_server.h"
#include "weft/v1/container.grpc.pb.h"

namespace weft::rm {
namespace {

class GrpcAmLauncher final : public AmLauncher {
 public:
  // `tls`: present it to the NMs (and verify theirs); null = plaintext.
  explicit GrpcAmLauncher(const std::optional<security::TlsFiles>& tls)
      : credentials_(tls.has_value() ? security::TlsChannelCredentials(*tls)
                                     : grpc::InsecureChannelCredentials()) {}

  // Cancels the launches in flight and waits until each has called back: no callback runs
  // after the RmServer (whose loop they post to) is gone.
  ~GrpcAmLauncher() override {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, call] : calls_) call->ctx.TryCancel();
    mu_.Await(absl::Condition(
        +[](std::map<int64_t, std::shared_ptr<Call>>* calls) { return calls->empty(); }, &calls_));
  }

  void Launch(const std::string& node_id, const v1::StartContainerRequest& request,
              std::function<void(absl::Status)> done) override {
    auto call = std::make_shared<Call>();
    call->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    *call->req.add_requests() = request;
    int64_t id = 0;
    {
      absl::MutexLock lock(&mu_);
      std::shared_ptr<grpc::Channel>& channel = channels_[node_id];
      if (channel == nullptr) channel = grpc::CreateChannel(node_id, credentials_);
      call->stub = v1::ContainerService::NewStub(channel);
      id = next_call_++;
      calls_[id] = call;
    }
    Call* c = call.get();
    c->stub->async()->StartContainers(
        &c->ctx, &c->req, &c->resp, [this, c, id, done, node_id](grpc::Status s) {
          if (!s.ok()) {
            done(absl::UnavailableError(absl::StrCat("StartContainers on ", node_id, ": gRPC code ",
                                                     static_cast<int>(s.error_code()), " ",
                                                     s.error_message())));
          } else if (c->resp.failed_size() > 0) {
            // The NM's own code (Unavailable: try again), else FailedPrecondition.
            const v1::ContainerFailure& f = c->resp.failed(0);
            done(absl::Status(f.code() > 0 && f.code() <= 16
                                  ? static_cast<absl::StatusCode>(f.code())
                                  : absl::StatusCode::kFailedPrecondition,
                              absl::StrCat("node ", node_id,
                                           " refused the AM container: ", f.message())));
          } else {
            done(absl::OkStatus());
          }
          absl::MutexLock lock(&mu_);
          calls_.erase(id);  // the last use of `c` and of `this`
        });
  }

 private:
  struct Call {
    grpc::ClientContext ctx;
    v1::StartContainersRequest req;
    v1::StartContainersResponse resp;
    std::unique_ptr<v1::ContainerService::Stub> stub;
  };

  absl::Mutex mu_;
  // One channel per node, owned here (so by the RmServer) rather than by the call: a call's
  // callback must never drop the last reference to its channel, or gRPC 1.51 may join its
  // callback thread from itself at teardown (grpc/grpc#32584).
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
  // The launches in flight, by a number of their own.
  std::map<int64_t, std::shared_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
  int64_t next_call_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
};

}  // namespace

std::unique_ptr<AmLauncher> NewGrpcAmLauncher(const std::optional<security::TlsFiles>& tls) {
  return std::make_unique<GrpcAmLauncher>(tls);
}

}  // namespace weft::rm
