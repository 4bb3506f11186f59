#include "web/http_parser.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace weft::web {
namespace {

// A chunk-size line (with its extensions) or a chunk's closing line may be this long.
constexpr size_t kMaxChunkLineBytes = 1024;
// The longest method and version around a target on a request line, for the 414 bound while
// the line is still arriving.
constexpr size_t kRequestLineSlack = 32;

// RFC 9110 tchar.
bool IsTokenChar(unsigned char c) {
  if (absl::ascii_isalnum(c)) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!IsTokenChar(c)) return false;
  return true;
}

// Field values: visible bytes, SP, HTAB and obs-text; no other control byte.
bool IsFieldValue(absl::string_view s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  return true;
}

absl::string_view TrimOws(absl::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether a comma-separated header value lists `token` (case-insensitive).
bool HasToken(absl::string_view value, absl::string_view token) {
  for (absl::string_view part : absl::StrSplit(value, ','))
    if (absl::EqualsIgnoreCase(TrimOws(part), token)) return true;
  return false;
}

const char* ReasonPhrase(int status) {
  static constexpr std::pair<int, const char*> kReasons[] = {
      {100, "Continue"},
      {200, "OK"},
      {201, "Created"},
      {202, "Accepted"},
      {204, "No Content"},
      {206, "Partial Content"},
      {301, "Moved Permanently"},
      {302, "Found"},
      {303, "See Other"},
      {304, "Not Modified"},
      {307, "Temporary Redirect"},
      {400, "Bad Request"},
      {401, "Unauthorized"},
      {403, "Forbidden"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {409, "Conflict"},
      {413, "Payload Too Large"},
      {414, "URI Too Long"},
      {415, "Unsupported Media Type"},
      {416, "Range Not Satisfiable"},
      {429, "Too Many Requests"},
      {431, "Request Header Fields Too Large"},
      {500, "Internal Server Error"},
      {501, "Not Implemented"},
      {503, "Service Unavailable"},
      {505, "HTTP Version Not Supported"},
  };
  for (const auto& [code, reason] : kReasons)
    if (code == status) return reason;
  return "Unknown";
}

// Headers the serializer writes itself: the framing, and Content-Type from content_type.
bool IsServerHeader(absl::string_view name) {
  for (absl::string_view own :
       {"content-length", "transfer-encoding", "connection", "keep-alive", "content-type"})
    if (absl::EqualsIgnoreCase(name, own)) return true;
  return false;
}

// A handler's header goes out only if it cannot break the response's framing.
bool IsSafeHeader(absl::string_view name, absl::string_view value) {
  if (name.empty()) return false;
  for (unsigned char c : name)
    if (c <= 0x20 || c >= 0x7f || c == ':') return false;
  for (unsigned char c : value)
    if (c == '\r' || c == '\n' || c == '\0') return false;
  return true;
}

}  // namespace

std::string SerializeResponse(const HttpResponse& r, bool head, bool keep_alive,
                              int idle_timeout_ms) {
  const int status = r.status >= 100 && r.status <= 999 ? r.status : 500;
  std::string out = absl::StrCat("HTTP/1.1 ", status, " ", ReasonPhrase(status), "\r\n");
  const bool bodyless = status < 200 || status == 204 || status == 304;
  if (!bodyless) {
    if (IsSafeHeader("Content-Type", r.content_type) && !r.content_type.empty())
      absl::StrAppend(&out, "Content-Type: ", r.content_type, "\r\n");
    absl::StrAppend(&out, "Content-Length: ", r.body.size(), "\r\n");
  }
  out += "X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n";
  if (keep_alive) {
    absl::StrAppend(&out, "Connection: keep-alive\r\nKeep-Alive: timeout=",
                    std::max(1, idle_timeout_ms / 1000), "\r\n");
  } else {
    out += "Connection: close\r\n";
  }
  for (const auto& [name, value] : r.headers)
    if (IsSafeHeader(name, value) && !IsServerHeader(name))
      absl::StrAppend(&out, name, ": ", value, "\r\n");
  out += "\r\n";
  if (!head && !bodyless) out += r.body;
  return out;
}

std::string PercentDecode(absl::string_view text, bool plus_as_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
        HexValue(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2])));
      i += 2;
    } else if (c == '+' && plus_as_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void ParseQuery(absl::string_view query, std::multimap<std::string, std::string>* params) {
  std::set<absl::string_view> seen;
  for (absl::string_view segment : absl::StrSplit(query, '&')) {
    if (!seen.insert(segment).second) continue;
    const size_t eq = segment.find('=');
    absl::string_view name = segment.substr(0, eq);
    if (name.empty()) continue;
    absl::string_view value =
        eq == absl::string_view::npos ? absl::string_view() : segment.substr(eq + 1);
    params->emplace(PercentDecode(name, true), PercentDecode(value, true));
  }
}

bool HttpRequestParser::reading_body() const {
  return phase_ == Phase::kBody || phase_ == Phase::kChunkSize || phase_ == Phase::kChunkData ||
         phase_ == Phase::kChunkEnd || phase_ == Phase::kTrailers;
}

bool HttpRequestParser::TakeExpectContinue() { return std::exchange(expect_continue_, false); }

HttpRequestParser::Result HttpRequestParser::Fail(int status, std::string message) {
  phase_ = Phase::kError;
  error_status_ = status;
  error_message_ = std::move(message);
  return Result::kError;
}

bool HttpRequestParser::TakeBodyBytes() {
  const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, buffer_.size()));
  current_.request.body.append(buffer_, 0, n);
  buffer_.erase(0, n);
  scanned_ = 0;
  remaining_ -= n;
  return remaining_ == 0;
}

