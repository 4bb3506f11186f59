// Copyright Weft authors. A small HTTP/1.1 server that hands every complete request to one
// HttpHandler on a fixed pool of threads. One I/O thread owns every socket (non-blocking, under
// epoll): it accepts, reads and parses requests under deadlines and writes responses, so a slow
// or hostile client holds a connection slot, never a handler thread.
#ifndef WEFT_WEB_HTTP_SERVER_H_
#define WEFT_WEB_HTTP_SERVER_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "web/http.h"

namespace weft::web {

// A web server's connection limits and whole-request deadlines: what an operator sets on a
// daemon's web server (the --http-max-connections, --http-max-connections-per-ip and
// --http-*-timeout-ms flags of `weft rm|nm|dev|router|history serve`).
struct HttpLimits {
  // Whole-request deadlines, in ms; a connection that misses one is closed without an answer.
  // A connection's first request line and headers must arrive within header_timeout_ms of
  // its accept, a later request's within header_timeout_ms of its first byte.
  int header_timeout_ms = 10'000;
  // A request body must arrive within body_timeout_ms of the end of its headers.
  int body_timeout_ms = 30'000;
  // A keep-alive connection waits this long for the first byte of its next request.
  int idle_timeout_ms = 5'000;
  // A response must be taken by the client within write_timeout_ms of being ready.
  int write_timeout_ms = 30'000;

  // Connections open at once, in total and from one client address (an IPv6 client counts by
  // its /64; <= 0: no per-address limit). At either limit a new connection first makes room:
  // the oldest connection (of that address, or of anyone for the total) that has not yet sent
  // a whole request head, or idles between requests, is closed without an answer, so that slow
  // clients cannot lock out a prompt one, even from their own address. Only when every
  // connection is busy with a request is the new one answered 503 with a JSON error and
  // "Retry-After: 1" (one non-blocking write, best effort) and closed at once.
  // Behind a reverse proxy every client is the proxy's address: raise the per-address limit.
  int max_connections = 256;
  int max_connections_per_ip = 32;
};

struct HttpServerOptions {
  std::string bind_host = "127.0.0.1";  // any other address is an explicit choice
  int port = 0;                         // 0: a free port the kernel picks (see port())
  // Larger request bodies are refused with 413 and a JSON error before the handler runs.
  size_t max_body_bytes = 1 << 20;
  int threads = 8;  // handlers run at once (slow clients hold no thread); <= 0: 1
  // A longer request target is refused with 414, a larger request head (request line and
  // headers) with 431.
  size_t max_uri_bytes = 8192;
  size_t max_header_bytes = 64 * 1024;
  HttpLimits limits;
};

// Listens on bind_host:port and serves every method and path through `handler`. A handler
// that throws gets a 500 with a JSON error body; requests refused before the handler
// (malformed: 400; body over max_body_bytes: 413; target too long: 414; head too large: 431;
// CONNECT/TRACE: 405; unknown method or transfer coding: 501; not HTTP/1.x: 505) get a JSON
// error body and the connection is closed after it. Query parameters and the path are
// percent-decoded, header names lower-cased; a body comes by Content-Length or chunked
// (neither: empty). HEAD is served as GET without the body. Every response carries
// "X-Content-Type-Options: nosniff" and "Cache-Control: no-store". HTTP/1.1 connections are
// kept alive unless "Connection: close". Thread-safe; Stop() (or the destructor) waits for
// in-flight requests.
class HttpServer {
 public:
  // Errors: InvalidArgument for a port outside 0-65535 or a deadline or limit that is not
  // positive; Unavailable when the address cannot be bound (the message names it).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options,
                                                           HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  std::string address() const;  // host:port actually bound
  // Connections open now, refused ones excluded (for tests and metrics).
  int open_connections() const;
  // Stops accepting and closes idle and half-read connections, then waits for the handlers
  // running or queued; their responses get up to 1 s to be written. Idempotent.
  void Stop();

 private:
  class Impl;  // the I/O thread and the worker pool (http_server.cc)

  HttpServer() = default;

  HttpServerOptions options_;
  std::unique_ptr<Impl> impl_;
  std::once_flag stop_once_;
  int port_ = 0;
};

// The JSON error body every Weft HTTP endpoint uses, shaped like YARN's:
// {"RemoteException":{"exception":"NotFoundException","message":...,"javaClassName":...}}.
HttpResponse JsonError(int status, absl::string_view message);

}  // namespace weft::web

#endif  // WEFT_WEB_HTTP_SERVER_H_
