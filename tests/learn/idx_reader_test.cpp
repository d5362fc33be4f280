// The IDX reader (sim/learn/idx_reader.h): round trips of small files, plain and gzip, and the
// one-line errors for every malformed header or size.
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "sim/learn/idx_reader.h"

namespace fs = std::filesystem;
using adaptsim::InputError;
using adaptsim::learn::IdxArray;
using adaptsim::learn::read_idx;

namespace {

// A folder of its own per test case (CTest runs the cases in parallel), removed at the end.
struct TempDir {
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("learn_idx_test_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

// The header of an IDX uint8 file: 0x00 0x00 0x08 <dims>, then each size big-endian.
std::vector<std::uint8_t> idx_header(std::uint8_t type, const std::vector<std::uint32_t>& dims) {
  std::vector<std::uint8_t> bytes = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<std::uint8_t>(d >> shift));
  }
  return bytes;
}

std::vector<std::uint8_t> idx_file(const std::vector<std::uint32_t>& dims,
                                   const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> bytes = idx_header(0x08, dims);
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

void write_file(const fs::path& path, const std::vector<std::uint8_t>& bytes, bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
            static_cast<int>(bytes.size()));
    REQUIRE(gzclose(f) == Z_OK);
  } else {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
  }
}

// The message of the InputError that reading `path` throws ("" when none is thrown).
std::string read_error(const fs::path& path, int dims) {
  try {
    read_idx(path, dims);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// 2 images of 2x3 pixels: 12 bytes, values 0..11 with 255 for the last, row-major.
const std::vector<std::uint32_t> kDims = {2, 2, 3};
const std::vector<std::uint8_t> kPixels = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255};

}  // namespace

TEST_CASE("idx: a small image file round-trips, plain and gzip") {
  TempDir dir("roundtrip");
  for (bool gzip : {false, true}) {
    const fs::path path = dir.path / (gzip ? "images.gz" : "images");
    write_file(path, idx_file(kDims, kPixels), gzip);
    const IdxArray a = read_idx(path, 3);
    // Expected: the dimensions (2, 2, 3) and the 12 bytes exactly as written.
    CHECK(a.dims == kDims);
    CHECK(a.data == kPixels);
  }
}

TEST_CASE("idx: a label file (magic 0x00000801) round-trips") {
  TempDir dir("labels");
  const fs::path path = dir.path / "labels.gz";
  write_file(path, idx_file({4}, {9, 0, 3, 7}), true);
  const IdxArray a = read_idx(path, 1);
  CHECK(a.dims == std::vector<std::uint32_t>{4});
  CHECK(a.data == std::vector<std::uint8_t>{9, 0, 3, 7});
}

TEST_CASE("idx: a missing file is an InputError naming it") {
  TempDir dir("missing");
  const fs::path path = dir.path / "absent-idx3-ubyte.gz";
  CHECK(read_error(path, 3) == path.string() + ": cannot open: no such file");
}

TEST_CASE("idx: a wrong magic is an InputError with the expected and found magic") {
  TempDir dir("magic");
  const fs::path path = dir.path / "images";
  std::vector<std::uint8_t> bytes = idx_file(kDims, kPixels);
  bytes[0] = 0x1f;  // e.g. a gzip header where a plain IDX magic is due
  write_file(path, bytes, false);
  CHECK(read_error(path, 3) == path.string() +
                                   ": not an IDX file: expected magic 0x00000803 (uint8 images), "
                                   "found 0x1f000803");
}

TEST_CASE("idx: a type byte other than 0x08 (uint8) is refused") {
  TempDir dir("type");
  const fs::path path = dir.path / "images.gz";
  std::vector<std::uint8_t> bytes = idx_header(0x0D, kDims);  // 0x0D: float in the IDX format
  bytes.insert(bytes.end(), 48, 0);
  write_file(path, bytes, true);
  CHECK(read_error(path, 3) == path.string() +
                                   ": wrong element type 0x0d in magic 0x00000d03: expected 0x08 "
                                   "(uint8), magic 0x00000803");
}

