#include "sim/core/strings.h"

namespace adaptsim {
namespace {

// Not std::isspace: that one depends on the process locale and is undefined for negative chars.
constexpr bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && is_space(text.back()))
    text.remove_suffix(1);
  return text;
}

}  // namespace adaptsim
