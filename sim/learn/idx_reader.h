#pragma once
// Reader of IDX files, the format of the MNIST and Fashion-MNIST distributions (LeCun et al.,
// http://yann.lecun.com/exdb/mnist/, section "FILE FORMATS FOR THE MNIST DATABASE"):
//
//   bytes 0-1   0x00 0x00
//   byte  2     the element type; only 0x08 (unsigned byte) is read here, the type of every
//               MNIST/Fashion-MNIST file
//   byte  3     the number of dimensions: 3 for images (count, rows, columns), 1 for labels
//   then        one 32-bit big-endian size per dimension, outermost first
//   then        the elements, row-major, exactly the product of the sizes
//
// So an image file's magic is 0x00000803 and a label file's 0x00000801. A file may be plain or
// gzip-compressed (the distributions ship `.gz`): zlib's gzread reads both. The header is checked
// in full and the file must hold exactly the bytes it promises, no fewer (truncated) and no more
// (trailing bytes): a download cut short or two files concatenated is an InputError, never a
// silently shorter data set. Every error is one line naming the file, what was expected and what
// was found.

#include <cstdint>
#include <filesystem>
#include <vector>

namespace adaptsim::learn {

// The largest payload accepted, 1 GiB: 20x Fashion-MNIST's training images (60000 x 28 x 28 =
// 47,040,000 bytes), so a real file always fits and a corrupt header's 2^32-sized dimension is
// refused before any allocation.
inline constexpr std::uint64_t kMaxIdxBytes = std::uint64_t{1} << 30;

// The element type byte of unsigned 8-bit data (the IDX format's 0x08).
inline constexpr std::uint8_t kIdxTypeUint8 = 0x08;

// An IDX file's contents.
struct IdxArray {
  std::vector<std::uint32_t> dims;  // sizes, outermost first; each > 0
  std::vector<std::uint8_t> data;   // row-major elements; size() == product of dims
};

// Reads the IDX file at `path` (plain or gzip) whose element type is uint8 and whose number of
// dimensions is `expected_dims` (3 for images, 1 for labels; the messages call the payload
// "images" or "labels" accordingly). Throws InputError ("<path>: <problem>: expected ..., found
// ...") for a missing or unreadable file, a wrong magic, type byte or number of dimensions, a zero
// or oversized dimension (product > kMaxIdxBytes), a truncated file, trailing bytes or a corrupt
// gzip stream.
IdxArray read_idx(const std::filesystem::path& path, int expected_dims);

}  // namespace adaptsim::learn
