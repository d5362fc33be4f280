#pragma once
// A live job's secret and the authentication of its frames (frame.h).
//
// The secret: 32 random bytes from the OS (getrandom(2)) made by whoever starts the job (the
// local launcher, the per-rank launcher of adaptsim-live, rank 0 under mpirun) or read from a
// secret file for a host list; it reaches the ranks through the environment, an MPI broadcast or
// the file, never the command line, and is never derived from public facts.
//
// The handshake proves both ends know it: the dialer's hello and the acceptor's reply each carry
// a random nonce and a tag, HMAC-SHA256 under the secret (truncated to 16 bytes), over the whole
// frame; the reply's tag also covers the dialer's nonce, so a recorded reply cannot be replayed
// to a new dialer. A hello without the right tag is dropped as the first frame it is.
// Each connection then has two session keys, one per direction, HMAC-SHA256(secret, direction,
// both ranks, both nonces), and every later frame carries a tag over its header, name and payload:
// the ChaCha20-Poly1305 AEAD of RFC 8439 with the frame as associated data and nothing to
// encrypt, the frame's sequence number on that connection as the nonce (never reused under one
// key: keys are per connection and direction). A frame altered, dropped, reordered or replayed
// fails its tag. This construction because it is the cheapest standard MAC per byte that
// OpenSSL offers on this machine class (1 MiB messages, one core, measured together: 6.2 GB/s,
// against 4.0 GB/s for AES-256-GMAC and 1.7 GB/s for HMAC-SHA256), and the all-reduce pays it on
// every byte sent and received (docs/reliability.md). Payloads are authenticated, not encrypted:
// gradients travel in clear.
//
// A replayed hello (an eavesdropper resending a recorded one) is answered, but its sender cannot
// derive the session keys, so its first later frame fails; meanwhile it can occupy the rank's slot
// until then — a denial of service an on-path attacker has anyway.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace adaptsim::tcp {

inline constexpr std::size_t kSecretBytes = 32;
inline constexpr std::size_t kTagBytes = 16;
inline constexpr std::size_t kNonceBytes = 16;
// Shortest secret file accepted: 128 bits if its bytes are random.
inline constexpr std::size_t kMinSecretFileBytes = 16;
// Environment variable carrying a job's secret (hex) from a launcher to its ranks.
inline constexpr const char* kEnvSecret = "ADAPTSIM_JOB_SECRET";

using ByteView = std::span<const std::byte>;
using Tag = std::array<std::byte, kTagBytes>;
using Nonce = std::array<std::byte, kNonceBytes>;
using SecretKey = std::array<std::byte, kSecretBytes>;

class JobSecret {
 public:
  JobSecret() = default;  // empty: no job can use it (ClusterSpec::validate refuses it)
  explicit JobSecret(const SecretKey& key) : key_(key) {}

  // 32 bytes from getrandom(2); throws RuntimeFailure if the OS cannot give them.
  static JobSecret random();
  // 64 hex digits; throws InputError naming `where` (the variable or file) otherwise.
  static JobSecret from_hex(std::string_view text, std::string_view where);
  // The key is SHA-256 of the file's bytes (at least kMinSecretFileBytes). The file must be a
  // regular file that neither group nor others may read; throws InputError naming the file.
  static JobSecret from_file(const std::string& path);

  bool empty() const;
  std::string hex() const;
  const SecretKey& key() const { return key_; }
  // A public name of the job, carried in every frame header so that a frame of another job is
  // told apart from a forged one in the log: the first 8 bytes of HMAC(secret, "job id").
  std::uint64_t job_id() const;

 private:
  SecretKey key_{};
};

// Random nonce from getrandom(2).
Nonce random_nonce();

// HMAC-SHA256(secret, label || parts...) truncated to kTagBytes: the handshake tags.
Tag handshake_tag(const JobSecret& secret, std::string_view label,
                  std::initializer_list<ByteView> parts);
// Constant-time comparison.
bool tags_equal(const std::byte* a, const std::byte* b);

struct SessionKeys {
  SecretKey dialer_to_acceptor{};
  SecretKey acceptor_to_dialer{};
};
SessionKeys derive_session_keys(const JobSecret& secret, std::uint32_t dialer_rank,
                                std::uint32_t acceptor_rank, const Nonce& dialer_nonce,
                                const Nonce& acceptor_nonce);

// The frame tag: the ChaCha20-Poly1305 tag (RFC 8439) of an empty plaintext with the
// concatenation of `parts` as associated data and the 96-bit nonce = seq (little-endian), under
// `key`. Thread-safe (each thread keeps its own OpenSSL context): TagWorkers compute it off the
// event-loop thread.
Tag frame_tag(const SecretKey& key, std::uint64_t seq, std::span<const ByteView> parts);

// frame_tag computed piecewise, for a frame whose bytes arrive over time (TagWorkers checks a
// received payload while it is still being read): absorb() the bytes of the parts in order, split
// anywhere, then finish() gives frame_tag of their concatenation. Poly1305 buffers a partial
// block between updates and pads the associated data only at the end, so the split points do not
// change the tag (auth_test checks random ones). Its own OpenSSL context, so it may move between
// threads, but one thread at a time; throws RuntimeFailure if OpenSSL fails.
class FrameTagStream {
 public:
  FrameTagStream(const SecretKey& key, std::uint64_t seq);
  ~FrameTagStream();
  FrameTagStream(const FrameTagStream&) = delete;
  FrameTagStream& operator=(const FrameTagStream&) = delete;

  void absorb(ByteView bytes);
  Tag finish();  // once

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// The frame MAC of one direction of a connection: frame_tag under its key, on a context keyed
// once. Move-only; the key is set once. Not thread-safe (one per connection and direction, used
// on the loop thread); key() is what TagWorkers' jobs carry.
class FrameMac {
 public:
  FrameMac();
  explicit FrameMac(const SecretKey& key);
  ~FrameMac();
  FrameMac(FrameMac&&) noexcept;
  FrameMac& operator=(FrameMac&&) noexcept;

  bool keyed() const { return ctx_ != nullptr; }
  const SecretKey& key() const { return key_; }
  Tag tag(std::uint64_t seq, std::initializer_list<ByteView> parts);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
  SecretKey key_{};
};

}  // namespace adaptsim::tcp
