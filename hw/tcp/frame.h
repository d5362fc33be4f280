#pragma once
// The wire format of the live TCP transport: every message on a connection is one frame,
//
//   header (kFrameHeaderBytes, little-endian) | name (name_bytes) | payload (payload_bytes) |
//   tag (kTagBytes)
//
// header = magic u32 | version u16 | kind u16 | job id u64 | src rank u32 |
//          name_bytes u32 | payload_bytes u64.
//
// The tag authenticates header, name and payload with the job's secret (auth.h): handshake frames
// by HMAC under the secret, every later frame by ChaCha20-Poly1305 (RFC 8439) under its
// connection's session key. The job id is public (it names the job in log lines); only the tag
// proves membership.
//
// A connection starts with a handshake (kHello from the connecting rank, kHelloAck from the
// accepting one) whose payload names the rank the sender expects at the other end, the cluster
// size and the sender's nonce; only once its tag checks out is the peer counted. After
// that it carries kData frames (one per Transport::send) and, on a graceful shutdown, one kBye;
// a rank that fails sends kAbort (payload: the reason, as text) to every peer it can, so that a
// failure spreads at once with its root cause instead of as a cascade of anonymous EOFs.
// Every header is validated before anything it announces is read or allocated.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hw/tcp/auth.h"

namespace adaptsim::tcp {

inline constexpr std::uint32_t kFrameMagic = 0x53544441;  // "ADTS" read as little-endian bytes
inline constexpr std::uint16_t kFrameVersion = 2;         // 2: authenticated frames (auth.h)
inline constexpr std::size_t kFrameHeaderBytes = 32;
// Handshake payload: expected peer rank u32 | cluster size u32 | the sender's nonce.
inline constexpr std::size_t kHelloPayloadBytes = 8 + kNonceBytes;

enum class FrameKind : std::uint16_t { kHello = 1, kHelloAck = 2, kData = 3, kBye = 4, kAbort = 5 };

// Longest abort reason accepted (and sent; longer ones are cut).
inline constexpr std::size_t kMaxAbortReasonBytes = 4096;

struct FrameHeader {
  FrameKind kind = FrameKind::kData;
  std::uint64_t job_id = 0;
  std::uint32_t src_rank = 0;
  std::uint32_t name_bytes = 0;
  std::uint64_t payload_bytes = 0;
};

struct FrameLimits {
  // Message names are short ("part::grad[0:262144]#1"); a longer one is garbage or an attack.
  std::uint32_t max_name_bytes = 4096;
  // Largest payload accepted from a peer; anything bigger drops the connection before a byte is
  // allocated. 4 GiB leaves room for any single tensor the sweep sends (chunks are 1 MiB).
  std::uint64_t max_payload_bytes = std::uint64_t{4} << 30;
};

void encode_frame_header(const FrameHeader& h, std::byte* out);  // writes kFrameHeaderBytes

// Decodes and checks what can be checked without context: magic, version, known kind, and the
// limits. Returns an empty string when valid, else the reason ("bad magic 0x...").
std::string decode_frame_header(const std::byte* in, const FrameLimits& limits, FrameHeader& out);

struct HelloPayload {
  std::uint32_t expected_peer = 0;
  std::uint32_t cluster_size = 0;
  Nonce nonce{};
};
void encode_hello_payload(const HelloPayload& hello, std::byte* out);  // kHelloPayloadBytes
HelloPayload decode_hello_payload(const std::byte* in);

std::string_view frame_kind_name(FrameKind kind);

}  // namespace adaptsim::tcp
