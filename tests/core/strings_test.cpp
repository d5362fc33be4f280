#include "sim/core/strings.h"

#include <doctest/doctest.h>

#include <string>

using namespace adaptsim;

TEST_CASE("trim drops ASCII whitespace at both ends and keeps the inside") {
  CHECK(trim("  10 Gbps\t") == "10 Gbps");
  // A CRLF file's line and a value with its newline read as written.
  CHECK(trim("model name\t: Xeon\r\n") == "model name\t: Xeon");
  CHECK(trim("\v\fx\f\v") == "x");
  CHECK(trim(" \t\r\n") == "");
  CHECK(trim("") == "");
  // Not whitespace: a non-breaking space's UTF-8 bytes stay.
  CHECK(trim("\xC2\xA0x") == "\xC2\xA0x");
}

TEST_CASE("trim returns a view into its argument") {
  const std::string text = "  abc  ";
  const std::string_view t = trim(text);
  CHECK(t.data() == text.data() + 2);
  CHECK(t.size() == 3);
}

TEST_CASE("invalid_utf8_at finds the first byte that is not well-formed UTF-8") {
  CHECK(invalid_utf8_at("plain ASCII") == std::string_view::npos);
  CHECK(invalid_utf8_at("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == std::string_view::npos);
  // 0xFF is never a UTF-8 byte (the literal is split: "\xFFcd" would be one hex escape).
  CHECK(invalid_utf8_at("ab\xFF"
                        "cd") == 2);
  CHECK(invalid_utf8_at("x\xC0\xAF") == 1);          // overlong "/"
  CHECK(invalid_utf8_at("x\xED\xA0\x80") == 1);      // a surrogate
  CHECK(invalid_utf8_at("x\xF4\x90\x80\x80") == 1);  // above U+10FFFF
  CHECK(invalid_utf8_at("ab\xC3") == 2);             // cut short at the end
}
