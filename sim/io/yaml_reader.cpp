#include "sim/io/yaml_reader.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include <yaml-cpp/eventhandler.h>

#include "sim/core/error.h"
#include "sim/core/strings.h"
#include "sim/core/units.h"
#include "sim/io/input_file.h"

namespace adaptsim::io {
namespace {

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined()) return "nothing";
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing (null)";
    case YAML::NodeType::Scalar:
      // A long value is cut: the message stays a readable line.
      if (n.Scalar().size() > 80) {
        return "\"" + n.Scalar().substr(0, 60) + "...\" (" + std::to_string(n.Scalar().size()) +
               " characters)";
      }
      return "\"" + n.Scalar() + "\"";
    default:
      return "nothing";
  }
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) {
    if (!s.empty()) s += ", ";
    s += x;
  }
  return s;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Rows i - 2, i - 1 and i of the dynamic programme (Damerau's transposition needs i - 2).
  std::vector<std::size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], before[j - 2] + 1);
      }
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Strict parsing

namespace {

std::string line_of(const YAML::Mark& mark) {
  return mark.line >= 0 ? std::to_string(mark.line + 1) : std::string("?");
}

// Walks every value once per path it is reachable by, rejecting repeated keys; `budget` bounds
// the walk (aliases let a short text name exponentially many values).
class UniqueKeyCheck {
 public:
  UniqueKeyCheck(const std::string& label, std::size_t budget) : label_(label), budget_(budget) {}

  void walk(const YAML::Node& node, const std::string& path) {
    if (budget_ == 0) {
      throw InputError(label_ + ":" + line_of(node.Mark()) +
                       ": anchors and aliases expand to more values than the file could hold "
                       "written out; write the values out (or reuse fewer)");
    }
    --budget_;
    if (node.IsMap()) {
      std::unordered_map<std::string, int> lines;  // key -> its 0-based line
      for (auto it = node.begin(); it != node.end(); ++it) {
        const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
        const std::string child = path.empty() ? key : path + "." + key;
        if (it->first.IsScalar()) {
          const auto [first, inserted] = lines.emplace(key, it->first.Mark().line);
          if (!inserted) {
            throw InputError(label_ + ":" + line_of(it->first.Mark()) + ": key '" + child +
                             "' is given twice in one mapping (first at line " +
                             std::to_string(first->second + 1) +
                             "); expected each key once (YAML would keep only the first)");
          }
        }
        walk(it->second, child);
      }
    } else if (node.IsSequence()) {
      std::size_t i = 0;
      for (auto it = node.begin(); it != node.end(); ++it, ++i)
        walk(*it, path + "[" + std::to_string(i) + "]");
    }
  }

