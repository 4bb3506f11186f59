#include "web/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/errors.h"
#include "common/log.h"
#include "nlohmann/json.hpp"
#include "web/http_parser.h"

namespace weft::web {

HttpResponse JsonError(int status, absl::string_view message) {
  // YARN's exception names for the statuses its web services return.
  const char* exception = "WebApplicationException";
  const char* java_class = "javax.ws.rs.WebApplicationException";
  switch (status) {
    case 400:
    case 413:
      exception = "BadRequestException";
      java_class = "org.apache.hadoop.yarn.webapp.BadRequestException";
      break;
    case 401:
      exception = "AuthenticationException";
      java_class = "org.apache.hadoop.security.authentication.client.AuthenticationException";
      break;
    case 403:
      exception = "ForbiddenException";
      java_class = "org.apache.hadoop.yarn.webapp.ForbiddenException";
      break;
    case 404:
      exception = "NotFoundException";
      java_class = "org.apache.hadoop.yarn.webapp.NotFoundException";
      break;
    default:
      break;
  }
  nlohmann::json body = {{"RemoteException",
                          {{"exception", exception},
                           {"message", std::string(message)},
                           {"javaClassName", java_class}}}};
  HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

// epoll data of the two descriptors that are not connections; connections count from 2.
constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;
// After a final response the server stops sending and reads (and drops) what the client still
// sends, for at most this long, so that closing with unread input does not reset the
// connection before the client has read the response (a 413 sent while the body arrives).
constexpr Ms kLingerTime{2000};
// Responses ready at or after Stop() get this long to be written.
constexpr Ms kStopGrace{1000};
// accept() failing for want of descriptors or memory is retried after this long.
constexpr Ms kAcceptPause{100};
// Fairness between sockets: work done for one before the loop serves the others.
constexpr int kMaxAcceptsPerWake = 64;
constexpr int kMaxReadsPerWake = 4;
constexpr size_t kReadChunkBytes = 16 * 1024;
constexpr int kMaxEvents = 64;

// The answer to a request the parser refused.
HttpResponse ParseErrorResponse(int status, absl::string_view message) {
  HttpResponse r = JsonError(status, message);
  if (status == 405)
    r.headers.emplace_back("Allow", "GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS");
  return r;
}

// The key connections are counted under: the IPv4 address, or the IPv6 /64 (one host's
// usual allocation, which hands it 2^64 addresses).
std::string ClientKey(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    return text;
  }
  if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], text, sizeof(text));
      return text;
    }
    in6_addr prefix = in6->sin6_addr;
    std::fill(prefix.s6_addr + 8, prefix.s6_addr + 16, 0);
    inet_ntop(AF_INET6, &prefix, text, sizeof(text));
    return absl::StrCat(text, "/64");
  }
  return "unix";
}

}  // namespace

// Owns the sockets (the I/O thread's alone), the worker pool and the queues between them.
class HttpServer::Impl {
 public:
  // Takes the listening socket, the epoll set (listener and wake-up descriptor registered)
  // and the eventfd.
  Impl(HttpServerOptions options, HttpHandler handler, int listen_fd, int epoll_fd, int wake_fd);
  ~Impl();
  void StartThreads();
  void Stop();
  int open_connections() const { return open_.load(); }

 private:
  struct Connection {
    enum class State {
      kReading,    // a request's head or body arrives (or, idle, the next one's first byte)
      kHandling,   // a worker runs the handler; the socket is not watched
      kWriting,    // the response goes out
      kLingering,  // the final response is out; input is dropped until EOF or the deadline
    };
    Connection(uint64_t id_in, int fd_in, std::string client_in, HttpParseLimits limits)
        : id(id_in), fd(fd_in), client(std::move(client_in)), parser(limits) {}
    const uint64_t id;
    int fd;  // -1 once closed
    const std::string client;
    State state = State::kReading;
    HttpRequestParser parser;
    bool idle = false;     // kReading between requests of a keep-alive connection
    bool in_body = false;  // kReading past the request's head
    bool peer_closed = false;
    bool close_after_write = false;
    Clock::time_point deadline;
    std::string out;  // bytes to send, from out_pos
    size_t out_pos = 0;
    uint32_t interest = 0;  // the epoll events registered
  };
  struct Job {
    uint64_t connection = 0;
    ParsedRequest parsed;
  };
  struct Handled {
    uint64_t connection = 0;
    std::string response;  // serialized
    bool close = true;
  };

