// Copyright Weft authors. Text that others chose (application names, queue names, users, tags,
// diagnostics, node hosts and health reports, error messages that echo them), made safe to
// print on a person's terminal: no byte of it can move the cursor, clear the screen, set the
// window title, start a new line or reorder what follows.
//
// For human output only. JSON output keeps the exact text: JSON encoders escape control
// characters themselves.
#ifndef WEFT_COMMON_TERMINAL_TEXT_H_
#define WEFT_COMMON_TERMINAL_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace weft {

// `text` with every character a terminal would act on written as a visible escape, and
// everything else (printable ASCII, printable UTF-8 such as "état" or "日本") unchanged:
//
//   backslash              \\   (so that the output reads back unambiguously)
//   newline, CR, tab       \n, \r, \t
//   other C0 bytes, DEL    \xNN (ESC is \x1b)
//   C1 controls U+0080-U+009F, bidirectional formatting U+200E/F, U+202A-U+202E, U+2066-U+2069,
//   line and paragraph separators U+2028/9
//                          \uNNNN (lower-case hex)
//   bytes that are not well-formed UTF-8 (stray continuation bytes, overlong forms,
//   surrogates, truncated sequences, beyond U+10FFFF)
//                          \xNN, one per byte
//
// The result is one line of text that holds no byte below 0x20, no 0x7f and only well-formed
// UTF-8. Pure; thread-safe.
std::string EscapeForTerminal(absl::string_view text);

}  // namespace weft

#endif  // WEFT_COMMON_TERMINAL_TEXT_H_