 private:
  const std::string& label_;
  std::size_t budget_;
};

// Written out, a document has at most about one value per character.
void check_unique_keys(const YAML::Node& root, const std::string& label, std::size_t text_size,
                       const std::string& path) {
  UniqueKeyCheck(label, 2 * text_size + 16).walk(root, path);
}

// Where each document of a YAML stream starts, up to the second: parse events only, no nodes.
// yaml-cpp 0.7's LoadAll never returns on a ',' at a document's top level (",", "- a\n,", "--- ,"):
// the parser cannot consume the token, so it starts an empty document at it, again and again,
// building nodes until memory runs out. Stopping at the second document ends that loop.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;

  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

YAML::Node parse_yaml(const std::string& text, const std::string& label) {
  // YAML is Unicode text; other bytes would pass through into names, CSVs and manifests.
  if (const std::size_t at = invalid_utf8_at(text); at != std::string_view::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
    throw InputError(label + ":" + std::to_string(line) +
                     ": expected UTF-8 text, found a byte that is not (offset " +
                     std::to_string(at) + ")");
  }
  DocumentStarts starts;
  YAML::Node first;
  try {
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    while (starts.marks.size() < 2 && parser.HandleNextDocument(starts)) {
    }
    if (starts.marks.size() < 2) first = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(label + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (starts.marks.size() > 1) {
    const YAML::Mark& second = starts.marks[1];
    if (second.pos >= 0 && static_cast<std::size_t>(second.pos) < text.size() &&
        text[static_cast<std::size_t>(second.pos)] == ',') {
      throw InputError(
          label + ":" + line_of(second) +
          ": not valid YAML: a ',' outside a flow collection ([a, b] or {a: 1, b: 2})");
    }
    // The line of the second document's "---" (or "..."), which yaml-cpp does not mark.
    std::size_t markers = 0, line = 0, at = 0;
    bool content = false;  // a document before the marker (a leading "---" opens the first)
    for (std::size_t n = 1; at <= text.size(); ++n) {
      const std::size_t end = std::min(text.find('\n', at), text.size());
      const std::string_view l(text.data() + at, end - at);
      if (l.rfind("---", 0) == 0 || l.rfind("...", 0) == 0) {
        if (content && ++markers == 1) {
          line = n;
          break;
        }
      } else if (l.find_first_not_of(" \t\r") != std::string_view::npos && l[0] != '#') {
        content = true;
      }
      at = end + 1;
    }
    throw InputError(label + ":" + (line ? std::to_string(line) : line_of(second)) +
                     ": a second YAML document; expected one document per file");
  }
  if (starts.marks.empty()) return YAML::Node();
  check_unique_keys(first, label, text.size(), "");
  return first;
}

// ---------------------------------------------------------------------------------------------
// Document

Document Document::parse_string(const std::string& text, const std::string& label) {
  Document d;
  d.label_ = label;
  d.path_ = label;
  bool blank = true;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::string_view content = trim(line);
    if (!content.empty() && content.front() != '#') {
      blank = false;
      break;
    }
  }
  if (blank) throw InputError(label + ": empty file (expected a YAML mapping of keys)");
  if (text.find('\0') != std::string::npos) {
    throw InputError(label + ": not a YAML file (it contains binary data)");
  }
  d.root_ = parse_yaml(text, label);
  if (!d.root_.IsMap()) {
    throw InputError(label + ":" + std::to_string(d.root_.Mark().line + 1) +
                     ": expected a YAML mapping of keys at the top level, got " +
                     describe(d.root_));
  }
  d.text_ = text;
  return d;
}

Document Document::load_file(const std::filesystem::path& path) {
  Document d = parse_string(read_input_file(path), path.string());
  d.path_ = path;
  return d;
}

Document Document::clone() const {
  Document d;
  d.label_ = label_;
  d.path_ = path_;
  d.text_ = text_;
  d.root_ = YAML::Load(text_);
  d.path_keyed_ = path_keyed_;
  for (const Override& o : overrides_)
    d.set(o.key, o.text, o.origin);
  return d;
}

Document Document::clone_without(std::string_view key) const {
  // The lines from `key`'s own to the next top-level key's (or the end), in document order.
  int first = -1, next = -1;
  bool shares_line = false;  // another key on the key's line: a flow mapping, nothing to drop
  std::vector<int> lines;
  for (auto it = root_.begin(); it != root_.end(); ++it)
    lines.push_back(it->first.Mark().line);
  std::size_t i = 0;
  for (auto it = root_.begin(); it != root_.end(); ++it, ++i) {
    if (!(it->first.IsScalar() && it->first.Scalar() == key)) continue;
    first = lines[i];
    if (i + 1 < lines.size()) next = lines[i + 1];
    for (std::size_t k = 0; k < lines.size(); ++k)
      shares_line = shares_line || (k != i && lines[k] == first);
  }
  if (first < 0 || shares_line) return clone();
  Document d = *this;
  d.overrides_.clear();
  d.origins_.clear();
  std::string text;
  text.reserve(text_.size());
  int line = 0;
  for (std::size_t at = 0; at < text_.size();) {
    const std::size_t end = std::min(text_.find('\n', at), text_.size());
    if (line < first || (next >= 0 && line >= next)) text.append(text_, at, end - at);
    if (end < text_.size()) text += '\n';
    at = end + 1;
    ++line;
  }
  d.text_ = std::move(text);
  d.root_ = YAML::Load(d.text_);
  for (const Override& o : overrides_)
    d.set(o.key, o.text, o.origin);
  return d;
}

void Document::set(std::string_view dotted_key, const std::string& yaml_text,
                   const std::string& origin) {
  overrides_.push_back({std::string(dotted_key), yaml_text, origin});
  YAML::Node value;
  try {
    value = YAML::Load(yaml_text);
  } catch (const YAML::Exception&) {
    value = YAML::Node(yaml_text);
  }
  check_unique_keys(value, origin, yaml_text.size(), std::string(dotted_key));
  // Only text YAML reads as null on purpose stays null ("null", "~"); empty or blank text, which
  // YAML also reads as null, is the empty string a user typed.
  if (!value.IsDefined() ||
      (value.IsNull() && yaml_text.find_first_not_of(" \t") == std::string::npos)) {
    value = YAML::Node(yaml_text);
  }

  // Split into segments; at each map prefer the longest key that matches the remaining path.
  std::vector<std::string> parts;
  std::string cur;
  for (char c : dotted_key) {
    if (c == '.') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  for (const auto& p : parts) {
    if (p.empty()) throw InputError(origin + ": malformed key '" + std::string(dotted_key) + "'");
  }
  YAML::Node node = root_;
  std::size_t i = 0;
  while (true) {
    if (!node.IsMap()) {
      if (node.IsNull() || !node.IsDefined()) {
        node = YAML::Node(YAML::NodeType::Map);
      } else {
        throw InputError(origin + ": key '" + std::string(dotted_key) +
                         "' goes through a value that is not a mapping");
      }
    }
    // Longest existing key made of parts[i..j].
    std::size_t take = 1;
    for (std::size_t j = parts.size(); j > i + 1; --j) {
      std::string joined = parts[i];
      for (std::size_t k = i + 1; k < j; ++k)
        joined += "." + parts[k];
      if (node[joined].IsDefined() && !node[joined].IsNull()) {
        take = j - i;
        break;
      }
    }
    // Under a path-keyed top-level mapping the rest of the path is one key.
    if (i == 1 && path_keyed_.count(parts[0])) take = parts.size() - i;
    std::string key = parts[i];
    for (std::size_t k = i + 1; k < i + take; ++k)
      key += "." + parts[k];
    i += take;
    if (i == parts.size()) {
      node[key] = value;
      // The value and everything in it: an error inside a mapping given with --set names it.
      std::vector<YAML::Node> todo{node[key]};
      while (!todo.empty()) {
        const YAML::Node n = todo.back();
        todo.pop_back();
        origins_.emplace_back(n, origin);
        if (n.IsMap()) {
          for (auto it = n.begin(); it != n.end(); ++it) {
            todo.push_back(it->first);
            todo.push_back(it->second);
          }
        } else if (n.IsSequence()) {
          for (auto it = n.begin(); it != n.end(); ++it)
            todo.push_back(*it);
        }
      }
      return;
    }
    YAML::Node child = node[key];
    if (!child.IsDefined() || child.IsNull()) {
      node[key] = YAML::Node(YAML::NodeType::Map);
    }
    node.reset(node[key]);
  }
}

std::string Document::where(const YAML::Node& node) const {
  for (const auto& [n, origin] : origins_) {
    if (node.is(n)) return origin;
  }
  const int line = node.Mark().line;
  if (line >= 0) return label_ + ":" + std::to_string(line + 1);
  return label_;
}

// ---------------------------------------------------------------------------------------------
// MapReader

MapReader::MapReader(const Document& doc, YAML::Node node, std::string path)
    : doc_(&doc),
      node_(node),
      path_(std::move(path)),
      quantities_(std::make_shared<std::vector<SourcedQuantity>>()) {
  if (!node_.IsMap()) {
    const std::string what = path_.empty() ? "the top level" : "key '" + path_ + "'";
    throw InputError(doc.where(node_) + ": " + what + ": expected a mapping of keys, got " +
                     describe(node_));
  }
}

std::string MapReader::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool MapReader::has(std::string_view key) const {
  const YAML::Node n = node_;
  const YAML::Node v = n[std::string(key)];
  if (v.IsDefined() && v.IsScalar() && params_) {
    const std::string& text = v.Scalar();
    if (text.size() > 3 && text.rfind("${", 0) == 0 && text.back() == '}') {
      auto it = params_->find(std::string_view(text).substr(2, text.size() - 3));
      // Never `v = value`: assigning to a YAML::Node writes through to the document, which would
      // replace the "${name}" reference by the value and lose where the value was given.
      if (it != params_->end()) return it->second.value.IsDefined() && !it->second.value.IsNull();
    }
  }
  return v.IsDefined() && !v.IsNull();
}

YAML::Node MapReader::lookup(std::string_view key) {
  const YAML::Node n = node_;
  YAML::Node v = n[std::string(key)];
  if (v.IsDefined() && v.IsScalar()) {
    const std::string& text = v.Scalar();
    if (text.size() > 3 && text.rfind("${", 0) == 0 && text.back() == '}') {
      const std::string name = text.substr(2, text.size() - 3);
      const Param* p = nullptr;
      if (params_) {
        auto it = params_->find(name);
        if (it != params_->end()) p = &it->second;
      }
      if (!p) {
        std::vector<std::string> names;
        if (params_) {
          for (const auto& [k, _] : *params_)
            names.push_back(k);
        }
        const std::string guess = closest(name, names);
        fail(key, "refers to an undeclared parameter ${" + name + "}" +
                      (guess.empty() ? "" : " (did you mean ${" + guess + "}?)"));
      }
      substituted_[std::string(key)] = p;
      return p->value;
    }
  }
  return v;
}

MapReader MapReader::child(YAML::Node node, std::string path, std::string_view key) const {
  const Document* doc = doc_;
  if (auto it = substituted_.find(key); it != substituted_.end() && it->second->document) {
    doc = it->second->document;
  }
  MapReader r(*doc, node, std::move(path));
  r.quantities_ = quantities_;
  r.params_ = params_;
  return r;
}

void MapReader::fail(std::string_view key, const std::string& message) const {
  std::string where;
  if (auto it = substituted_.find(key); it != substituted_.end()) {
    where = it->second->where;
  } else {
    const YAML::Node n = node_;
    const YAML::Node v = n[std::string(key)];
    where = v.IsDefined() ? doc_->where(v) : doc_->where(node_);
  }
  throw InputError(where + ": key '" + key_path(key) + "': " + message);
}

void MapReader::fail_here(const std::string& message) const {
  const std::string what = path_.empty() ? "" : "key '" + path_ + "': ";
  throw InputError(doc_->where(node_) + ": " + what + message);
}

YAML::Node MapReader::required(std::string_view key) {
  used_.emplace(key);
  YAML::Node v = lookup(key);
  if (!v.IsDefined() || v.IsNull()) {
    // A present, unread key one edit away from the missing one is probably a typo of it (one
    // edit only: min_bytes and max_bytes are two apart and both legitimate). The error then
    // points at the typo's line, where the fix is.
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string& k = it->first.Scalar();
      if (!used_.count(k) && edit_distance(k, key) == 1) {
        throw InputError(doc_->where(it->first) + ": key '" + key_path(key) +
                         "': missing required key (did you mean '" + std::string(key) +
                         "' instead of '" + k + "'?)");
      }
    }
    fail(key, "missing required key");
  }
  return v;
}

YAML::Node MapReader::scalar(std::string_view key, std::string_view expected) {
  YAML::Node v = required(key);
  if (!v.IsScalar()) fail(key, "expected " + std::string(expected) + ", got " + describe(v));
  return v;
}

std::string MapReader::string(std::string_view key) {
  return scalar(key, "a string").Scalar();
}

std::int64_t MapReader::integer(std::string_view key, std::int64_t min, std::int64_t max) {
  YAML::Node v = scalar(key, "an integer");
  std::int64_t x;
  try {
    x = v.as<std::int64_t>();
  } catch (const YAML::Exception&) {
    fail(key, "expected an integer, got " + describe(v));
  }
  if (x < min || x > max) {
    std::string range = min != INT64_MIN && max != INT64_MAX
                            ? "between " + std::to_string(min) + " and " + std::to_string(max)
                        : min != INT64_MIN ? ">= " + std::to_string(min)
                                           : "<= " + std::to_string(max);
    fail(key, "expected an integer " + range + ", got " + std::to_string(x));
  }
  return x;
}

double MapReader::number(std::string_view key) {
  YAML::Node v = scalar(key, "a number");
  double x = 0;
  try {
    x = v.as<double>();
  } catch (const YAML::Exception&) {
    fail(key, "expected a number, got " + describe(v));
  }
  // YAML reads .nan and .inf as numbers; no input means either.
  if (!std::isfinite(x)) fail(key, "expected a finite number, got " + describe(v));
  return x;
}

bool MapReader::boolean(std::string_view key) {
  YAML::Node v = scalar(key, "true or false");
  try {
    return v.as<bool>();
  } catch (const YAML::Exception&) {
    fail(key, "expected true or false, got " + describe(v));
  }
}

std::string MapReader::read_quantity(std::string_view key,
                                     const std::function<void(const std::string&)>& parse,
                                     bool source_required) {
  YAML::Node v = required(key);
  if (v.IsMap()) {
    MapReader q = child(v, key_path(key), key);
    const std::string text = q.string("value");
    if (source_required && !q.has("source")) {
      q.fail("source", "missing required key (every number needs its source)");
    }
    const std::string source = q.string_or("source", "");
    if (source_required && trim(source).empty()) {
      q.fail("source", "expected a non-empty source string");
    }
    q.finish();
    quantities_->push_back({key_path(key), text, source});
    try {
      parse(text);
    } catch (const InputError& e) {
      q.fail("value", e.what());
    }
    return source;
  }
  if (source_required) {
    fail(key,
         "expected {value: <number with unit>, source: \"...\"}: every number needs its unit "
         "and its source, got " +
             describe(v));
  }
  if (!v.IsScalar()) {
    fail(key, "expected a quantity with a unit (or {value: ..., source: ...}), got " + describe(v));
  }
  quantities_->push_back({key_path(key), v.Scalar(), ""});
  try {
    parse(v.Scalar());
  } catch (const InputError& e) {
    fail(key, e.what());
  }
  return "";
}

double MapReader::bandwidth_Bps(std::string_view key) {
  return quantity(key, parse_bandwidth_Bps);
}

TimeNs MapReader::duration_ns(std::string_view key) {
  return quantity(key, parse_duration_ns);
}

std::uint64_t MapReader::size_bytes(std::string_view key) {
  return quantity(key, parse_size_bytes);
}

double MapReader::percent(std::string_view key) {
  return quantity(key, parse_percent);
}

MapReader MapReader::map(std::string_view key) {
  YAML::Node v = required(key);
  if (!v.IsMap()) fail(key, "expected a mapping of keys, got " + describe(v));
  return child(v, key_path(key), key);
}

std::optional<MapReader> MapReader::optional_map(std::string_view key) {
  if (!has(key)) {
    used_.emplace(key);
    return std::nullopt;
  }
  return map(key);
}

std::vector<YAML::Node> MapReader::list(std::string_view key) {
  YAML::Node v = required(key);
  if (!v.IsSequence()) fail(key, "expected a list, got " + describe(v));
  return std::vector<YAML::Node>(v.begin(), v.end());
}

std::vector<std::string> MapReader::string_list(std::string_view key) {
  std::vector<std::string> out;
  for (const YAML::Node& item : list(key)) {
    if (!item.IsScalar()) fail(key, "expected a list of strings, found " + describe(item));
    out.push_back(item.Scalar());
  }
  return out;
}

std::vector<std::int64_t> MapReader::integer_list(std::string_view key) {
  std::vector<std::int64_t> out;
  for (const YAML::Node& item : list(key)) {
    try {
      if (!item.IsScalar()) throw YAML::Exception(item.Mark(), "");
      out.push_back(item.as<std::int64_t>());
    } catch (const YAML::Exception&) {
      fail(key, "expected a list of integers, found " + describe(item));
    }
  }
  return out;
}

std::string MapReader::string_or(std::string_view key, std::string fallback) {
  if (!has(key)) {
    used_.emplace(key);
    return fallback;
  }
  return string(key);
}

std::int64_t MapReader::integer_or(std::string_view key, std::int64_t fallback, std::int64_t min,
                                   std::int64_t max) {
  if (!has(key)) {
    used_.emplace(key);
    return fallback;
  }
  return integer(key, min, max);
}

double MapReader::number_or(std::string_view key, double fallback) {
  if (!has(key)) {
    used_.emplace(key);
    return fallback;
  }
  return number(key);
}

bool MapReader::boolean_or(std::string_view key, bool fallback) {
  if (!has(key)) {
    used_.emplace(key);
    return fallback;
  }
  return boolean(key);
}

double MapReader::bandwidth_Bps_or(std::string_view key, double fallback) {
  if (!has(key)) {
    used_.emplace(key);
    return fallback;
  }
  return bandwidth_Bps(key);
}

TimeNs MapReader::duration_ns_or(std::string_view key, TimeNs fallback) {
  if (!has(key)) {
    used_.emplace(key);
    return fallback;
  }
  return duration_ns(key);
}

std::uint64_t MapReader::size_bytes_or(std::string_view key, std::uint64_t fallback) {
  if (!has(key)) {
    used_.emplace(key);
    return fallback;
  }
  return size_bytes(key);
}

double MapReader::percent_or(std::string_view key, double fallback) {
  if (!has(key)) {
    used_.emplace(key);
    return fallback;
  }
  return percent(key);
}

std::string MapReader::choice(std::string_view key, const std::vector<std::string>& allowed) {
  const std::string v = string(key);
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
    const std::string guess = closest(v, allowed);
    fail(key, "expected one of " + join(allowed) + ", got \"" + v + "\"" +
                  (guess.empty() ? "" : " (did you mean '" + guess + "'?)"));
  }
  return v;
}

std::string MapReader::choice_or(std::string_view key, const std::vector<std::string>& allowed,
                                 std::string fallback) {
  if (!has(key)) {
    used_.emplace(key);
    return fallback;
  }
  return choice(key, allowed);
}

void MapReader::accept(std::string_view key) {
  used_.emplace(key);
}

void MapReader::finish() {
  std::vector<std::string> known(used_.begin(), used_.end());
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (used_.count(key)) continue;
    const std::string guess = closest(key, known);
    throw InputError(doc_->where(it->first) + ": unknown key '" + key_path(key) + "'" +
                     (guess.empty() ? "" : " (did you mean '" + guess + "'?)") +
                     "; expected one of: " + join(known));
  }
}

MapReader MapReader::item_map(const MapReader& parent, std::string_view key, std::size_t index,
                              const YAML::Node& item) {
  const std::string path = parent.key_path(key) + "[" + std::to_string(index) + "]";
  if (!item.IsMap()) {
    throw InputError(parent.doc_->where(item) + ": key '" + path +
                     "': expected a mapping of keys, got " + describe(item));
  }
  return parent.child(item, path, key);
}

}  // namespace adaptsim::io