  void IoLoop();
  void WorkerLoop();
  void Wake();
  HttpResponse RunHandler(const HttpRequest& request) const;
  bool JobOrExit() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !jobs_.empty() || workers_exit_;
  }

  // I/O thread only, below.
  void AcceptAll();
  void Refuse(int fd, const std::string& response);
  // Closes and forgets the oldest connection that is still reading a request head or idles
  // between requests, of `client` (null: of anyone). False when there is none.
  bool EvictOldestUnfinished(const std::string* client);
  void OnEvents(Connection& c, uint32_t events);
  void ReadRequest(Connection& c);
  void ProcessInput(Connection& c);
  void Dispatch(Connection& c, ParsedRequest parsed);
  void OnHandled(Handled& h);
  void Respond(Connection& c, const std::string& response, bool close);
  void Flush(Connection& c);
  void AfterResponse(Connection& c);
  void DrainLingering(Connection& c);
  void UpdateInterest(Connection& c);
  void Close(Connection& c);
  void EraseClosed();
  // Drops a connection's record and its counts (its socket is closed already).
  void Forget(uint64_t id);
  void BeginStop();
  void Expire(Clock::time_point now);
  int NextTimeoutMs(Clock::time_point now) const;
  // now + d, or the stop grace's end when that comes first.
  Clock::time_point DeadlineIn(Ms d) const;

  const HttpServerOptions options_;
  const HttpHandler handler_;
  const HttpParseLimits limits_;
  int listen_fd_;
  const int epoll_fd_;
  const int wake_fd_;
  std::string refuse_total_;   // the 503 for a connection over max_connections
  std::string refuse_client_;  // ... over max_connections_per_ip
  std::atomic<int> open_{0};
  std::thread io_thread_;
  std::vector<std::thread> workers_;

  absl::Mutex mu_;
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mu_);
  std::deque<Handled> handled_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool workers_exit_ ABSL_GUARDED_BY(mu_) = false;

  // The I/O thread's state.
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  std::unordered_map<std::string, int> per_client_;  // open connections by ClientKey
  std::vector<uint64_t> closed_;                     // to erase at the end of the round
  uint64_t next_id_ = 2;
  bool stopping_io_ = false;
  Clock::time_point stop_deadline_;
  bool accept_paused_ = false;
  Clock::time_point accept_resume_;
  std::vector<char> read_buffer_ = std::vector<char>(kReadChunkBytes);
};

HttpServer::Impl::Impl(HttpServerOptions options, HttpHandler handler, int listen_fd, int epoll_fd,
                       int wake_fd)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      limits_{options_.max_uri_bytes, options_.max_header_bytes, 100, options_.max_body_bytes},
      listen_fd_(listen_fd),
      epoll_fd_(epoll_fd),
      wake_fd_(wake_fd) {
  const HttpLimits& limits = options_.limits;
  HttpResponse total = JsonError(503, absl::StrCat("the server has ", limits.max_connections,
                                                   " connections open, its limit; retry later"));
  total.headers.emplace_back("Retry-After", "1");
  refuse_total_ = SerializeResponse(total, false, false, 0);
  HttpResponse client =
      JsonError(503, absl::StrCat("this client has ", limits.max_connections_per_ip,
                                  " connections open, the limit for one address; retry later"));
  client.headers.emplace_back("Retry-After", "1");
  refuse_client_ = SerializeResponse(client, false, false, 0);
}

HttpServer::Impl::~Impl() {
  Stop();
  if (listen_fd_ >= 0) close(listen_fd_);
  close(epoll_fd_);
  close(wake_fd_);
}

void HttpServer::Impl::StartThreads() {
  const int threads = options_.threads > 0 ? options_.threads : 1;
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  io_thread_ = std::thread([this] { IoLoop(); });
}

