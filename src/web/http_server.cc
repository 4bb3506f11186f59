#include "web/http_server.h"

#include <httplib.h>

#include <chrono>
#include <exception>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace weft::web {

std::string HttpRequest::Param(absl::string_view name, absl::string_view fallback) const {
  auto it = params.find(std::string(name));
  return it == params.end() ? std::string(fallback) : it->second;
}

bool HttpRequest::HasParam(absl::string_view name) const {
  return params.find(std::string(name)) != params.end();
}

std::string HttpRequest::Header(absl::string_view name) const {
  auto it = headers.find(absl::AsciiStrToLower(name));
  return it == headers.end() ? "" : it->second;
}

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

HttpRequest FromHttplib(const httplib::Request& in) {
  HttpRequest r;
  r.method = in.method;
  r.path = in.path;
  for (const auto& [k, v] : in.params) r.params.emplace(k, v);
  for (const auto& [k, v] : in.headers) r.headers.emplace(absl::AsciiStrToLower(k), v);
  r.body = in.body;
  return r;
}

void ToHttplib(const HttpResponse& in, httplib::Response* out) {
  out->status = in.status;
  for (const auto& [k, v] : in.headers) out->set_header(k, v);
  out->set_header("X-Content-Type-Options", "nosniff");
  out->set_header("Cache-Control", "no-store");
  out->set_content(in.body, in.content_type);
}

const char* ReasonOf(int status) {
  switch (status) {
    case 400:
      return "the request is malformed";
    case 404:
      return "not found";
    case 405:
      return "method not allowed";
    case 413:
      return "the request body is too large";
    case 414:
      return "the request URI is too long";
    default:
      return "the request failed";
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                              HttpHandler handler) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->options_ = std::move(options);
  s->handler_ = std::move(handler);
  s->server_ = std::make_unique<httplib::Server>();
  httplib::Server& srv = *s->server_;
  const int threads = s->options_.threads > 0 ? s->options_.threads : 1;
  srv.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  srv.set_payload_max_length(s->options_.max_body_bytes);
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which would let a second
  // server bind a port that is in use and silently share its requests.
  srv.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  srv.set_keep_alive_timeout(2);
  srv.set_read_timeout(5, 0);
  srv.set_write_timeout(5, 0);
  HttpServer* self = s.get();
  auto serve = [self](const httplib::Request& req, httplib::Response& res) {
    ToHttplib(self->handler_(FromHttplib(req)), &res);
  };
  // Methods with a body read it themselves: httplib refuses a POST without Content-Length
  // (`curl -X POST`, as YARN's docs show for new-application) when it reads the body first.
  auto serve_with_body = [self](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) {
    HttpRequest r = FromHttplib(req);
    if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
      ToHttplib(self->handler_(r), &res);  // no body (reading one would wait for a timeout)
      return;
    }
    const size_t max = self->options_.max_body_bytes;
    bool too_big = false;
    const bool read = reader([&](const char* data, size_t n) {
      if (r.body.size() + n > max) {
        too_big = true;
        return false;
      }
      r.body.append(data, n);
      return true;
    });
    uint64_t length = 0;
    const bool has_length = req.has_header("Content-Length") &&
                            absl::SimpleAtoi(req.get_header_value("Content-Length"), &length);
    if (too_big || (has_length && length > max)) {
      ToHttplib(JsonError(413, absl::StrCat("the request body is larger than ", max, " bytes")),
                &res);
    } else if (!read && ((has_length && length > 0) || req.has_header("Transfer-Encoding"))) {
      ToHttplib(JsonError(400, "the request body could not be read"), &res);
    } else {
      if (!read) r.body.clear();  // no body at all: as an empty one
      ToHttplib(self->handler_(r), &res);
    }
  };
  const std::string any = ".*";
  srv.Get(any, serve);
  srv.Post(any, serve_with_body);
  srv.Put(any, serve_with_body);
  srv.Delete(any, serve_with_body);
  srv.Patch(any, serve_with_body);
  srv.Options(any, serve);
  // Statuses httplib sets itself (bad request line, 413, unknown method) get a JSON body; a
  // body the handler already wrote is kept.
  srv.set_error_handler(static_cast<httplib::Server::HandlerWithResponse>(
      [](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        HttpResponse err =
            JsonError(res.status, absl::StrCat(ReasonOf(res.status), " (HTTP ", res.status, ")"));
        res.set_content(err.body, err.content_type);
        return httplib::Server::HandlerResponse::Handled;
      }));
  srv.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        ToHttplib(JsonError(500, absl::StrCat("internal error: ", what)), &res);
      });
  const std::string& host = s->options_.bind_host;
  if (s->options_.port < 0 || s->options_.port > 65535)
    return absl::InvalidArgumentError(
        absl::StrCat("HTTP port ", s->options_.port, " is not a port"));
  if (s->options_.port == 0) {
    s->port_ = srv.bind_to_any_port(host);
    if (s->port_ <= 0)
      return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", host, ":0"));
  } else {
    if (!srv.bind_to_port(host, s->options_.port))
      return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", host, ":",
                                                 s->options_.port,
                                                 " (in use? --http-port 0 picks a free port)"));
    s->port_ = s->options_.port;
  }
  s->thread_ = std::thread([self] {
    self->server_->listen_after_bind();
    self->listen_returned_.store(true);
  });
  // Stop() is only safe once the server runs (httplib's stop() before that is lost).
  while (!srv.is_running() && !s->listen_returned_.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!srv.is_running())
    return absl::UnavailableError(absl::StrCat("HTTP server on ", s->address(), " did not start"));
  return s;
}

HttpServer::~HttpServer() { Stop(); }

std::string HttpServer::address() const { return absl::StrCat(options_.bind_host, ":", port_); }

void HttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string PercentEncode(absl::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string HtmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace weft::web
