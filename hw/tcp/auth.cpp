#include "hw/tcp/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "sim/core/error.h"

namespace adaptsim::tcp {
namespace {

void fill_random(std::byte* out, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::getrandom(out + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw RuntimeFailure(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(r);
  }
}

std::array<std::byte, 32> hmac_sha256(const SecretKey& key, std::string_view label,
                                      std::initializer_list<ByteView> parts) {
  std::vector<unsigned char> msg(label.begin(), label.end());
  for (ByteView p : parts) {
    const auto* b = reinterpret_cast<const unsigned char*>(p.data());
    msg.insert(msg.end(), b, b + p.size());
  }
  std::array<std::byte, 32> out{};
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), msg.data(), msg.size(),
           reinterpret_cast<unsigned char*>(out.data()), &len) == nullptr ||
      len != out.size()) {
    throw RuntimeFailure("HMAC-SHA256 failed (OpenSSL)");
  }
  return out;
}

ByteView bytes_of(const void* p, std::size_t n) {
  return {static_cast<const std::byte*>(p), n};
}

template <typename T>
ByteView le_bytes(const T& v, std::array<std::byte, sizeof(T)>& buf) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    buf[i] = static_cast<std::byte>(static_cast<std::uint64_t>(v) >> (8 * i));
  return {buf.data(), buf.size()};
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

JobSecret JobSecret::random() {
  SecretKey k{};
  fill_random(k.data(), k.size());
  return JobSecret(k);
}

JobSecret JobSecret::from_hex(std::string_view text, std::string_view where) {
  SecretKey k{};
  bool ok = text.size() == 2 * k.size();
  for (std::size_t i = 0; ok && i < k.size(); ++i) {
    const int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
    ok = hi >= 0 && lo >= 0;
    if (ok) k[i] = static_cast<std::byte>(hi * 16 + lo);
  }
  if (!ok) {
    throw InputError(std::string(where) + ": expected a job secret of " +
                     std::to_string(2 * k.size()) + " hex digits, got " +
                     std::to_string(text.size()) + " characters");
  }
  JobSecret s(k);
  if (s.empty()) throw InputError(std::string(where) + ": the job secret is all zeros");
  return s;
}

JobSecret JobSecret::from_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw InputError(path + ": cannot read the secret file: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) throw InputError(path + ": the secret file is not a regular file");
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw InputError(path + ": the secret file may be read by group or others (mode " + mode +
                     "); chmod 600 " + path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the secret file");
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (content.size() < kMinSecretFileBytes) {
    throw InputError(path + ": the secret file has " + std::to_string(content.size()) +
                     " bytes, at least " + std::to_string(kMinSecretFileBytes) +
                     " are needed (e.g. head -c 32 /dev/urandom)");
  }
  SecretKey k{};
  unsigned int len = 0;
  if (EVP_Digest(content.data(), content.size(), reinterpret_cast<unsigned char*>(k.data()), &len,
                 EVP_sha256(), nullptr) != 1 ||
      len != k.size()) {
    throw RuntimeFailure("SHA-256 failed (OpenSSL)");
  }
  return JobSecret(k);
}

bool JobSecret::empty() const {
  for (std::byte b : key_) {
    if (b != std::byte{0}) return false;
  }
  return true;
}

std::string JobSecret::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * key_.size());
  for (std::byte b : key_) {
    const auto v = std::to_integer<unsigned>(b);
    out += kDigits[v >> 4];
    out += kDigits[v & 15];
  }
  return out;
}

std::uint64_t JobSecret::job_id() const {
  const auto h = hmac_sha256(key_, "adaptsim job id", {});
  std::uint64_t id = 0;
  for (int i = 0; i < 8; ++i)
    id |= static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(h[i])) << (8 * i);
  return id;
}

Nonce random_nonce() {
  Nonce n{};
  fill_random(n.data(), n.size());
  return n;
}

Tag handshake_tag(const JobSecret& secret, std::string_view label,
                  std::initializer_list<ByteView> parts) {
  const auto h = hmac_sha256(secret.key(), label, parts);
  Tag t{};
  std::memcpy(t.data(), h.data(), t.size());
  return t;
}

bool tags_equal(const std::byte* a, const std::byte* b) {
  return CRYPTO_memcmp(a, b, kTagBytes) == 0;
}

SessionKeys derive_session_keys(const JobSecret& secret, std::uint32_t dialer_rank,
                                std::uint32_t acceptor_rank, const Nonce& dialer_nonce,
                                const Nonce& acceptor_nonce) {
  std::array<std::byte, 4> d{}, a{};
  const ByteView context[] = {le_bytes(dialer_rank, d), le_bytes(acceptor_rank, a),
                              bytes_of(dialer_nonce.data(), dialer_nonce.size()),
                              bytes_of(acceptor_nonce.data(), acceptor_nonce.size())};
  SessionKeys keys;
  keys.dialer_to_acceptor = hmac_sha256(secret.key(), "adaptsim-tcp session dialer->acceptor",
                                        {context[0], context[1], context[2], context[3]});
  keys.acceptor_to_dialer = hmac_sha256(secret.key(), "adaptsim-tcp session acceptor->dialer",
                                        {context[0], context[1], context[2], context[3]});
  return keys;
}

