#include "sim/learn/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <system_error>

#include "sim/core/error.h"

namespace adaptsim::learn {

namespace {

// gzread's buffer: 256 KiB instead of zlib's 8 KiB default, so a 26 MB image file is read in
// ~100 calls (zlib.h: gzbuffer).
constexpr unsigned kGzBufferBytes = 256 * 1024;
// One gzread call reads at most this much (its length is an unsigned int, its result an int).
constexpr std::uint64_t kMaxReadChunk = 1u << 24;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

std::string hex(std::uint32_t value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, value);
  return buf;
}

std::uint32_t expected_magic(int dims) {
  return (std::uint32_t{kIdxTypeUint8} << 8) | static_cast<std::uint32_t>(dims);
}

// What a file of `dims` dimensions holds, for the messages.
const char* payload_name(int dims) {
  return dims == 3 ? "images" : (dims == 1 ? "labels" : "elements");
}

class Reader {
 public:
  explicit Reader(const std::filesystem::path& path) : path_(path) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw InputError(path_.string() + ": " + problem);
  }

  void open() {
    std::error_code ec;
    const auto status = std::filesystem::status(path_, ec);
    if (!std::filesystem::exists(status)) fail("cannot open: no such file");
    if (!std::filesystem::is_regular_file(status)) fail("cannot open: not a regular file");
    errno = 0;
    file_.reset(gzopen(path_.c_str(), "rb"));
    if (!file_) fail(std::string("cannot open: ") + (errno ? std::strerror(errno) : "zlib failed"));
    gzbuffer(file_.get(), kGzBufferBytes);
  }

  // Reads up to `n` bytes into `out` and returns how many were read (fewer only at the end of the
  // data). A corrupt gzip stream throws; a gzip stream cut short returns what it held and sets
  // stream_cut_.
  std::uint64_t read(std::uint8_t* out, std::uint64_t n) {
    std::uint64_t total = 0;
    while (total < n) {
      const auto chunk = static_cast<unsigned>(std::min(n - total, kMaxReadChunk));
      const int got = gzread(file_.get(), out + total, chunk);
      if (got < 0) {
        int errnum = 0;
        const char* message = gzerror(file_.get(), &errnum);
        if (errnum == Z_BUF_ERROR) {  // zlib: "unexpected end of file" in a gzip stream
          stream_cut_ = true;
          return total;
        }
        fail(std::string("corrupt gzip stream: ") + message);
      }
      if (got == 0) {
        int errnum = 0;
        gzerror(file_.get(), &errnum);
        if (errnum == Z_BUF_ERROR) stream_cut_ = true;
        return total;
      }
      total += static_cast<std::uint64_t>(got);
    }
    return total;
  }

  // The bytes left after the promised payload (0 for a well-formed file).
  std::uint64_t count_rest() {
    std::array<std::uint8_t, 4096> scratch{};
    std::uint64_t rest = 0;
    for (;;) {
      const std::uint64_t got = read(scratch.data(), scratch.size());
      rest += got;
      if (got < scratch.size()) return rest;
    }
  }

  bool stream_cut() const { return stream_cut_; }

 private:
  std::filesystem::path path_;
  GzFile file_;
  bool stream_cut_ = false;
};

}  // namespace

IdxArray read_idx(const std::filesystem::path& path, int expected_dims) {
  Reader reader(path);
  reader.open();
  const std::string magic_text = hex(expected_magic(expected_dims), 8);
  const char* payload = payload_name(expected_dims);

  std::array<std::uint8_t, 4> magic{};
  const std::uint64_t magic_got = reader.read(magic.data(), magic.size());
  if (magic_got < magic.size()) {
    reader.fail("truncated: expected a 4-byte IDX magic " + magic_text + ", file has " +
                std::to_string(magic_got) + " bytes");
  }
  const std::uint32_t found_magic = (std::uint32_t{magic[0]} << 24) |
                                    (std::uint32_t{magic[1]} << 16) |
                                    (std::uint32_t{magic[2]} << 8) | magic[3];
  if (magic[0] != 0 || magic[1] != 0) {
    reader.fail("not an IDX file: expected magic " + magic_text + " (uint8 " + payload +
                "), found " + hex(found_magic, 8));
  }
  if (magic[2] != kIdxTypeUint8) {
    reader.fail("wrong element type " + hex(magic[2], 2) + " in magic " + hex(found_magic, 8) +
                ": expected " + hex(kIdxTypeUint8, 2) + " (uint8), magic " + magic_text);
  }
  if (magic[3] != expected_dims) {
    reader.fail("wrong number of dimensions in magic " + hex(found_magic, 8) + ": expected " +
                std::to_string(expected_dims) + " (" + payload + ", magic " + magic_text +
                "), found " + std::to_string(magic[3]));
  }

  IdxArray array;
  std::vector<std::uint8_t> header(4 * static_cast<std::size_t>(expected_dims));
  const std::uint64_t header_got = reader.read(header.data(), header.size());
  if (header_got < header.size()) {
    reader.fail("truncated: header needs " + std::to_string(header.size()) +
                " bytes of dimension sizes after the magic, file has " +
                std::to_string(header_got));
  }
  std::uint64_t promised = 1;
  for (int d = 0; d < expected_dims; ++d) {
    const std::uint8_t* b = &header[4 * static_cast<std::size_t>(d)];
    const std::uint32_t size = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                               (std::uint32_t{b[2]} << 8) | b[3];
    if (size == 0) {
      reader.fail("dimension " + std::to_string(d) + " of " + std::to_string(expected_dims) +
                  " is 0: expected a size > 0");
    }
    // promised <= kMaxIdxBytes (2^30) and size < 2^32: the product fits in 64 bits.
    promised *= size;
    if (promised > kMaxIdxBytes) {
      reader.fail("dimension sizes promise more than " + std::to_string(kMaxIdxBytes) +
                  " bytes of " + payload + " (the reader's limit, kMaxIdxBytes): header corrupt?");
    }
    array.dims.push_back(size);
  }

  array.data.resize(promised);
  const std::uint64_t got = reader.read(array.data.data(), promised);
  if (got < promised) {
    reader.fail("truncated: header promises " + std::to_string(promised) + " bytes of " + payload +
                ", file has " + std::to_string(got) +
                (reader.stream_cut() ? " (gzip stream ends early)" : ""));
  }
  const std::uint64_t rest = reader.count_rest();
  if (rest > 0) {
    reader.fail("trailing bytes: header promises " + std::to_string(promised) + " bytes of " +
                payload + ", file has " + std::to_string(promised + rest));
  }
  if (reader.stream_cut()) {
    reader.fail("truncated: gzip stream ends early after the " + std::to_string(promised) +
                " bytes of " + payload);
  }
  return array;
}

}  // namespace adaptsim::learn