void HttpServer::Impl::Stop() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  Wake();
  if (io_thread_.joinable()) io_thread_.join();
  {
    absl::MutexLock l(&mu_);
    workers_exit_ = true;
  }
  for (std::thread& t : workers_)
    if (t.joinable()) t.join();
}

void HttpServer::Impl::Wake() {
  const uint64_t one = 1;
  // A full counter (never, in practice) still leaves the descriptor readable: no wake is lost.
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

HttpResponse HttpServer::Impl::RunHandler(const HttpRequest& request) const {
  HttpResponse response;
  try {
    response = handler_(request);
  } catch (const std::exception& e) {
    response = JsonError(500, absl::StrCat("internal error: ", e.what()));
  } catch (...) {
    response = JsonError(500, "internal error: unknown error");
  }
  // A server-side failure is the operator's to see, not only the client's.
  if (response.status >= 500)
    log::Error("http_server_error",
               {{"method", request.method},
                {"path", request.path},
                {"status", response.status},
                {"body", absl::string_view(response.body).substr(0, 300)}});
  return response;
}

void HttpServer::Impl::WorkerLoop() {
  for (;;) {
    Job job;
    {
      absl::MutexLock l(&mu_);
      mu_.Await(absl::Condition(this, &Impl::JobOrExit));
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    const HttpRequest& request = job.parsed.request;
    HttpResponse response = RunHandler(request);
    bool keep_alive = job.parsed.keep_alive;
    {
      absl::MutexLock l(&mu_);
      keep_alive = keep_alive && !stopping_;
    }
    std::string bytes = SerializeResponse(response, request.method == "HEAD", keep_alive,
                                          options_.limits.idle_timeout_ms);
    {
      absl::MutexLock l(&mu_);
      handled_.push_back(Handled{job.connection, std::move(bytes), !keep_alive});
    }
    Wake();
  }
}

void HttpServer::Impl::IoLoop() {
  epoll_event events[kMaxEvents];
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, NextTimeoutMs(Clock::now()));
    if (n < 0 && errno != EINTR) break;  // EBADF/EINVAL: a broken invariant, nothing to serve
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kListenerId) {
        AcceptAll();
      } else if (id == kWakeId) {
        uint64_t count;
        [[maybe_unused]] ssize_t r = read(wake_fd_, &count, sizeof(count));
      } else if (auto it = connections_.find(id); it != connections_.end()) {
        OnEvents(*it->second, events[i].events);
      }
    }
    std::deque<Handled> handled;
    bool stop;
    {
      absl::MutexLock l(&mu_);
      handled.swap(handled_);
      stop = stopping_;
    }
    if (stop && !stopping_io_) BeginStop();
    for (Handled& h : handled) OnHandled(h);
    Expire(Clock::now());
    EraseClosed();
    if (stopping_io_ && connections_.empty()) return;
  }
}

void HttpServer::Impl::AcceptAll() {
  for (int i = 0; i < kMaxAcceptsPerWake; ++i) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    const int fd =
        accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Level-triggered, the listener would wake the loop at once again: wait a little.
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        accept_paused_ = true;
        accept_resume_ = Clock::now() + kAcceptPause;
      }
      return;  // EAGAIN: none left
    }
    std::string client = ClientKey(addr);
    auto over_client_limit = [&] {
      auto from_client = per_client_.find(client);
      return options_.limits.max_connections_per_ip > 0 && from_client != per_client_.end() &&
             from_client->second >= options_.limits.max_connections_per_ip;
    };
    if (over_client_limit() && !EvictOldestUnfinished(&client)) {
      Refuse(fd, refuse_client_);
      continue;
    }
    if (static_cast<int>(connections_.size()) >= options_.limits.max_connections &&
        !EvictOldestUnfinished(nullptr)) {
      Refuse(fd, refuse_total_);
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto c = std::make_unique<Connection>(next_id_++, fd, client, limits_);
    c->deadline = Clock::now() + Ms(options_.limits.header_timeout_ms);
    c->interest = EPOLLIN;
    epoll_event ev{};
    ev.events = c->interest;
    ev.data.u64 = c->id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      close(fd);
      continue;
    }
    ++per_client_[client];
    open_.fetch_add(1);
    connections_.emplace(c->id, std::move(c));
  }
}

