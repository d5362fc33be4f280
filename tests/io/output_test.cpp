#include "sim/io/output.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <stdexcept>

#include "sim/core/error.h"

using namespace adaptsim::io;
namespace fs = std::filesystem;

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

TEST_CASE("a group of files is written all or none (issue 21 item 7)") {
  const fs::path dir = fs::temp_directory_path() / "adaptsim_output_group_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "taken");  // a folder where the third file should go
  const auto entries = [&] {
    int n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir))
      ++n;
    return n;
  };
  // The third file's rename fails after the first two are renamed: they are removed again.
  CHECK_THROWS_WITH_AS(
      write_files_atomic({{dir / "a.csv", "a"}, {dir / "b.json", "b"}, {dir / "taken", "c"}}),
      doctest::Contains("taken: cannot rename the temporary file"), adaptsim::RuntimeFailure);
  CHECK_FALSE(fs::exists(dir / "a.csv"));
  CHECK_FALSE(fs::exists(dir / "b.json"));
  CHECK(entries() == 1);  // only the folder: no temporaries either
  // A file that cannot be written at all: nothing is renamed.
  CHECK_THROWS(write_files_atomic({{dir / "a.csv", "a"}, {dir / "missing" / "b.csv", "b"}}));
  CHECK(entries() == 1);
  // A name that is no file name.
  CHECK_THROWS_WITH_AS(write_files_atomic({{dir / ".", "x"}}), doctest::Contains("not a file name"),
                       adaptsim::RuntimeFailure);
  // All written: all there.
  write_files_atomic({{dir / "a.csv", "a"}, {dir / "b.json", "b"}});
  CHECK(entries() == 3);
  // A target name of 250 characters: its temporary's name still fits NAME_MAX (255).
  const std::string long_name(250, 'x');
  write_files_atomic({{dir / long_name, "long"}});
  CHECK(fs::exists(dir / long_name));
}