namespace {

// A ChaCha20-Poly1305 encryption context with the nonce length set; keyed when `key` is given.
EVP_CIPHER_CTX* new_aead_ctx(const SecretKey* key) {
  EVP_CIPHER_CTX* e = EVP_CIPHER_CTX_new();
  if (e == nullptr ||
      EVP_EncryptInit_ex(e, EVP_chacha20_poly1305(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(e, EVP_CTRL_AEAD_SET_IVLEN, 12, nullptr) != 1 ||
      (key != nullptr &&
       EVP_EncryptInit_ex(e, nullptr, nullptr, reinterpret_cast<const unsigned char*>(key->data()),
                          nullptr) != 1)) {
    EVP_CIPHER_CTX_free(e);
    throw RuntimeFailure("ChaCha20-Poly1305 setup failed (OpenSSL)");
  }
  return e;
}

// Starts the tag of nonce `seq` on `e` (keyed already, or keyed here with `key`).
bool aead_start(EVP_CIPHER_CTX* e, const SecretKey* key, std::uint64_t seq) {
  std::array<unsigned char, 12> iv{};
  for (int i = 0; i < 8; ++i)
    iv[static_cast<std::size_t>(i)] = static_cast<unsigned char>(seq >> (8 * i));
  return EVP_EncryptInit_ex(
             e, nullptr, nullptr,
             key != nullptr ? reinterpret_cast<const unsigned char*>(key->data()) : nullptr,
             iv.data()) == 1;
}

// `p` as additional authenticated data (nothing is encrypted); EVP takes int lengths.
bool aead_absorb(EVP_CIPHER_CTX* e, ByteView p) {
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  bool ok = true;
  for (std::size_t off = 0; ok && off < p.size(); off += kPiece) {
    int outl = 0;
    const std::size_t n = std::min(kPiece, p.size() - off);
    ok =
        EVP_EncryptUpdate(e, nullptr, &outl, reinterpret_cast<const unsigned char*>(p.data() + off),
                          static_cast<int>(n)) == 1;
  }
  return ok;
}

bool aead_finish(EVP_CIPHER_CTX* e, Tag& t) {
  unsigned char none[16];
  int outl = 0;
  return EVP_EncryptFinal_ex(e, none, &outl) == 1 &&
         EVP_CIPHER_CTX_ctrl(e, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(t.size()), t.data()) == 1;
}

// The tag of `parts` under the nonce `seq`, on `e` (keyed already, or keyed here with `key`).
Tag aead_tag(EVP_CIPHER_CTX* e, const SecretKey* key, std::uint64_t seq,
             std::span<const ByteView> parts) {
  bool ok = aead_start(e, key, seq);
  for (ByteView p : parts)
    ok = ok && aead_absorb(e, p);
  Tag t{};
  if (!ok || !aead_finish(e, t)) throw RuntimeFailure("ChaCha20-Poly1305 failed (OpenSSL)");
  return t;
}

}  // namespace

// Owns one EVP context (frame_tag's per thread, FrameTagStream's, FrameMac's). Outside the
// anonymous namespace: FrameTagStream::Ctx and FrameMac::Ctx, declared in auth.h, derive from it.
namespace auth_detail {
struct AeadCtx {
  EVP_CIPHER_CTX* evp = nullptr;
  ~AeadCtx() { EVP_CIPHER_CTX_free(evp); }
};
}  // namespace auth_detail
using auth_detail::AeadCtx;

Tag frame_tag(const SecretKey& key, std::uint64_t seq, std::span<const ByteView> parts) {
  thread_local AeadCtx ctx{new_aead_ctx(nullptr)};
  return aead_tag(ctx.evp, &key, seq, parts);
}

struct FrameTagStream::Ctx : AeadCtx {};

FrameTagStream::FrameTagStream(const SecretKey& key, std::uint64_t seq)
    : ctx_(std::make_unique<Ctx>()) {
  ctx_->evp = new_aead_ctx(nullptr);
  if (!aead_start(ctx_->evp, &key, seq)) throw RuntimeFailure("ChaCha20-Poly1305 failed (OpenSSL)");
}

FrameTagStream::~FrameTagStream() = default;

void FrameTagStream::absorb(ByteView bytes) {
  if (!aead_absorb(ctx_->evp, bytes)) throw RuntimeFailure("ChaCha20-Poly1305 failed (OpenSSL)");
}

Tag FrameTagStream::finish() {
  Tag t{};
  if (!aead_finish(ctx_->evp, t)) throw RuntimeFailure("ChaCha20-Poly1305 failed (OpenSSL)");
  return t;
}

struct FrameMac::Ctx : AeadCtx {};

FrameMac::FrameMac() = default;
FrameMac::~FrameMac() = default;
FrameMac::FrameMac(FrameMac&&) noexcept = default;
FrameMac& FrameMac::operator=(FrameMac&&) noexcept = default;

FrameMac::FrameMac(const SecretKey& key) : ctx_(std::make_unique<Ctx>()), key_(key) {
  ctx_->evp = new_aead_ctx(&key);
}

Tag FrameMac::tag(std::uint64_t seq, std::initializer_list<ByteView> parts) {
  if (!ctx_) throw std::logic_error("FrameMac::tag without a key");
  return aead_tag(ctx_->evp, nullptr, seq, {parts.begin(), parts.size()});
}

}  // namespace adaptsim::tcp
