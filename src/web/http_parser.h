// Copyright Weft authors. HTTP/1.1 on the wire, without sockets: an incremental request parser
// (bytes go in as they arrive, complete requests or a status to refuse the request with come
// out) and the response serializer. No I/O and no clock: the server decides the deadlines and
// tests feed the parser byte by byte.
#ifndef WEFT_WEB_HTTP_PARSER_H_
#define WEFT_WEB_HTTP_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "web/http.h"

namespace weft::web {

// Bounds on one request; a request over any of them is refused with the status named.
struct HttpParseLimits {
  size_t max_uri_bytes = 8192;          // the request target; longer: 414
  size_t max_header_bytes = 64 * 1024;  // request line, headers (and chunked trailers); more: 431
  size_t max_header_count = 100;        // header lines; more: 431
  size_t max_body_bytes = 1 << 20;      // the decoded body; larger: 413
};

// A complete request and how its connection goes on.
struct ParsedRequest {
  HttpRequest request;
  bool keep_alive = true;  // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only if asked
};

// Parses the requests of one connection, one after another (pipelined bytes after a request
// stay buffered for the next). Accepts CRLF or bare LF line ends, skips empty lines before a
// request line, and reads a body by Content-Length or chunked Transfer-Encoding (none: an
// empty body, whatever the method). Refuses with (status, message):
//   400 malformed request line, header, Content-Length or chunk; Content-Length together with
//       Transfer-Encoding (a request smuggling vector); conflicting Content-Lengths;
//   405 CONNECT and TRACE;  413 a body over max_body_bytes (by Content-Length before it is read);
//   414 a target over max_uri_bytes;  431 a head over max_header_bytes or max_header_count;
//   501 an unknown method or a transfer coding other than chunked;  505 not HTTP/1.x.
// After an error the parser stays in error: the connection must be closed. Not thread-safe.
class HttpRequestParser {
 public:
  enum class Result { kNeedMore, kComplete, kError };

  explicit HttpRequestParser(HttpParseLimits limits) : limits_(limits) {}

  // Adds bytes read from the connection.
  void Append(absl::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }
  // Parses what is buffered. kComplete: TakeRequest() returns the request. kError: see
  // error_status(). kNeedMore: every buffered byte is consumed or waits for more.
  Result Parse();
  // The request Parse() completed; the parser starts on the next one (buffered bytes kept).
  ParsedRequest TakeRequest();

  // Whether a byte of the current request other than leading empty lines has arrived.
  bool started() const { return phase_ != Phase::kRequestLine || !buffer_.empty(); }
  // Whether the current request's head is parsed and its body is being read.
  bool reading_body() const;
  // True once per request whose head asked "Expect: 100-continue" and that has a body to
  // read; the caller answers "HTTP/1.1 100 Continue" before the body arrives.
  bool TakeExpectContinue();
  // Bytes buffered and not yet part of a parsed request.
  size_t buffered() const { return buffer_.size(); }

  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

 private:
  enum class Phase {
    kRequestLine,
    kHeaders,
    kBody,       // Content-Length bytes
    kChunkSize,  // a chunk-size line
    kChunkData,  // chunk bytes
    kChunkEnd,   // the CRLF after a chunk's bytes
    kTrailers,   // trailer lines up to the empty one
    kComplete,
    kError,
  };

  Result Fail(int status, std::string message);
  // The next complete line (without its CR LF) into *line, consumed from the buffer; false
  // when no full line is buffered yet.
  bool NextLine(std::string* line);
  // Moves up to remaining_ buffered bytes into the body; true when none remain to come.
  bool TakeBodyBytes();
  Result ParseRequestLine(absl::string_view line);
  Result ParseHeaderLine(absl::string_view line);
  Result FinishHeaders();
  Result ParseChunkSize(absl::string_view line);

  HttpParseLimits limits_;
  std::string buffer_;
  size_t scanned_ = 0;  // buffer_[0, scanned_) holds no '\n'
  Phase phase_ = Phase::kRequestLine;
  ParsedRequest current_;
  size_t head_bytes_ = 0;    // bytes of request line, headers and trailers consumed
  size_t header_count_ = 0;  // header and trailer lines
  uint64_t remaining_ = 0;   // bytes left of the body (kBody) or of the chunk (kChunkData)
  bool http10_ = false;
  bool expect_continue_ = false;
  int error_status_ = 0;
  std::string error_message_;
};

// `text` with %XX sequences decoded (a malformed one is kept as it is) and, when
// `plus_as_space`, '+' as ' ' (query strings).
std::string PercentDecode(absl::string_view text, bool plus_as_space);
// Adds the parameters of `query` ("a=1&b=x%20y&a=2", without '?') to `params`, decoded; a name
// may repeat, a segment without a name is skipped, and an exact repeat of a segment is skipped
// (as cpp-httplib did).
void ParseQuery(absl::string_view query, std::multimap<std::string, std::string>* params);

// The bytes of `r` on the wire as an HTTP/1.1 response: status line, Content-Type and
// Content-Length (none for 1xx, 204, 304), "X-Content-Type-Options: nosniff",
// "Cache-Control: no-store", Connection (and Keep-Alive: timeout in s from idle_timeout_ms),
// then r.headers except those framing ones and any that could split the response, then the
// body unless `head` (Content-Length stays the body's). A status outside 100-999 is sent as 500.
std::string SerializeResponse(const HttpResponse& r, bool head, bool keep_alive,
                              int idle_timeout_ms);

}  // namespace weft::web

#endif  // WEFT_WEB_HTTP_PARSER_H_