bool HttpServer::Impl::EvictOldestUnfinished(const std::string* client) {
  Connection* oldest = nullptr;
  for (auto& [id, c] : connections_) {
    if (c->fd < 0 || c->state != Connection::State::kReading || c->in_body) continue;
    if (client != nullptr && c->client != *client) continue;
    if (oldest == nullptr || c->id < oldest->id) oldest = c.get();
  }
  if (oldest == nullptr) return false;
  // Gone at once (not at the end of the round): the accept that follows counts without it.
  close(oldest->fd);
  Forget(oldest->id);
  return true;
}

void HttpServer::Impl::Refuse(int fd, const std::string& response) {
  // One try: a client that does not take 300 bytes at once gets the close alone.
  [[maybe_unused]] ssize_t n = send(fd, response.data(), response.size(), MSG_NOSIGNAL);
  close(fd);
}

void HttpServer::Impl::OnEvents(Connection& c, uint32_t events) {
  if (c.fd < 0) return;
  if (events & (EPOLLERR | EPOLLHUP)) {  // reset, or both directions shut
    Close(c);
    return;
  }
  if (events & EPOLLOUT) Flush(c);
  if (c.fd < 0 || !(events & EPOLLIN)) return;
  if (c.state == Connection::State::kReading) {
    ReadRequest(c);
  } else if (c.state == Connection::State::kLingering) {
    DrainLingering(c);
  }
}

void HttpServer::Impl::ReadRequest(Connection& c) {
  for (int i = 0; i < kMaxReadsPerWake && c.fd >= 0 && c.state == Connection::State::kReading;
       ++i) {
    const ssize_t n = recv(c.fd, read_buffer_.data(), read_buffer_.size(), 0);
    if (n > 0) {
      c.parser.Append(absl::string_view(read_buffer_.data(), static_cast<size_t>(n)));
      ProcessInput(c);
    } else if (n == 0) {
      c.peer_closed = true;
      break;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      break;
    } else if (errno != EINTR) {
      Close(c);
      return;
    }
  }
  // The client finished sending before its request did (or between requests): nothing more
  // can come.
  if (c.peer_closed && c.fd >= 0 && c.state == Connection::State::kReading) Close(c);
}

void HttpServer::Impl::ProcessInput(Connection& c) {
  switch (c.parser.Parse()) {
    case HttpRequestParser::Result::kNeedMore:
      if (c.idle && c.parser.started()) {
        c.idle = false;
        c.deadline = DeadlineIn(Ms(options_.limits.header_timeout_ms));
      }
      if (!c.in_body && c.parser.reading_body()) {
        c.in_body = true;
        c.deadline = DeadlineIn(Ms(options_.limits.body_timeout_ms));
        if (c.parser.TakeExpectContinue()) {
          c.out += "HTTP/1.1 100 Continue\r\n\r\n";
          Flush(c);
        }
      }
      return;
    case HttpRequestParser::Result::kComplete:
      Dispatch(c, c.parser.TakeRequest());
      return;
    case HttpRequestParser::Result::kError:
      Respond(
          c,
          SerializeResponse(ParseErrorResponse(c.parser.error_status(), c.parser.error_message()),
                            false, false, 0),
          /*close=*/true);
      return;
  }
}

void HttpServer::Impl::Dispatch(Connection& c, ParsedRequest parsed) {
  c.state = Connection::State::kHandling;
  c.idle = false;
  c.in_body = false;
  UpdateInterest(c);
  {
    absl::MutexLock l(&mu_);
    jobs_.push_back(Job{c.id, std::move(parsed)});
  }
}

void HttpServer::Impl::OnHandled(Handled& h) {
  auto it = connections_.find(h.connection);
  if (it == connections_.end()) return;
  Connection& c = *it->second;
  if (c.fd < 0) {  // the client reset the connection while the handler ran
    closed_.push_back(c.id);
    return;
  }
  Respond(c, h.response, h.close);
}