bool HttpRequestParser::NextLine(std::string* line) {
  const size_t eol = buffer_.find('\n', scanned_);
  if (eol == std::string::npos) {
    scanned_ = buffer_.size();
    return false;
  }
  size_t end = eol;
  if (end > 0 && buffer_[end - 1] == '\r') --end;
  line->assign(buffer_, 0, end);
  buffer_.erase(0, eol + 1);
  scanned_ = 0;
  if (phase_ == Phase::kRequestLine || phase_ == Phase::kHeaders || phase_ == Phase::kTrailers)
    head_bytes_ += eol + 1;
  return true;
}

HttpRequestParser::Result HttpRequestParser::Parse() {
  std::string line;
  for (;;) {
    switch (phase_) {
      case Phase::kComplete:
        return Result::kComplete;
      case Phase::kError:
        return Result::kError;
      case Phase::kRequestLine:
        if (!NextLine(&line)) {
          if (buffer_.size() > limits_.max_uri_bytes + kRequestLineSlack)
            return Fail(414, absl::StrCat("the request line is longer than ",
                                          limits_.max_uri_bytes + kRequestLineSlack, " bytes"));
          return Result::kNeedMore;
        }
        if (line.empty()) {  // RFC 9112 2.2: empty lines before a request line are ignored
          head_bytes_ = 0;
          continue;
        }
        if (Result r = ParseRequestLine(line); r != Result::kNeedMore) return r;
        phase_ = Phase::kHeaders;
        break;
      case Phase::kHeaders:
        if (!NextLine(&line)) {
          if (head_bytes_ + buffer_.size() > limits_.max_header_bytes)
            return Fail(431, absl::StrCat("the request headers are larger than ",
                                          limits_.max_header_bytes, " bytes"));
          return Result::kNeedMore;
        }
        if (head_bytes_ > limits_.max_header_bytes)
          return Fail(431, absl::StrCat("the request headers are larger than ",
                                        limits_.max_header_bytes, " bytes"));
        if (line.empty()) {
          if (Result r = FinishHeaders(); r == Result::kError) return r;
        } else if (Result r = ParseHeaderLine(line); r == Result::kError) {
          return r;
        }
        break;
      case Phase::kBody:
        if (buffer_.empty()) return Result::kNeedMore;
        if (TakeBodyBytes()) phase_ = Phase::kComplete;
        break;
      case Phase::kChunkSize:
        if (!NextLine(&line)) {
          if (buffer_.size() > kMaxChunkLineBytes)
            return Fail(400, "a chunk-size line is too long");
          return Result::kNeedMore;
        }
        if (Result r = ParseChunkSize(line); r == Result::kError) return r;
        break;
      case Phase::kChunkData:
        if (buffer_.empty()) return Result::kNeedMore;
        if (TakeBodyBytes()) phase_ = Phase::kChunkEnd;
        break;
      case Phase::kChunkEnd:
        if (!buffer_.empty() && buffer_[0] != '\r' && buffer_[0] != '\n')
          return Fail(400, "a chunk does not end with CRLF");
        if (!NextLine(&line)) {
          if (buffer_.size() > 1) return Fail(400, "a chunk does not end with CRLF");
          return Result::kNeedMore;
        }
        if (!line.empty()) return Fail(400, "a chunk does not end with CRLF");
        phase_ = Phase::kChunkSize;
        break;
      case Phase::kTrailers:
        if (!NextLine(&line)) {
          if (head_bytes_ + buffer_.size() > limits_.max_header_bytes)
            return Fail(431, absl::StrCat("the request trailers are larger than ",
                                          limits_.max_header_bytes, " bytes"));
          return Result::kNeedMore;
        }
        if (line.empty()) {
          phase_ = Phase::kComplete;
        } else if (head_bytes_ > limits_.max_header_bytes ||
                   ++header_count_ > limits_.max_header_count) {
          return Fail(431, "the request trailers are too large");
        } else if (line.find(':') == std::string::npos || !IsFieldValue(line)) {
          return Fail(400, "a trailer line is malformed");
        }
        break;  // trailers are read and dropped
    }
  }
}

