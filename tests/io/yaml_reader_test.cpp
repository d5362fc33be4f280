#include "sim/io/yaml_reader.h"

#include <doctest/doctest.h>

#include "sim/core/error.h"
#include "sim/core/units.h"

using namespace adaptsim;
using namespace adaptsim::io;

TEST_CASE("values are read with their types and units") {
  Document d = Document::parse_string("a: 3\nb: hello\nc: 10Gbps\nd: {value: 5us, source: paper}\n",
                                      "t.yaml");
  MapReader r(d, d.root(), "");
  CHECK(r.integer("a") == 3);
  CHECK(r.string("b") == "hello");
  CHECK(r.bandwidth_Bps("c") == doctest::Approx(1.25e9));
  CHECK(r.duration_ns("d") == 5000);
  CHECK(r.integer_or("missing", 7) == 7);
  r.finish();
  REQUIRE(r.quantities().size() == 2);
  CHECK(r.quantities()[1].source == "paper");
}

TEST_CASE("errors name the file, the line and the key") {
  Document d = Document::parse_string("top:\n  speed: 10\n  count: many\n", "s.yaml");
  MapReader r(d, d.root(), "");
  MapReader top = r.map("top");
  CHECK_THROWS_WITH_AS(top.bandwidth_Bps("speed"),
                       "s.yaml:2: key 'top.speed': expected a bandwidth with a unit such as 10Gbps "
                       "or 25GB/s, got the bare number \"10\"",
                       InputError);
  CHECK_THROWS_WITH_AS(top.integer("count"),
                       "s.yaml:3: key 'top.count': expected an integer, got \"many\"", InputError);
  CHECK_THROWS_WITH_AS(top.string("name"), "s.yaml:2: key 'top.name': missing required key",
                       InputError);
}

TEST_CASE("a bad value in the {value, source} form is reported at its value key") {
  Document d = Document::parse_string("nic:\n  bandwidth:\n    value: 10\n    source: datasheet\n",
                                      "q.yaml");
  MapReader nic = MapReader(d, d.root(), "").map("nic");
  CHECK_THROWS_WITH_AS(nic.bandwidth_Bps("bandwidth"),
                       "q.yaml:3: key 'nic.bandwidth.value': expected a bandwidth with a unit "
                       "such as 10Gbps or 25GB/s, got the bare number \"10\"",
                       InputError);
}

TEST_CASE("percentages and quantities with the caller's parser") {
  Document d = Document::parse_string("cv: 2%\nbare: 2\nrate: 300 img/s\n", "p.yaml");
  MapReader r(d, d.root(), "");
  // 2% = 0.02; a missing key gives the fallback.
  CHECK(r.percent("cv") == doctest::Approx(0.02));
  CHECK(r.percent_or("absent", 0.5) == 0.5);
  CHECK_THROWS_WITH_AS(r.percent("bare"),
                       "p.yaml:2: key 'bare': expected a percentage such as 2%, got \"2\"",
                       InputError);
  CHECK(r.quantity("rate", [](const std::string& t) { return parse_rate_per_s(t, "img"); }) ==
        doctest::Approx(300));
  CHECK_THROWS_WITH_AS(
      r.quantity("rate", [](const std::string& t) { return parse_rate_per_s(t, "seq"); }),
      doctest::Contains("p.yaml:3: key 'rate': expected a rate such as 125 Tseq/s"), InputError);
}