void HttpServer::Impl::Respond(Connection& c, const std::string& response, bool close) {
  c.state = Connection::State::kWriting;
  c.close_after_write = close;
  c.out += response;
  c.deadline = DeadlineIn(Ms(options_.limits.write_timeout_ms));
  Flush(c);
}

void HttpServer::Impl::Flush(Connection& c) {
  while (c.fd >= 0 && c.out_pos < c.out.size()) {
    const ssize_t n = send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_pos += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      UpdateInterest(c);
      return;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      Close(c);
      return;
    }
  }
  if (c.fd < 0) return;
  c.out.clear();
  c.out_pos = 0;
  if (c.state == Connection::State::kWriting) {
    AfterResponse(c);
  } else {
    UpdateInterest(c);
  }
}

void HttpServer::Impl::AfterResponse(Connection& c) {
  if (c.close_after_write || stopping_io_) {
    if (c.peer_closed || stopping_io_) {
      shutdown(c.fd, SHUT_WR);
      Close(c);
      return;
    }
    shutdown(c.fd, SHUT_WR);
    c.state = Connection::State::kLingering;
    c.deadline = DeadlineIn(kLingerTime);
    UpdateInterest(c);
    return;
  }
  c.state = Connection::State::kReading;
  c.idle = true;
  c.in_body = false;
  c.deadline = DeadlineIn(Ms(options_.limits.idle_timeout_ms));
  UpdateInterest(c);
  if (c.parser.buffered() > 0) ProcessInput(c);  // a pipelined request
  // A client that sent its last request and then shut its side down: nothing more comes.
  if (c.peer_closed && c.fd >= 0 && c.state == Connection::State::kReading) Close(c);
}

void HttpServer::Impl::DrainLingering(Connection& c) {
  for (int i = 0; i < kMaxReadsPerWake; ++i) {
    const ssize_t n = recv(c.fd, read_buffer_.data(), read_buffer_.size(), 0);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    Close(c);  // EOF or an error: the client is done
    return;
  }
}

void HttpServer::Impl::UpdateInterest(Connection& c) {
  if (c.fd < 0) return;
  uint32_t want = 0;
  if (c.state == Connection::State::kReading || c.state == Connection::State::kLingering)
    want |= EPOLLIN;
  if (c.out_pos < c.out.size()) want |= EPOLLOUT;
  if (want == c.interest) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = c.id;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev) != 0) {
    Close(c);
    return;
  }
  c.interest = want;
}

void HttpServer::Impl::Close(Connection& c) {
  if (c.fd < 0) return;
  close(c.fd);  // leaves the epoll set with it
  c.fd = -1;
  // A connection whose handler runs stays (a slot taken) until the handler returns.
  if (c.state != Connection::State::kHandling) closed_.push_back(c.id);
}

void HttpServer::Impl::EraseClosed() {
  for (uint64_t id : closed_) Forget(id);
  closed_.clear();
}

void HttpServer::Impl::Forget(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  auto client = per_client_.find(it->second->client);
  if (client != per_client_.end() && --client->second <= 0) per_client_.erase(client);
  connections_.erase(it);
  open_.fetch_sub(1);
}

void HttpServer::Impl::BeginStop() {
  stopping_io_ = true;
  stop_deadline_ = Clock::now() + kStopGrace;
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
  }
  accept_paused_ = false;
  for (auto& [id, c] : connections_) {
    if (c->fd < 0) continue;
    switch (c->state) {
      case Connection::State::kReading:
      case Connection::State::kLingering:
        Close(*c);
        break;
      case Connection::State::kWriting:
        c->deadline = std::min(c->deadline, stop_deadline_);
        break;
      case Connection::State::kHandling:
        break;  // its response comes, then gets the grace
    }
  }
}

void HttpServer::Impl::Expire(Clock::time_point now) {
  if (accept_paused_ && now >= accept_resume_ && listen_fd_ >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenerId;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) == 0)
      accept_paused_ = false;
    else
      accept_resume_ = now + kAcceptPause;
  }
  for (auto& [id, c] : connections_)
    if (c->fd >= 0 && c->state != Connection::State::kHandling && c->deadline <= now) Close(*c);
}

