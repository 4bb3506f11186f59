// Copyright Weft authors.
#include "common/terminal_text.h"

#include <algorithm>
#include <string>

#include "gtest/gtest.h"

namespace weft {
namespace {

using namespace std::string_literals;  // NOLINT: "\0"s

TEST(TerminalTextTest, PrintableTextIsUnchanged) {
  EXPECT_EQ(EscapeForTerminal(""), "");
  EXPECT_EQ(EscapeForTerminal("wordcount-2024 (alice) q=root.default ~!@#$%^&*()"),
            "wordcount-2024 (alice) q=root.default ~!@#$%^&*()");
  // Printable UTF-8: 2, 3 and 4 bytes, and U+00A0 just past the C1 controls.
  EXPECT_EQ(EscapeForTerminal("état 日本 \xf0\x9f\x98\x80 \xc2\xa0"),
            "état 日本 \xf0\x9f\x98\x80 \xc2\xa0");
}

TEST(TerminalTextTest, ControlCharactersBecomeVisibleEscapes) {
  // The attack: clear the screen, then forge a table row.
  EXPECT_EQ(EscapeForTerminal("x\x1b[2J\napplication_1_0001  root"),
            "x\\x1b[2J\\napplication_1_0001  root");
  EXPECT_EQ(EscapeForTerminal("a\tb\rc"), "a\\tb\\rc");
  EXPECT_EQ(EscapeForTerminal("\0\x01\x07\x08\x0b\x0c\x1f\x7f"s),
            "\\x00\\x01\\x07\\x08\\x0b\\x0c\\x1f\\x7f");
  // An OSC title change ending in BEL.
  EXPECT_EQ(EscapeForTerminal("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
}

TEST(TerminalTextTest, BackslashIsEscapedSoTheOutputIsUnambiguous) {
  EXPECT_EQ(EscapeForTerminal("a\\b"), "a\\\\b");
  // A name that spells an escape reads differently from one that holds the byte.
  EXPECT_EQ(EscapeForTerminal("\\x1b"), "\\\\x1b");
  EXPECT_NE(EscapeForTerminal("\\x1b"), EscapeForTerminal("\x1b"));
  EXPECT_EQ(EscapeForTerminal("\\n"), "\\\\n");
  EXPECT_NE(EscapeForTerminal("\\n"), EscapeForTerminal("\n"));
}

TEST(TerminalTextTest, C1ControlsAndReorderingCharactersBecomeCodePointEscapes) {
  EXPECT_EQ(EscapeForTerminal("a\xc2\x80"
                              "b\xc2\x9b"
                              "2Jc\xc2\x85"
                              "d\xc2\x9f"),
            "a\\u0080b\\u009b2Jc\\u0085d\\u009f");
  // Right-to-left override and isolate, line separator, left-to-right mark.
  EXPECT_EQ(EscapeForTerminal("x\xe2\x80\xae"
                              "y\xe2\x81\xa6"
                              "z\xe2\x80\xa8"
                              "w\xe2\x80\x8e"),
            "x\\u202ey\\u2066z\\u2028w\\u200e");
}

TEST(TerminalTextTest, BytesThatAreNotUtf8AreEscapedOneByOne) {
  EXPECT_EQ(EscapeForTerminal("a\xff"
                              "b"),
            "a\\xffb");
  EXPECT_EQ(EscapeForTerminal("\x80\xbf"), "\\x80\\xbf");           // stray continuation bytes
  EXPECT_EQ(EscapeForTerminal("\xc0\x9b"), "\\xc0\\x9b");           // overlong ESC-like CSI
  EXPECT_EQ(EscapeForTerminal("\xe0\x80\x80"), "\\xe0\\x80\\x80");  // overlong NUL
  EXPECT_EQ(EscapeForTerminal("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(EscapeForTerminal("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // > U+10FFFF
  // A truncated sequence: its lead byte is escaped and what follows is read on its own.
  EXPECT_EQ(EscapeForTerminal("\xe6\x97"
                              "A"),
            "\\xe6\\x97A");
  EXPECT_EQ(EscapeForTerminal("\xe6"), "\\xe6");
  // A lead byte followed by a control: the control is escaped as a control.
  EXPECT_EQ(EscapeForTerminal("\xc3\x1b"), "\\xc3\\x1b");
}

TEST(TerminalTextTest, TheOutputHasNoControlByteAndIsOneLine) {
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte.push_back(static_cast<char>(b));
  const std::string out = EscapeForTerminal(every_byte);
  for (char c : out) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 && u < 0x7f) << "byte 0x" << std::hex << static_cast<int>(u);
  }
  // The output is printable ASCII: escaping it again only doubles its backslashes.
  EXPECT_EQ(EscapeForTerminal(out).size(), out.size() + std::count(out.begin(), out.end(), '\\'));
}

}  // namespace
}  // namespace weft
