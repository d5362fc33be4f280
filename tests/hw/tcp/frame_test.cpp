// The wire format validates every header before anything it announces is read; addresses, host
// lists and tokens parse or fail with a message naming the input.

#include <doctest/doctest.h>

#include <array>

#include "hw/tcp/cluster_spec.h"
#include "hw/tcp/frame.h"
#include "sim/core/error.h"

using namespace adaptsim;
using namespace adaptsim::tcp;

namespace {

std::array<std::byte, kFrameHeaderBytes> encoded(const FrameHeader& h) {
  std::array<std::byte, kFrameHeaderBytes> buf{};
  encode_frame_header(h, buf.data());
  return buf;
}

}  // namespace

TEST_CASE("a frame header round-trips through its little-endian encoding") {
  FrameHeader h;
  h.kind = FrameKind::kData;
  h.job_id = 0x0123456789abcdefull;
  h.src_rank = 7;
  h.name_bytes = 21;
  h.payload_bytes = (std::uint64_t{1} << 32) + 5;
  auto buf = encoded(h);
  // Magic "ADTS" comes first on the wire, byte by byte.
  CHECK(buf[0] == std::byte{'A'});
  CHECK(buf[3] == std::byte{'S'});
  FrameLimits limits;
  limits.max_payload_bytes = std::uint64_t{1} << 40;
  FrameHeader out;
  CHECK(decode_frame_header(buf.data(), limits, out).empty());
  CHECK(out.kind == FrameKind::kData);
  CHECK(out.job_id == h.job_id);
  CHECK(out.src_rank == 7);
  CHECK(out.name_bytes == 21);
  CHECK(out.payload_bytes == h.payload_bytes);
}

TEST_CASE(
    "garbage, future versions, unknown kinds and oversized frames are rejected with a reason") {
  FrameLimits limits;
  limits.max_name_bytes = 4096;
  limits.max_payload_bytes = 1 << 20;
  FrameHeader out;

  std::array<std::byte, kFrameHeaderBytes> garbage{};
  garbage.fill(std::byte{0x47});
  CHECK(decode_frame_header(garbage.data(), limits, out).find("bad magic") == 0);

  FrameHeader h;
  auto buf = encoded(h);
  buf[4] = std::byte{3};  // version 3
  CHECK(decode_frame_header(buf.data(), limits, out).find("protocol version 3, expected 2") == 0);
  buf[4] = std::byte{1};  // version 1: unauthenticated frames, refused
  CHECK(decode_frame_header(buf.data(), limits, out).find("protocol version 1") == 0);

  buf = encoded(h);
  buf[6] = std::byte{99};  // kind 99
  CHECK(decode_frame_header(buf.data(), limits, out).find("unknown frame kind 99") == 0);

  h.name_bytes = 4097;
  CHECK(decode_frame_header(encoded(h).data(), limits, out).find("name of 4097 bytes") == 0);
  h.name_bytes = 4096;  // the limit itself is fine
  CHECK(decode_frame_header(encoded(h).data(), limits, out).empty());

  h.payload_bytes = (1 << 20) + 1;
  CHECK(decode_frame_header(encoded(h).data(), limits, out).find("payload of 1048577 bytes") == 0);
}

TEST_CASE("addresses and host lists parse, and bad ones name the offending text") {
  CHECK(parse_socket_address("127.0.0.1:7000") == SocketAddress{"127.0.0.1", 7000});
  CHECK(parse_socket_address("[::1]:80") == SocketAddress{"::1", 80});
  CHECK(parse_socket_address("[::1]:80").str() == "[::1]:80");
  CHECK(parse_socket_address("node-3:0", /*allow_port_zero=*/true).port == 0);
  CHECK_THROWS_WITH_AS(parse_socket_address("127.0.0.1"), doctest::Contains("127.0.0.1"),
                       InputError);
  CHECK_THROWS_AS(parse_socket_address("h:70000"), InputError);
  CHECK_THROWS_AS(parse_socket_address("h:0"), InputError);
  CHECK_THROWS_AS(parse_socket_address("::1:80"), InputError);

  const auto hosts = parse_host_list("127.0.0.1:7000,127.0.0.1:7001,10.0.0.2:7000");
  REQUIRE(hosts.size() == 3);
  CHECK(hosts[2] == SocketAddress{"10.0.0.2", 7000});
  // Ranks on the same address host share a host id, numbered by first appearance.
  CHECK(hosts_from_addresses(hosts) == std::vector<int>{0, 0, 1});
  CHECK(hosts_by_block(5, 2) == std::vector<int>{0, 0, 1, 1, 2});
  CHECK_THROWS_WITH_AS(parse_host_list("a:1,,b:2"), doctest::Contains("empty entry"), InputError);
  CHECK_THROWS_WITH_AS(parse_host_list("a:1,a:1"), doctest::Contains("appears twice"), InputError);
}

TEST_CASE("the handshake payload carries the expected peer, the cluster size and the nonce") {
  HelloPayload in{3, 8, random_nonce()};
  std::array<std::byte, kHelloPayloadBytes> buf{};
  encode_hello_payload(in, buf.data());
  const HelloPayload out = decode_hello_payload(buf.data());
  CHECK(out.expected_peer == 3);
  CHECK(out.cluster_size == 8);
  CHECK(out.nonce == in.nonce);
}

TEST_CASE(
    "a cluster spec rejects a rank outside it, a host map of the wrong length and no secret") {
  ClusterSpec c;
  c.addresses = parse_host_list("127.0.0.1:1,127.0.0.1:2");
  c.rank = 2;
  c.secret = JobSecret::random();
  CHECK_THROWS_AS(c.validate(), InputError);
  c.rank = 1;
  CHECK_NOTHROW(c.validate());
  c.secret = JobSecret();
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("no job secret"), InputError);
  c.secret = JobSecret::random();
  c.host_of_rank = {0};
  CHECK_THROWS_AS(c.validate(), InputError);
}
