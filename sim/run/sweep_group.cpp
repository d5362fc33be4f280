#include "sim/run/sweep_group.h"

#include <unistd.h>

#include <exception>
#include <stdexcept>

#include "sim/core/error.h"

namespace adaptsim::run {
namespace {
// The first byte of an encoded failure: the exception type to throw again (exit code 2 or 1).
constexpr char kInputError = 'I';
constexpr char kRuntimeFailure = 'R';

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown host";
  return std::string("host ") + name;
}
}  // namespace

void put_count(std::string& out, std::uint64_t n) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
}

void put_field(std::string& out, std::string_view field) {
  put_count(out, field.size());
  out.append(field);
}

std::uint64_t take_count(std::string_view& in) {
  if (in.size() < 8) throw std::runtime_error("sweep group: a truncated message (count)");
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  in.remove_prefix(8);
  return n;
}

std::string take_field(std::string_view& in) {
  const std::uint64_t n = take_count(in);
  if (in.size() < n) throw std::runtime_error("sweep group: a truncated message (field)");
  std::string field(in.substr(0, n));
  in.remove_prefix(n);
  return field;
}

std::string encode_current_failure() {
  try {
    throw;
  } catch (const InputError& e) {
    return kInputError + std::string(e.what());
  } catch (const std::exception& e) {
    return kRuntimeFailure + std::string(e.what());
  } catch (...) {
    return kRuntimeFailure + std::string("unknown error");
  }
}

void throw_failure(const std::string& encoded) {
  const std::string message = encoded.empty() ? "unknown error" : encoded.substr(1);
  if (!encoded.empty() && encoded.front() == kInputError) throw InputError(message);
  throw RuntimeFailure(message);
}

void SweepGroup::agree(const std::function<void()>& step) {
  std::string failure;
  try {
    step();
  } catch (...) {
    failure = encode_current_failure();
    // Chosen only when rank 0 did not fail: an error of this rank alone (a file missing on its
    // host) names where it happened.
    if (rank() != 0)
      failure.insert(1, "rank " + std::to_string(rank()) + " (" + host_name() + "): ");
  }
  const std::vector<std::string> all = gather(failure);
  std::string verdict;
  for (const std::string& f : all) {
    if (f.empty()) continue;
    verdict = f;
    break;
  }
  verdict = broadcast(verdict);
  if (!verdict.empty()) throw_failure(verdict);
}

}  // namespace adaptsim::run
