// Copyright Weft authors. The nesting of JSON arrays and objects, counted before parsing: every
// reader of untrusted JSON (the REST API's bodies, the trace loaders' records) checks it so
// that a deeply nested input cannot exhaust the parser's stack. One scanner for all of them.
#ifndef WEFT_COMMON_JSON_NESTING_H_
#define WEFT_COMMON_JSON_NESTING_H_

#include "absl/strings/string_view.h"

namespace weft {

// Fed one character at a time; brackets inside strings (with their escapes) do not count.
// It does not validate JSON: a stray closing bracket just lowers the depth.
class JsonNestingScanner {
 public:
  // Returns true when `c` closes the outermost array or object (depth back to 0).
  bool Feed(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      return false;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '[' || c == '{') {
      if (++depth_ > max_depth_) max_depth_ = depth_;
    } else if (c == ']' || c == '}') {
      return --depth_ == 0;
    }
    return false;
  }
  int depth() const { return depth_; }
  int max_depth() const { return max_depth_; }  // deepest seen so far

 private:
  int depth_ = 0;
  int max_depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

// The deepest nesting in `text`, stopping early (and returning it) once above `limit`.
int JsonNestingDepth(absl::string_view text, int limit);

}  // namespace weft

#endif  // WEFT_COMMON_JSON_NESTING_H_
