#include "sim/io/output.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace adaptsim::io;
namespace fs = std::filesystem;

TEST_CASE("CSV quoting follows RFC 4180 and rows must match the header") {
  CsvTable t({"a", "b"});
  t.add_row({"1", "x,y"});
  t.add_row({"2", "say \"hi\""});
  CHECK(t.render() == "a,b\n1,\"x,y\"\n2,\"say \"\"hi\"\"\"\n");
  CHECK_THROWS_AS(t.add_row({"only one"}), std::logic_error);
}

TEST_CASE("atomic writes leave no temporary file behind") {
  const fs::path dir = fs::temp_directory_path() / "adaptsim_output_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_file_atomic(dir / "x.csv", "hello\n");
  write_file_atomic(dir / "x.csv", "again\n");
  std::ifstream in(dir / "x.csv");
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == "again\n");
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir))
    ++files;
  CHECK(files == 1);
  CHECK_THROWS(write_file_atomic(dir / "missing-dir" / "y.csv", "z"));
}

TEST_CASE("number formatting is fixed and locale-free") {
  CHECK(fmt_fixed(1.23456, 3) == "1.235");
  CHECK(fmt_general(1234567.0) == "1.23457e+06");
  CHECK(fnv1a_hex("") == "cbf29ce484222325");
}
