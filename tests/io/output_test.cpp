#include "sim/io/output.h"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace adaptsim::io;

TEST_CASE("CSV quoting follows RFC 4180 and rows must match the header") {
  CsvTable t({"a", "b"});
  t.add_row({"1", "x,y"});
  t.add_row({"2", "say \"hi\""});
  CHECK(t.render() == "a,b\n1,\"x,y\"\n2,\"say \"\"hi\"\"\"\n");
  CHECK_THROWS_AS(t.add_row({"only one"}), std::logic_error);
}

TEST_CASE("number formatting is fixed and locale-free") {
  CHECK(fmt_fixed(1.23456, 3) == "1.235");
  CHECK(fmt_general(1234567.0) == "1.23457e+06");
  CHECK(fnv1a_hex("") == "cbf29ce484222325");
}
