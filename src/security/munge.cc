// Copyright Weft authors.
#include "security/munge.h"

#include <munge.h>

#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"

namespace weft::security {
namespace {

struct CtxDeleter {
  void operator()(munge_ctx_t ctx) const { munge_ctx_destroy(ctx); }
};
using Ctx = std::unique_ptr<std::remove_pointer_t<munge_ctx_t>, CtxDeleter>;

absl::StatusOr<Ctx> MakeContext(absl::string_view socket) {
  Ctx ctx(munge_ctx_create());
  if (ctx == nullptr) return absl::ResourceExhaustedError("munge_ctx_create failed");
  if (!socket.empty()) {
    std::string path(socket);
    if (munge_ctx_set(ctx.get(), MUNGE_OPT_SOCKET, path.c_str()) != EMUNGE_SUCCESS)
      return absl::InvalidArgumentError(absl::StrCat("MUNGE socket '", socket, "': ",
                                                     munge_ctx_strerror(ctx.get())));
  }
  return ctx;
}

std::string SocketName(absl::string_view socket) {
  return socket.empty() ? std::string("/run/munge/munge.socket.2") : std::string(socket);
}

}  // namespace

std::string MungeSocketFromEnvironment() {
  const char* s = std::getenv("WEFT_MUNGE_SOCKET");
  return s == nullptr ? std::string() : std::string(s);
}

absl::StatusOr<std::string> MungeEncode(absl::string_view socket, absl::string_view payload) {
  absl::StatusOr<Ctx> ctx = MakeContext(socket);
  if (!ctx.ok()) return ctx.status();
  char* cred = nullptr;
  munge_err_t err = munge_encode(&cred, ctx->get(), payload.data(), static_cast<int>(payload.size()));
  if (err != EMUNGE_SUCCESS) {
    std::string why = munge_ctx_strerror(ctx->get()) ? munge_ctx_strerror(ctx->get())
                                                      : munge_strerror(err);
    if (err == EMUNGE_SOCKET)
      return absl::UnavailableError(absl::StrCat(
          "cannot get a MUNGE credential from munged at ", SocketName(socket), ": ", why,
          " (start munged: scripts/install-deps.sh does, or set WEFT_MUNGE_SOCKET)"));
    return absl::InternalError(absl::StrCat("cannot get a MUNGE credential: ", why));
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

absl::StatusOr<MungeCredential> MungeDecode(absl::string_view socket,
                                            absl::string_view credential) {
  if (credential.empty()) return absl::UnauthenticatedError("no MUNGE credential");
  absl::StatusOr<Ctx> ctx = MakeContext(socket);
  if (!ctx.ok()) return ctx.status();
  std::string cred(credential);
  void* buf = nullptr;
  int len = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  munge_err_t err = munge_decode(cred.c_str(), ctx->get(), &buf, &len, &uid, &gid);
  MungeCredential out;
  if (buf != nullptr) {
    out.payload.assign(static_cast<const char*>(buf), static_cast<size_t>(len));
    std::free(buf);
  }
  if (err != EMUNGE_SUCCESS) {
    std::string why = munge_ctx_strerror(ctx->get()) ? munge_ctx_strerror(ctx->get())
                                                      : munge_strerror(err);
    if (err == EMUNGE_SOCKET)
      return absl::UnavailableError(
          absl::StrCat("cannot reach munged at ", SocketName(socket), ": ", why));
    return absl::UnauthenticatedError(absl::StrCat("MUNGE credential refused: ", why));
  }
  out.uid = uid;
  out.gid = gid;
  return out;
}

absl::StatusOr<UnixUser> MungeClientUser(absl::string_view socket, absl::string_view credential) {
  absl::StatusOr<MungeCredential> cred = MungeDecode(socket, credential);
  if (!cred.ok()) return cred.status();
  if (cred->payload != kClientMungePayload)
    return absl::UnauthenticatedError("MUNGE credential was not made for a Weft client call");
  absl::StatusOr<UnixUser> user = LookUpUser(cred->uid);
  if (!user.ok())
    return absl::UnauthenticatedError(
        absl::StrCat("MUNGE credential of uid ", cred->uid, ": ", user.status().message()));
  return user;
}

}  // namespace weft::security