HttpRequestParser::Result HttpRequestParser::ParseRequestLine(absl::string_view line) {
  std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || parts[1].empty())
    return Fail(400, "the request line is not 'METHOD TARGET HTTP/1.1'");
  const absl::string_view method = parts[0], target = parts[1], version = parts[2];
  if (!IsToken(method)) return Fail(400, "the request method is malformed");
  if (target.size() > limits_.max_uri_bytes)
    return Fail(414,
                absl::StrCat("the request URI is longer than ", limits_.max_uri_bytes, " bytes"));
  if (version == "HTTP/1.1") {
    http10_ = false;
  } else if (version == "HTTP/1.0") {
    http10_ = true;
  } else if (version.size() == 8 && absl::StartsWith(version, "HTTP/") &&
             absl::ascii_isdigit(version[5]) && version[6] == '.' &&
             absl::ascii_isdigit(version[7])) {
    return Fail(505, absl::StrCat(version, " is not supported (HTTP/1.1 is)"));
  } else {
    return Fail(400, "the request line's HTTP version is malformed");
  }
  if (method == "CONNECT" || method == "TRACE")
    return Fail(405, absl::StrCat("method ", method, " is not allowed"));
  if (method != "GET" && method != "HEAD" && method != "POST" && method != "PUT" &&
      method != "DELETE" && method != "PATCH" && method != "OPTIONS")
    return Fail(501, absl::StrCat("method ", method, " is not implemented"));
  if (target.front() != '/') return Fail(400, "the request target is not a path");
  for (unsigned char c : target)
    if (c <= 0x20 || c == 0x7f) return Fail(400, "the request target is malformed");
  HttpRequest& r = current_.request;
  r.method = std::string(method);
  const size_t q = target.find('?');
  r.path = PercentDecode(target.substr(0, q), /*plus_as_space=*/false);
  if (q != absl::string_view::npos) ParseQuery(target.substr(q + 1), &r.params);
  return Result::kNeedMore;
}

