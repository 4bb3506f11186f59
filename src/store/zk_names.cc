// Copyright Weft authors.
#include "store/zk_names.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace weft::store::zk {
namespace {

constexpr char kHexDigits[] = "0123456789ABCDEF";

bool KeptInNodeName(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // Lower-case digits are not produced, so not accepted: one spelling per name.
}

}  // namespace

std::string EscapeNodeName(absl::string_view bytes) {
  std::string name;
  name.reserve(bytes.size());
  for (char ch : bytes) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (KeptInNodeName(c)) {
      name.push_back(ch);
    } else {
      name.push_back('%');
      name.push_back(kHexDigits[c >> 4]);
      name.push_back(kHexDigits[c & 0xf]);
    }
  }
  return name;
}

absl::StatusOr<std::string> UnescapeNodeName(absl::string_view name) {
  std::string bytes;
  bytes.reserve(name.size());
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (KeptInNodeName(c)) {
      bytes.push_back(name[i]);
      continue;
    }
    if (c == '%' && i + 2 < name.size()) {
      const int high = HexValue(name[i + 1]);
      const int low = HexValue(name[i + 2]);
      const unsigned char decoded = static_cast<unsigned char>(high * 16 + low);
      if (high >= 0 && low >= 0 && !KeptInNodeName(decoded)) {
        bytes.push_back(static_cast<char>(decoded));
        i += 2;
        continue;
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("node name '", name, "' is not an escaped name (at offset ", i, ")"));
  }
  return bytes;
}

}  // namespace weft::store::zk
