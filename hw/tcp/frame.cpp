#include "hw/tcp/frame.h"

#include <cstdio>
#include <cstring>

namespace adaptsim::tcp {
namespace {

template <typename T>
void put(std::byte*& p, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    *p++ = static_cast<std::byte>(static_cast<std::uint64_t>(v) >> (8 * i));
  }
}

template <typename T>
T get(const std::byte*& p) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(*p++)) << (8 * i);
  }
  return static_cast<T>(v);
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

void encode_frame_header(const FrameHeader& h, std::byte* out) {
  std::byte* p = out;
  put<std::uint32_t>(p, kFrameMagic);
  put<std::uint16_t>(p, kFrameVersion);
  put<std::uint16_t>(p, static_cast<std::uint16_t>(h.kind));
  put<std::uint64_t>(p, h.job_id);
  put<std::uint32_t>(p, h.src_rank);
  put<std::uint32_t>(p, h.name_bytes);
  put<std::uint64_t>(p, h.payload_bytes);
}

std::string decode_frame_header(const std::byte* in, const FrameLimits& limits, FrameHeader& out) {
  const std::byte* p = in;
  const auto magic = get<std::uint32_t>(p);
  const auto version = get<std::uint16_t>(p);
  const auto kind = get<std::uint16_t>(p);
  out.job_id = get<std::uint64_t>(p);
  out.src_rank = get<std::uint32_t>(p);
  out.name_bytes = get<std::uint32_t>(p);
  out.payload_bytes = get<std::uint64_t>(p);
  if (magic != kFrameMagic) return "bad magic " + hex(magic);
  if (version != kFrameVersion) {
    return "protocol version " + std::to_string(version) + ", expected " +
           std::to_string(kFrameVersion);
  }
  if (kind < static_cast<std::uint16_t>(FrameKind::kHello) ||
      kind > static_cast<std::uint16_t>(FrameKind::kAbort)) {
    return "unknown frame kind " + std::to_string(kind);
  }
  out.kind = static_cast<FrameKind>(kind);
  if (out.name_bytes > limits.max_name_bytes) {
    return "name of " + std::to_string(out.name_bytes) + " bytes exceeds the limit of " +
           std::to_string(limits.max_name_bytes);
  }
  if (out.payload_bytes > limits.max_payload_bytes) {
    return "payload of " + std::to_string(out.payload_bytes) + " bytes exceeds the limit of " +
           std::to_string(limits.max_payload_bytes);
  }
  return {};
}

void encode_hello_payload(const HelloPayload& hello, std::byte* out) {
  std::byte* p = out;
  put<std::uint32_t>(p, hello.expected_peer);
  put<std::uint32_t>(p, hello.cluster_size);
  std::memcpy(p, hello.nonce.data(), hello.nonce.size());
}

HelloPayload decode_hello_payload(const std::byte* in) {
  const std::byte* p = in;
  HelloPayload out;
  out.expected_peer = get<std::uint32_t>(p);
  out.cluster_size = get<std::uint32_t>(p);
  std::memcpy(out.nonce.data(), p, out.nonce.size());
  return out;
}

std::string_view frame_kind_name(FrameKind kind) {
  switch (kind) {
    case FrameKind::kHello:
      return "hello";
    case FrameKind::kHelloAck:
      return "hello-ack";
    case FrameKind::kData:
      return "data";
    case FrameKind::kBye:
      return "bye";
    case FrameKind::kAbort:
      return "abort";
  }
  return "?";
}

}  // namespace adaptsim::tcp
