// Copyright Weft authors.
#include "common/json_nesting.h"

namespace weft {

int JsonNestingDepth(absl::string_view text, int limit) {
  JsonNestingScanner scanner;
  for (char c : text) {
    scanner.Feed(c);
    if (scanner.max_depth() > limit) break;
  }
  return scanner.max_depth();
}

}  // namespace weft
