#pragma once
// Text helpers shared by the readers of every layer: quantities (units.h), YAML profiles, CSV
// files, nccl-tests output, /proc files.

#include <cstddef>
#include <string_view>

namespace adaptsim {

// `text` without leading and trailing ASCII whitespace: space, \t, \n, \v, \f and \r (isspace in
// the C locale, independent of the process locale), so a value from a CRLF file or with a
// trailing newline reads as written. A view into `text`: keep `text` alive while it is used.
std::string_view trim(std::string_view text);

// The offset of the first byte of `text` that is not part of well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or npos. Readers of text that ends up
// in YAML (io::parse_yaml, the nccl-tests import's host names) refuse the rest.
std::size_t invalid_utf8_at(std::string_view text);

}  // namespace adaptsim
