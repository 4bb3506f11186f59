// Copyright Weft authors. For tests only: one unary call of any method through gRPC's generic
// stub, with a text request and reply, for tests that serve a CallbackGenericService.
#ifndef WEFT_SECURITY_TEST_GENERIC_CALL_H_
#define WEFT_SECURITY_TEST_GENERIC_CALL_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"

namespace weft::security {

// Calls `method` on `channel` with `request_text`, waiting at most `deadline`; returns the
// call's status and stores the reply's bytes in *reply ("" unless the call succeeded).
inline grpc::Status GenericUnaryCall(const std::shared_ptr<grpc::Channel>& channel,
                                     const std::string& method, const std::string& request_text,
                                     std::chrono::milliseconds deadline, std::string* reply) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  grpc::Slice slice(request_text);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::Status status;
  absl::Notification done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
    status = std::move(s);
    done.Notify();
  });
  done.WaitForNotification();
  reply->clear();
  std::vector<grpc::Slice> slices;
  if (status.ok() && response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices)
      reply->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return status;
}

}  // namespace weft::security

#endif  // WEFT_SECURITY_TEST_GENERIC_CALL_H_
