// Copyright Weft authors. HTTP requests and responses as plain values, so that handlers (the
// REST API, the UI, /metrics) are pure functions testable without a socket.
#ifndef WEFT_WEB_HTTP_H_
#define WEFT_WEB_HTTP_H_

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace weft::web {

struct HttpRequest {
  std::string method;  // "GET", "POST", "PUT", ... as sent
  std::string path;    // decoded, without the query string
  // Decoded query parameters; a name may repeat.
  std::multimap<std::string, std::string> params;
  // Header names lower-cased.
  std::map<std::string, std::string> headers;
  std::string body;

  // The first value of a query parameter, or `fallback`.
  std::string Param(absl::string_view name, absl::string_view fallback = "") const;
  bool HasParam(absl::string_view name) const;
  // A header by case-insensitive name, or "".
  std::string Header(absl::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (e.g. Location)
};

// Must be thread-safe: the server calls it from several threads at once.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// `text` safe inside HTML text and quoted attributes: & < > " ' as entities.
std::string HtmlEscape(absl::string_view text);
// `text` percent-encoded for a URL: every byte but RFC 3986's unreserved characters (and '/'
// when `keep_slash`, for a path) as %XX.
std::string PercentEncode(absl::string_view text, bool keep_slash = false);

}  // namespace weft::web

#endif  // WEFT_WEB_HTTP_H_
