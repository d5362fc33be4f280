#pragma once
// Reading a reader's YAML in a test: the text as a document named `label`, its top-level mapping
// handed to `read`, then every key checked as read (an unknown one throws as it would in a file).

#include <string>

#include "sim/io/yaml_reader.h"

namespace adaptsim::testing {

template <typename Read>
auto read_yaml(const std::string& yaml, Read read, const std::string& label = "s.yaml") {
  const io::Document doc = io::Document::parse_string(yaml, label);
  io::MapReader r(doc, doc.root(), "");
  auto out = read(r);
  r.finish();
  return out;
}

}  // namespace adaptsim::testing
