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