HttpRequestParser::Result HttpRequestParser::ParseHeaderLine(absl::string_view line) {
  if (line.front() == ' ' || line.front() == '\t')
    return Fail(400, "obsolete header line folding is not accepted");
  if (++header_count_ > limits_.max_header_count)
    return Fail(431,
                absl::StrCat("the request has more than ", limits_.max_header_count, " headers"));
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return Fail(400, "a header line has no ':'");
  const absl::string_view name = line.substr(0, colon);
  const absl::string_view value = TrimOws(line.substr(colon + 1));
  if (!IsToken(name)) return Fail(400, "a header name is malformed");
  if (!IsFieldValue(value)) return Fail(400, "a header value holds a control character");
  std::string key = absl::AsciiStrToLower(name);
  auto& headers = current_.request.headers;
  auto it = headers.find(key);
  if (it == headers.end()) {
    headers.emplace(std::move(key), std::string(value));
  } else if (key == "content-length") {
    if (it->second != value) return Fail(400, "the request has conflicting Content-Lengths");
  } else if (key == "transfer-encoding") {
    absl::StrAppend(&it->second, ", ", value);  // codings add up (RFC 9110 5.3)
  }                                             // any other repeat: the first value is kept
  return Result::kNeedMore;
}

HttpRequestParser::Result HttpRequestParser::FinishHeaders() {
  const auto& headers = current_.request.headers;
  const auto te = headers.find("transfer-encoding");
  const auto cl = headers.find("content-length");
  const auto connection = headers.find("connection");
  if (connection != headers.end() && HasToken(connection->second, "close")) {
    current_.keep_alive = false;
  } else {
    current_.keep_alive =
        !http10_ || (connection != headers.end() && HasToken(connection->second, "keep-alive"));
  }
  bool has_body = false;
  if (te != headers.end()) {
    if (cl != headers.end())
      return Fail(400, "the request has both Content-Length and Transfer-Encoding");
    if (!absl::EqualsIgnoreCase(TrimOws(te->second), "chunked"))
      return Fail(501,
                  absl::StrCat("transfer coding '", te->second, "' is not supported (chunked is)"));
    phase_ = Phase::kChunkSize;
    has_body = true;
  } else if (cl != headers.end()) {
    uint64_t length = 0;
    const std::string& v = cl->second;
    if (v.empty() || v.size() > 19 || !std::all_of(v.begin(), v.end(), absl::ascii_isdigit) ||
        !absl::SimpleAtoi(v, &length))
      return Fail(400, absl::StrCat("Content-Length '", v, "' is not a length"));
    if (length > limits_.max_body_bytes)
      return Fail(
          413, absl::StrCat("the request body is larger than ", limits_.max_body_bytes, " bytes"));
    remaining_ = length;
    phase_ = length == 0 ? Phase::kComplete : Phase::kBody;
    has_body = length > 0;
  } else {
    phase_ = Phase::kComplete;  // no framing: an empty body (a bare `curl -X POST`)
  }
  const auto expect = headers.find("expect");
  expect_continue_ = has_body && !http10_ && expect != headers.end() &&
                     absl::EqualsIgnoreCase(expect->second, "100-continue");
  return Result::kNeedMore;
}

HttpRequestParser::Result HttpRequestParser::ParseChunkSize(absl::string_view line) {
  absl::string_view size = TrimOws(line.substr(0, line.find(';')));
  if (size.empty() || size.size() > 16) return Fail(400, "a chunk size is malformed");
  uint64_t n = 0;
  for (char c : size) {
    const int v = HexValue(c);
    if (v < 0) return Fail(400, "a chunk size is malformed");
    n = n * 16 + static_cast<uint64_t>(v);
  }
  if (n > limits_.max_body_bytes - current_.request.body.size())
    return Fail(413,
                absl::StrCat("the request body is larger than ", limits_.max_body_bytes, " bytes"));
  if (n == 0) {
    phase_ = Phase::kTrailers;
  } else {
    remaining_ = n;
    phase_ = Phase::kChunkData;
  }
  return Result::kNeedMore;
}

ParsedRequest HttpRequestParser::TakeRequest() {
  ParsedRequest out = std::move(current_);
  current_ = ParsedRequest();
  phase_ = Phase::kRequestLine;
  head_bytes_ = 0;
  header_count_ = 0;
  remaining_ = 0;
  http10_ = false;
  expect_continue_ = false;
  return out;
}

}  // namespace weft::web