TEST_CASE("idx: a label file read as images names the dimension count") {
  TempDir dir("dims");
  const fs::path path = dir.path / "labels";
  write_file(path, idx_file({4}, {1, 2, 3, 4}), false);
  CHECK(read_error(path, 3) == path.string() +
                                   ": wrong number of dimensions in magic 0x00000801: expected 3 "
                                   "(images, magic 0x00000803), found 1");
}

TEST_CASE("idx: a zero dimension is refused") {
  TempDir dir("zero");
  const fs::path path = dir.path / "images";
  write_file(path, idx_file({2, 0, 3}, {}), false);
  CHECK(read_error(path, 3) == path.string() + ": dimension 1 of 3 is 0: expected a size > 0");
}

TEST_CASE("idx: an absurd size is refused before allocating") {
  TempDir dir("absurd");
  const fs::path path = dir.path / "images";
  // 65536 x 65536 x 1 = 2^32 bytes > kMaxIdxBytes = 2^30.
  write_file(path, idx_file({65536, 65536, 1}, {}), false);
  CHECK(read_error(path, 3) ==
        path.string() +
            ": dimension sizes promise more than 1073741824 bytes of images (the reader's limit, "
            "kMaxIdxBytes): header corrupt?");
}

TEST_CASE("idx: a truncated file is refused, plain and gzip") {
  TempDir dir("truncated");
  for (bool gzip : {false, true}) {
    const fs::path path = dir.path / (gzip ? "images.gz" : "images");
    // The header promises 2 x 2 x 3 = 12 bytes; the file holds 10 of them.
    std::vector<std::uint8_t> bytes = idx_file(kDims, kPixels);
    bytes.resize(bytes.size() - 2);
    write_file(path, bytes, gzip);
    CHECK(read_error(path, 3) ==
          path.string() + ": truncated: header promises 12 bytes of images, file has 10");
  }
}

TEST_CASE("idx: a file cut inside the header is refused") {
  TempDir dir("header");
  const fs::path path = dir.path / "images";
  std::vector<std::uint8_t> bytes = idx_header(0x08, kDims);
  bytes.resize(9);  // the magic and 5 of the 12 bytes of sizes
  write_file(path, bytes, false);
  CHECK(read_error(path, 3) ==
        path.string() +
            ": truncated: header needs 12 bytes of dimension sizes after the magic, file has 5");
}

TEST_CASE("idx: a gzip stream cut short is refused as truncated") {
  TempDir dir("gzcut");
  const fs::path full = dir.path / "full.gz";
  const fs::path cut = dir.path / "cut.gz";
  std::vector<std::uint8_t> payload(4000);
  for (std::size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<std::uint8_t>(i * 7919 % 251);
  write_file(full, idx_file({4000}, payload), true);
  // Drop the last half of the compressed bytes: the stream ends before the header's 4000 bytes.
  std::ifstream in(full, std::ios::binary);
  std::vector<char> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gz.resize(gz.size() / 2);
  std::ofstream(cut, std::ios::binary).write(gz.data(), static_cast<std::streamsize>(gz.size()));
  const std::string message = read_error(cut, 1);
  CHECK(message.starts_with(cut.string() + ": truncated: header promises 4000 bytes of labels"));
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("idx: trailing bytes after the promised data are refused, plain and gzip") {
  TempDir dir("trailing");
  for (bool gzip : {false, true}) {
    const fs::path path = dir.path / (gzip ? "images.gz" : "images");
    // The header promises 12 bytes; 3 more follow them.
    std::vector<std::uint8_t> bytes = idx_file(kDims, kPixels);
    bytes.insert(bytes.end(), {1, 2, 3});
    write_file(path, bytes, gzip);
    CHECK(read_error(path, 3) ==
          path.string() + ": trailing bytes: header promises 12 bytes of images, file has 15");
  }
}
