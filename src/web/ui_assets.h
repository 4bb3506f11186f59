// Copyright Weft authors. The web UI's files (src/web/ui/), compiled into the binary.
#ifndef WEFT_WEB_UI_ASSETS_H_
#define WEFT_WEB_UI_ASSETS_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace weft::web {

struct UiAsset {
  const char* name;          // file name under src/web/ui/, e.g. "weft.js"
  const char* content_type;  // e.g. "text/javascript; charset=utf-8"
  const unsigned char* data;
  size_t size;
};

// The embedded file `name`, or nullptr.
const UiAsset* FindUiAsset(absl::string_view name);

}  // namespace weft::web

#endif  // WEFT_WEB_UI_ASSETS_H_
