#include "sim/core/atomic_file.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/core/error.h"

using namespace adaptsim;
namespace fs = std::filesystem;

TEST_CASE("an atomic write replaces the file whole and leaves no temporary file") {
  const fs::path dir =
      fs::temp_directory_path() / ("adaptsim_atomic_file_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_file_atomic(dir / "x.csv", "hello\n");
  write_file_atomic(dir / "x.csv", "again\n");
  std::ifstream in(dir / "x.csv");
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "again\n");
  CHECK(std::distance(fs::directory_iterator(dir), {}) == 1);
  CHECK_THROWS_WITH_AS(write_file_atomic(dir / "missing-dir" / "y.csv", "z"),
                       doctest::Contains("missing-dir/y.csv: cannot write"), RuntimeFailure);
  CHECK(std::distance(fs::directory_iterator(dir), {}) == 1);
  fs::remove_all(dir);
}
