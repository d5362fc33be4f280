#pragma once
// Validating access to YAML documents, so every error a user can make in a scenario, topology or
// profile file is one line naming the file, the line, the key and what was expected:
//
//   scenarios/x.yaml:12: key 'topology.nic.bandwidth': expected a bandwidth with a unit such as
//   10Gbps or 25GB/s, got the bare number "10"
//
// Values can also come from command-line overrides (--set key=value) or sweep assignments; errors
// in those name the override instead of a line. MapReader tracks the keys it has read, and
// finish() rejects any other key with a "did you mean" suggestion, so a typo never silently
// falls back to a default.
//
// A quantity may be written as a scalar ("10Gbps") or as {value: 10Gbps, source: "..."}; the
// source is kept for the run manifest. A bad value in the second form is reported at its 'value'
// key. Files in which every number must carry its source (device profiles) read them with
// sourced_quantity(), which accepts only the second form.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/time.h"

namespace adaptsim::io {

// Parses one YAML document strictly, so that nothing in the text is silently dropped: invalid
// YAML, a second document (after "---"), a key given twice in one mapping (yaml-cpp keeps the
// first and ignores the rest), and anchors and aliases that expand to far more values than the
// text holds (a "billion laughs" file) are InputErrors at "label:line". An empty text is a null
// node.
YAML::Node parse_yaml(const std::string& text, const std::string& label);

// A parsed YAML file plus the provenance of values that were substituted into it.
class Document {
 public:
  // Throws InputError: unreadable file, empty file, invalid YAML, top level not a mapping.
  static Document load_file(const std::filesystem::path& path);
  static Document parse_string(const std::string& text, const std::string& label);

  const std::string& label() const { return label_; }  // the file path as given
  const std::filesystem::path& path() const { return path_; }
  const std::string& text() const { return text_; }  // the file's bytes as read
  YAML::Node root() const { return root_; }
  // A deep copy of the file as loaded, with the same set() overrides applied again (so their
  // origins stay known): each sweep point starts from one.
  Document clone() const;
  // As clone(), from the text with the top-level `key`'s lines blanked (so every other line keeps
  // its number) where that is possible (a block mapping at the top): a scenario's sweep points
  // then do not parse the sweep's value lists again, each of them. Else a plain clone.
  Document clone_without(std::string_view key) const;

  // Sets the value at a dotted key ("topology.params.servers") from YAML text ("16", "[1, 2]",
  // "10Gbps"), creating intermediate maps. A map key may itself contain dots: the longest key
  // that matches the rest of the path wins. `origin` labels the value in error messages
  // ("--set topology.params.servers=16"). "null" or "~" is YAML's null, as in a file (a
  // parameter left unset: `--set topology.params.nic_queue=null`); empty text is the empty
  // string.
  void set(std::string_view dotted_key, const std::string& yaml_text, const std::string& origin);
  // Declares a top-level mapping whose keys are themselves dotted paths (a scenario's `sweep:`
  // maps "topology.params.servers" to its values): set("sweep.a.b", ...) then sets the key "a.b"
  // of that mapping, whether or not it is there yet. Kept by clone().
  void set_path_keyed(std::string top_level_key) { path_keyed_.insert(std::move(top_level_key)); }
  // "file:line" for a node from the file, or the override's label.
  std::string where(const YAML::Node& node) const;

 private:
  std::string label_;
  std::filesystem::path path_;
  std::string text_;  // the file's text: clones re-parse it, since YAML::Clone drops line marks
  YAML::Node root_;
  struct Override {
    std::string key, text, origin;
  };
  std::vector<Override> overrides_;
  std::set<std::string, std::less<>> path_keyed_;
  std::vector<std::pair<YAML::Node, std::string>> origins_;
};

struct SourcedQuantity {
  std::string key;     // dotted path
  std::string text;    // as written
  std::string source;  // empty if none was given
};

// A value read by MapReader::sourced_quantity and the source given with it.
template <class T>
struct WithSource {
  T value{};
  std::string source;  // non-empty
};

// Named values that a document refers to as "${name}" (topology parameters). A reference must be
// a whole scalar; errors about a substituted value point at where the value was given.
struct Param {
  YAML::Node value;
  std::string where;
  // The document the value belongs to, when it is not the one that refers to it (a scenario's
  // topology.params): errors inside a mapping or list value are then located in that document.
  const Document* document = nullptr;
};
using Params = std::map<std::string, Param, std::less<>>;

class MapReader {
 public:
  // `what` names the mapping for messages ("the scenario", "key 'topology'").
  MapReader(const Document& doc, YAML::Node node, std::string path);

  const Document& document() const { return *doc_; }
  const std::string& path() const { return path_; }
  YAML::Node node() const { return node_; }
  bool has(std::string_view key) const;