TEST_CASE("a sourced quantity needs the {value, source} form and a non-empty source") {
  Document d = Document::parse_string(
      "a: {value: 16GB, source: spec sheet}\n"
      "b: 16GB\n"
      "c: {value: 16GB}\n"
      "e: {value: 16GB, source: \" \"}\n",
      "s.yaml");
  MapReader r(d, d.root(), "");
  const WithSource<std::uint64_t> a = r.sourced_quantity("a", parse_size_bytes);
  CHECK(a.value == 16'000'000'000ULL);
  CHECK(a.source == "spec sheet");
  CHECK_THROWS_WITH_AS(r.sourced_quantity("b", parse_size_bytes),
                       doctest::Contains("s.yaml:2: key 'b': expected {value: <number with unit>, "
                                         "source: \"...\"}: every number needs its unit and its "
                                         "source"),
                       InputError);
  CHECK_THROWS_WITH_AS(r.sourced_quantity("c", parse_size_bytes),
                       "s.yaml:3: key 'c.source': missing required key (every number needs its "
                       "source)",
                       InputError);
  CHECK_THROWS_WITH_AS(r.sourced_quantity("e", parse_size_bytes),
                       "s.yaml:4: key 'e.source': expected a non-empty source string", InputError);
}

TEST_CASE("a missing key with a misspelt sibling is reported at the misspelling") {
  Document d = Document::parse_string("name: x\nservers: 4\nbandwith: 10Gbps\n", "m.yaml");
  MapReader r(d, d.root(), "");
  CHECK_THROWS_WITH_AS(r.bandwidth_Bps("bandwidth"),
                       "m.yaml:3: key 'bandwidth': missing required key (did you mean "
                       "'bandwidth' instead of 'bandwith'?)",
                       InputError);
}

TEST_CASE("unknown keys are rejected with a suggestion") {
  Document d = Document::parse_string("name: x\nstratgies: [STAR]\n", "u.yaml");
  MapReader r(d, d.root(), "");
  r.string("name");
  r.accept("strategies");
  CHECK_THROWS_WITH_AS(
      r.finish(),
      doctest::Contains("u.yaml:2: unknown key 'stratgies' (did you mean 'strategies'?)"),
      InputError);
}

TEST_CASE("empty and non-YAML files") {
  CHECK_THROWS_WITH_AS(Document::parse_string("# only a comment\n\n", "e.yaml"),
                       "e.yaml: empty file (expected a YAML mapping of keys)", InputError);
  CHECK_THROWS_WITH_AS(Document::parse_string("a: [1, 2\nb: 3\n", "bad.yaml"),
                       doctest::Contains("bad.yaml:"), InputError);
  CHECK_THROWS_WITH_AS(Document::parse_string("just some words\n", "w.yaml"),
                       doctest::Contains("w.yaml:1: expected a YAML mapping"), InputError);
  CHECK_THROWS_AS(Document::load_file("/nonexistent/x.yaml"), InputError);
}

TEST_CASE("--set overrides replace values and errors name the override") {
  Document d = Document::parse_string("topology:\n  params:\n    servers: 8\n", "o.yaml");
  d.set("topology.params.servers", "abc", "--set topology.params.servers=abc");
  MapReader r(d, d.root(), "");
  MapReader params = r.map("topology").map("params");
  CHECK_THROWS_WITH_AS(params.integer("servers"),
                       "--set topology.params.servers=abc: key 'topology.params.servers': expected "
                       "an integer, got \"abc\"",
                       InputError);
}

TEST_CASE("a dotted key may itself contain dots (sweep keys)") {
  Document d = Document::parse_string("sweep:\n  topology.params.servers: [1, 2]\n", "w.yaml");
  d.set("sweep.topology.params.servers", "[4, 8, 16]", "--set");
  const YAML::Node v = d.root()["sweep"]["topology.params.servers"];
  REQUIRE(v.IsSequence());
  CHECK(v.size() == 3);
  Document c = d.clone();  // overrides survive a clone
  CHECK(c.root()["sweep"]["topology.params.servers"].size() == 3);
}

TEST_CASE("${name} refers to a parameter; an undeclared one is an error") {
  Document d = Document::parse_string(
      "params:\n  bw: 10Gbps\nlink:\n  bandwidth: ${bw}\n  latency: ${lat}\n", "p.yaml");
  auto params = std::make_shared<Params>();
  (*params)["bw"] = Param{d.root()["params"]["bw"], "p.yaml:2"};
  MapReader r(d, d.root(), "");
  r.set_params(params);
  MapReader link = r.map("link");
  CHECK(link.bandwidth_Bps("bandwidth") == doctest::Approx(1.25e9));
  CHECK_THROWS_WITH_AS(link.duration_ns("latency"),
                       doctest::Contains("undeclared parameter ${lat}"), InputError);
}

TEST_CASE("edit distance and suggestions") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  // Two adjacent letters swapped are one edit (Levenshtein counts two substitutions).
  CHECK(edit_distance("memroy", "memory") == 1);
  CHECK(edit_distance("min_bytes", "max_bytes") == 2);
  CHECK(closest("serevrs", {"servers", "spines"}) == "servers");
  CHECK(closest("zzz", {"servers", "spines"}).empty());
}
