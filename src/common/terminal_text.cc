// Copyright Weft authors.
#include "common/terminal_text.h"

#include <cstddef>
#include <cstdint>

#include "absl/strings/str_format.h"

namespace weft {
namespace {

bool IsContinuation(unsigned char c) { return (c & 0xc0) == 0x80; }

// The well-formed UTF-8 sequence (RFC 3629, Table 3-7 of the Unicode standard) of 2 to 4 bytes
// at the start of `s`: its length, with its code point in `*code_point`; 0 when `s` does not
// start with one (an ASCII byte, a stray continuation byte, an overlong form, a surrogate, a
// truncated sequence, a code point beyond U+10FFFF).
size_t DecodeMultibyte(absl::string_view s, uint32_t* code_point) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  size_t length = 0;
  unsigned char min1 = 0x80, max1 = 0xbf;  // the second byte's range
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3;
    if (b0 == 0xe0) min1 = 0xa0;  // overlong below U+0800
    if (b0 == 0xed) max1 = 0x9f;  // surrogates U+D800-U+DFFF
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4;
    if (b0 == 0xf0) min1 = 0x90;  // overlong below U+10000
    if (b0 == 0xf4) max1 = 0x8f;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  const auto b1 = static_cast<unsigned char>(s[1]);
  if (b1 < min1 || b1 > max1) return 0;
  for (size_t i = 2; i < length; ++i)
    if (!IsContinuation(static_cast<unsigned char>(s[i]))) return 0;
  uint32_t cp = b0 & (length == 2 ? 0x1f : length == 3 ? 0x0f : 0x07);
  for (size_t i = 1; i < length; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[i]) & 0x3f);
  *code_point = cp;
  return length;
}

// Code points above U+007F that a terminal acts on or that reorder the text around them.
bool IsUnsafeCodePoint(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) ||      // C1 controls (CSI, OSC, NEL, ...)
         cp == 0x200e || cp == 0x200f ||    // left-to-right and right-to-left marks
         cp == 0x2028 || cp == 0x2029 ||    // line and paragraph separators
         (cp >= 0x202a && cp <= 0x202e) ||  // bidirectional embeddings and overrides
         (cp >= 0x2066 && cp <= 0x2069);    // bidirectional isolates
}

// Appends the ASCII byte `c` to `out`: escaped unless it is printable and not a backslash.
void AppendAscii(unsigned char c, std::string* out) {
  switch (c) {
    case '\\':
      out->append("\\\\");
      return;
    case '\n':
      out->append("\\n");
      return;
    case '\r':
      out->append("\\r");
      return;
    case '\t':
      out->append("\\t");
      return;
    default:
      break;
  }
  if (c < 0x20 || c == 0x7f) {
    absl::StrAppendFormat(out, "\\x%02x", c);
    return;
  }
  out->push_back(static_cast<char>(c));
}

}  // namespace

std::string EscapeForTerminal(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      AppendAscii(c, &out);
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t length = DecodeMultibyte(text.substr(i), &cp);
    if (length == 0) {  // not UTF-8: this byte alone, then go on from the next one
      absl::StrAppendFormat(&out, "\\x%02x", c);
      ++i;
    } else if (IsUnsafeCodePoint(cp)) {
      absl::StrAppendFormat(&out, "\\u%04x", cp);
      i += length;
    } else {
      out.append(text.data() + i, length);
      i += length;
    }
  }
  return out;
}

}  // namespace weft
