// Copyright Weft authors. YARN's identifiers as text, for the layers that only see strings
// (web servers, logs): what they can tell from an id without asking the RM.
#ifndef WEFT_COMMON_IDS_H_
#define WEFT_COMMON_IDS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace weft {

// The application id inside a container id (container_e<epoch>_<ts>_<seq>_<attempt>_<n> or
// YARN's container_<ts>_<seq>_<attempt>_<n> -> application_<ts>_<seq>); "" when `container_id`
// is not a container id.
std::string AppOfContainer(absl::string_view container_id);

}  // namespace weft

#endif  // WEFT_COMMON_IDS_H_
