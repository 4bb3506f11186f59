// Copyright Weft authors. A small HTTP/1.1 server (cpp-httplib underneath) that hands every
// request to one HttpHandler on a fixed pool of threads.
#ifndef WEFT_WEB_HTTP_SERVER_H_
#define WEFT_WEB_HTTP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "web/http.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace weft::web {

struct HttpServerOptions {
  std::string bind_host = "127.0.0.1";  // any other address is an explicit choice
  int port = 0;                         // 0: a free port the kernel picks (see port())
  // Larger request bodies are refused with 413 and a JSON error before the handler runs.
  size_t max_body_bytes = 1 << 20;
  int threads = 8;  // connections served at once (keep-alive holds one for up to 2 s)
};

// Listens on bind_host:port and serves every method and path through `handler`. A handler
// that throws gets a 500 with a JSON error body; errors httplib detects itself (malformed
// request line, oversized body) get a JSON error body too. Thread-safe; Stop() (or the
// destructor) waits for in-flight requests.
class HttpServer {
 public:
  // Errors: Unavailable when the address cannot be bound (the message names it).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options,
                                                           HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  std::string address() const;  // host:port actually bound
  void Stop();                  // idempotent

 private:
  HttpServer() = default;

  HttpServerOptions options_;
  HttpHandler handler_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
  int port_ = 0;
};

// The JSON error body every Weft HTTP endpoint uses, shaped like YARN's:
// {"RemoteException":{"exception":"NotFoundException","message":...,"javaClassName":...}}.
HttpResponse JsonError(int status, absl::string_view message);

}  // namespace weft::web

#endif  // WEFT_WEB_HTTP_SERVER_H_