int HttpServer::Impl::NextTimeoutMs(Clock::time_point now) const {
  bool any = false;
  Clock::time_point next = Clock::time_point::max();
  if (accept_paused_) {
    any = true;
    next = accept_resume_;
  }
  for (const auto& [id, c] : connections_) {
    if (c->fd < 0 || c->state == Connection::State::kHandling) continue;
    any = true;
    next = std::min(next, c->deadline);
  }
  if (!any) return -1;
  if (next <= now) return 0;
  // Rounded up: waking before the deadline would only loop again.
  const auto ms = std::chrono::ceil<Ms>(next - now).count();
  return static_cast<int>(std::min<int64_t>(ms, 60'000));
}

Clock::time_point HttpServer::Impl::DeadlineIn(Ms d) const {
  const Clock::time_point at = Clock::now() + d;
  return stopping_io_ ? std::min(at, stop_deadline_) : at;
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                              HttpHandler handler) {
  const std::string& host = options.bind_host;
  if (options.port < 0 || options.port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("HTTP port ", options.port, " is not a port"));
  const HttpLimits& limits = options.limits;
  const std::pair<const char*, int> positive[] = {{"header_timeout_ms", limits.header_timeout_ms},
                                                  {"body_timeout_ms", limits.body_timeout_ms},
                                                  {"idle_timeout_ms", limits.idle_timeout_ms},
                                                  {"write_timeout_ms", limits.write_timeout_ms},
                                                  {"max_connections", limits.max_connections}};
  for (const auto& [name, value] : positive)
    if (value <= 0)
      return absl::InvalidArgumentError(
          absl::StrCat("HTTP server option ", name, "=", value, " is not positive"));
  if (options.max_uri_bytes == 0 || options.max_header_bytes == 0)
    return absl::InvalidArgumentError("HTTP server header limits must be positive");

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* addresses = nullptr;
  const std::string port_text = std::to_string(options.port);
  const int gai =
      getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &addresses);
  auto cannot = [&](absl::string_view why) {
    return absl::UnavailableError(
        options.port == 0 ? absl::StrCat("cannot listen for HTTP on ", host, ":0: ", why)
                          : absl::StrCat("cannot listen for HTTP on ", host, ":", options.port,
                                         ": ", why, " (in use? --http-port 0 picks a free port)"));
  };
  if (gai != 0) return cannot(gai_strerror(gai));
  int listen_fd = -1;
  std::string why = "no address";
  for (addrinfo* a = addresses; a != nullptr && listen_fd < 0; a = a->ai_next) {
    const int fd =
        socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = ErrnoMessage(errno, "socket");
      continue;
    }
    // SO_REUSEADDR only: SO_REUSEPORT would let a second server bind a port that is in use
    // and silently share its requests.
    const int yes = 1, no = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (a->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof(no));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      why = ErrnoMessage(errno, "bind");
      close(fd);
      continue;
    }
    listen_fd = fd;
  }
  freeaddrinfo(addresses);
  if (listen_fd < 0) return cannot(why);

  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  int port = options.port;
  if (getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) == 0)
    port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event listener{}, wake{};
  listener.events = EPOLLIN;
  listener.data.u64 = kListenerId;
  wake.events = EPOLLIN;
  wake.data.u64 = kWakeId;
  if (epoll_fd < 0 || wake_fd < 0 ||
      epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &listener) != 0 ||
      epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &wake) != 0) {
    why = ErrnoMessage(errno, "epoll");
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) close(fd);
    return absl::UnavailableError(
        absl::StrCat("HTTP server on ", host, ":", port, " did not start: ", why));
  }
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->options_ = options;
  s->port_ = port;
  s->impl_ =
      std::make_unique<Impl>(std::move(options), std::move(handler), listen_fd, epoll_fd, wake_fd);
  s->impl_->StartThreads();
  return s;
}

HttpServer::~HttpServer() { Stop(); }

std::string HttpServer::address() const { return absl::StrCat(options_.bind_host, ":", port_); }

int HttpServer::open_connections() const { return impl_ ? impl_->open_connections() : 0; }

void HttpServer::Stop() {
  std::call_once(stop_once_, [this] {
    if (impl_) impl_->Stop();
  });
}

}  // namespace weft::web