  // Required values. Each throws InputError if missing or of the wrong type.
  std::string string(std::string_view key);
  std::int64_t integer(std::string_view key, std::int64_t min = INT64_MIN,
                       std::int64_t max = INT64_MAX);
  double number(std::string_view key);
  bool boolean(std::string_view key);
  double bandwidth_Bps(std::string_view key);
  TimeNs duration_ns(std::string_view key);
  std::uint64_t size_bytes(std::string_view key);
  double percent(std::string_view key);  // "2%" -> 0.02 (parse_percent)
  MapReader map(std::string_view key);
  // A sequence; each element is returned as a node for the caller to read (see item_*).
  std::vector<YAML::Node> list(std::string_view key);
  std::vector<std::string> string_list(std::string_view key);
  std::vector<std::int64_t> integer_list(std::string_view key);

  // Optional variants: the default when the key is absent (a present key of the wrong type is
  // still an error).
  std::string string_or(std::string_view key, std::string fallback);
  std::int64_t integer_or(std::string_view key, std::int64_t fallback, std::int64_t min = INT64_MIN,
                          std::int64_t max = INT64_MAX);
  double number_or(std::string_view key, double fallback);
  bool boolean_or(std::string_view key, bool fallback);
  double bandwidth_Bps_or(std::string_view key, double fallback);
  TimeNs duration_ns_or(std::string_view key, TimeNs fallback);
  std::uint64_t size_bytes_or(std::string_view key, std::uint64_t fallback);
  double percent_or(std::string_view key, double fallback);
  std::optional<MapReader> optional_map(std::string_view key);

  // A quantity converted by `parse` (text -> value; throws InputError saying what it expected,
  // as the parsers of sim/core/units.h do), its errors located like the built-in ones. For units
  // this reader has no function for ("367 img/s") and for checks that belong to the value.
  template <class Parse>
  auto quantity(std::string_view key, Parse parse) {
    decltype(parse(std::string())) value{};
    const auto store = [&](const std::string& text) { value = parse(text); };
    read_quantity(key, store, false);
    return value;
  }
  // The same, written only as {value: ..., source: "..."} with a non-empty source; a bare value
  // or a missing source is an error ("every number needs its unit and its source").
  template <class Parse>
  auto sourced_quantity(std::string_view key, Parse parse) {
    WithSource<decltype(parse(std::string()))> out;
    const auto store = [&](const std::string& text) { out.value = parse(text); };
    out.source = read_quantity(key, store, true);
    return out;
  }

  // One of a fixed set of words.
  std::string choice(std::string_view key, const std::vector<std::string>& allowed);
  std::string choice_or(std::string_view key, const std::vector<std::string>& allowed,
                        std::string fallback);

  // Marks a key as known without reading it (read elsewhere).
  void accept(std::string_view key);
  // Rejects keys never read or accepted.
  void finish();

  // Throws InputError located at `key` (or at this map if the key is absent).
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;
  [[noreturn]] void fail_here(const std::string& message) const;
  std::string key_path(std::string_view key) const;

  // Resolve "${name}" values against `params` (inherited by child readers).
  void set_params(std::shared_ptr<const Params> params) { params_ = std::move(params); }

  // Quantities read through this reader and its children, with their sources.
  const std::vector<SourcedQuantity>& quantities() const { return *quantities_; }

  // Item readers for list elements: `index` is used in the key path ("links[2]").
  static MapReader item_map(const MapReader& parent, std::string_view key, std::size_t index,
                            const YAML::Node& item);

 private:
  YAML::Node required(std::string_view key);
  YAML::Node scalar(std::string_view key, std::string_view expected);
  // Reads the quantity at `key` (scalar, or map {value, source}; only the map when
  // `source_required`), records it in quantities(), and hands its text to `parse`, whose
  // InputError is rethrown located at the value. Returns the source ("" when none was given).
  std::string read_quantity(std::string_view key,
                            const std::function<void(const std::string&)>& parse,
                            bool source_required);

  // The value at `key` after "${name}" substitution (undefined node if absent).
  YAML::Node lookup(std::string_view key);
  // A reader of `node`, a value at `key` of this map (in the parameter's document if `key` was
  // substituted).
  MapReader child(YAML::Node node, std::string path, std::string_view key) const;

  const Document* doc_;
  YAML::Node node_;
  std::string path_;
  std::set<std::string, std::less<>> used_;
  std::shared_ptr<const Params> params_;
  // Keys whose value came from a parameter (the parameter lives in params_).
  std::map<std::string, const Param*, std::less<>> substituted_;
  std::shared_ptr<std::vector<SourcedQuantity>> quantities_;
};

// Edit distance for "did you mean" suggestions: insertions, deletions, substitutions and
// transpositions of two adjacent characters ("memroy" -> "memory") count one edit each (the
// optimal string alignment distance).
std::size_t edit_distance(std::string_view a, std::string_view b);
// The closest candidate within a small distance, or empty.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace adaptsim::io
