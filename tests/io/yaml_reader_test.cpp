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

TEST_CASE("--set KEY=null is YAML's null, as in a file, and empty text the empty string") {
  Document d = Document::parse_string("a: 1\nb: 2\nc: 3\nd: x\n", "n.yaml");
  d.set("a", "null", "--set a=null");
  d.set("b", "~", "--set b=~");
  d.set("c", "", "--set c=");
  d.set("d", " ", "--set 'd= '");
  CHECK(d.root()["a"].IsNull());
  CHECK(d.root()["b"].IsNull());
  REQUIRE(d.root()["c"].IsScalar());
  CHECK(d.root()["c"].Scalar().empty());
  REQUIRE(d.root()["d"].IsScalar());
  CHECK(d.root()["d"].Scalar() == " ");
  // A null reads as absent: the reader's default.
  MapReader r(d, d.root(), "");
  CHECK_FALSE(r.has("a"));
  CHECK(r.integer_or("a", 7) == 7);
  CHECK(r.has("c"));
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

TEST_CASE("${name} refers to a parameter: an undeclared one is an error") {
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

TEST_CASE("strict YAML: nothing in the text is silently dropped (issue 21 item 6)") {
  CHECK_THROWS_WITH_AS(Document::parse_string("a: 1\nb: 2\na: 3\n", "d.yaml"),
                       "d.yaml:3: key 'a' is given twice in one mapping (first at line 1); "
                       "expected each key once (YAML would keep only the first)",
                       InputError);
  CHECK_THROWS_WITH_AS(Document::parse_string("top:\n  x: [{k: 1, k: 2}]\n", "n.yaml"),
                       doctest::Contains("n.yaml:2: key 'top.x[0].k' is given twice"), InputError);
  CHECK_THROWS_WITH_AS(Document::parse_string("a: 1\n---\nb: 2\n", "m.yaml"),
                       "m.yaml:2: a second YAML document; expected one document per file",
                       InputError);
  // A leading "---" opens the one document; a lone trailing "..." ends it.
  CHECK_NOTHROW(Document::parse_string("---\na: 1\n...\n", "ok.yaml"));
  // Not UTF-8 (a Latin-1 byte on line 2), an overlong encoding, a truncated sequence.
  CHECK_THROWS_WITH_AS(Document::parse_string("a: 1\nb: caf\xe9\n", "l.yaml"),
                       doctest::Contains("l.yaml:2: expected UTF-8 text"), InputError);
  CHECK_THROWS_AS(Document::parse_string("a: \xc0\xaf\n", "o.yaml"), InputError);
  CHECK_THROWS_AS(Document::parse_string("a: x\xe2\x82", "t.yaml"), InputError);
  CHECK_NOTHROW(Document::parse_string("a: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82\n", "u.yaml"));
  // Aliases may share a value; they may not expand exponentially.
  CHECK_NOTHROW(Document::parse_string("a: &x [1, 2]\nb: *x\n", "alias.yaml"));
  std::string bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict, bug 105651) on "l" + std::string.
  for (int i = 1; i < 9; ++i) {
    bomb.append("l").append(std::to_string(i)).append(": &l").append(std::to_string(i));
    bomb.append(" [");
    for (int k = 0; k < 10; ++k)
      bomb.append(k ? ", *l" : "*l").append(std::to_string(i - 1));
    bomb.append("]\n");
  }
  CHECK_THROWS_WITH_AS(Document::parse_string(bomb, "bomb.yaml"),
                       doctest::Contains("anchors and aliases expand to more values"), InputError);
}

TEST_CASE("numbers are finite") {
  Document d = Document::parse_string("a: .nan\nb: .inf\nc: -.inf\nd: 2.5\n", "f.yaml");
  MapReader r(d, d.root(), "");
  CHECK_THROWS_WITH_AS(r.number("a"), "f.yaml:1: key 'a': expected a finite number, got \".nan\"",
                       InputError);
  CHECK_THROWS_AS(r.number("b"), InputError);
  CHECK_THROWS_AS(r.number("c"), InputError);
  CHECK(r.number("d") == 2.5);
}

TEST_CASE("a path-keyed mapping takes a dotted key whole, present or not (issue 21 item 9)") {
  // simctl validate scenarios/allreduce.yaml --set "sweep.topology.params.nic_bandwidth=[...]"
  // made sweep: {topology: {params: {nic_bandwidth: [...]}}} ("key 'sweep.topology': expected a
  // list"), in a file without a sweep and in one with another sweep key alike.
  for (const std::string text :
       {"name: x\n", "name: x\nsweep:\n  topology.params.servers: [1]\n"}) {
    Document d = Document::parse_string(text, "s.yaml");
    d.set_path_keyed("sweep");
    d.set("sweep.topology.params.nic_bandwidth", "[1Gbps, 10Gbps]", "--set");
    const YAML::Node sweep = d.root()["sweep"];
    REQUIRE(sweep.IsMap());
    CHECK(sweep["topology.params.nic_bandwidth"].IsSequence());
    CHECK(sweep["topology.params.nic_bandwidth"].size() == 2);
    CHECK_FALSE(sweep["topology"].IsDefined());
    // Kept by clone(), which replays the override.
    const Document c = d.clone();
    CHECK(c.root()["sweep"]["topology.params.nic_bandwidth"].IsSequence());
  }
  // Elsewhere a dotted path still goes down, mapping by mapping.
  Document d = Document::parse_string("name: x\n", "s.yaml");
  d.set_path_keyed("sweep");
  d.set("topology.params.servers", "4", "--set");
  CHECK(d.root()["topology"]["params"]["servers"].as<int>() == 4);
}

TEST_CASE("clone_without drops a top-level key's lines and keeps every other line's number") {
  const std::string text =
      "name: x\n"
      "sweep:\n"
      "  a.b: [1, 2, 3]\n"
      "  # a comment in the sweep\n"
      "  c: [4]\n"
      "workload:\n"
      "  steps: many\n";
  Document d = Document::parse_string(text, "s.yaml");
  d.set("name", "y", "--set name=y");
  const Document c = d.clone_without("sweep");
  CHECK_FALSE(c.root()["sweep"].IsDefined());
  CHECK(c.root()["name"].as<std::string>() == "y");  // overrides replayed
  MapReader top(c, c.root(), "");
  MapReader w = top.map("workload");
  // `steps` is still reported at line 7.
  CHECK_THROWS_WITH_AS(w.integer("steps"),
                       "s.yaml:7: key 'workload.steps': expected an integer, got \"many\"",
                       InputError);
  // The key last, or absent: as well.
  const Document last =
      Document::parse_string("name: x\nsweep: {a: [1]}\n", "l.yaml").clone_without("sweep");
  CHECK_FALSE(last.root()["sweep"].IsDefined());
  CHECK(last.root()["name"].as<std::string>() == "x");
  const Document none = Document::parse_string("name: x\n", "n.yaml").clone_without("sweep");
  CHECK(none.root()["name"].as<std::string>() == "x");
  // A flow mapping on one line cannot lose a line: a plain clone.
  const Document flow =
      Document::parse_string("{name: x, sweep: {a: [1]}}\n", "f.yaml").clone_without("sweep");
  CHECK(flow.root()["sweep"].IsDefined());
}

TEST_CASE("a ',' at a document's top level is an error, not an endless parse (fuzz_topology)") {
  // yaml-cpp 0.7's LoadAll started an empty document at such a ',' again and again until memory
  // ran out; fuzz/regressions/topology/yaml-top-level-comma is the input the fuzzer found.
  for (const char* text : {",", " ,H100 SXM serv= (servers_peera", "--- ,", "\"a\" ,"}) {
    CHECK_THROWS_WITH_AS(parse_yaml(text, "c.yaml"),
                         "c.yaml:1: not valid YAML: a ',' outside a flow collection ([a, b] or "
                         "{a: 1, b: 2})",
                         InputError);
  }
  CHECK_THROWS_WITH_AS(Document::parse_string("name: x\n- a\n,\n", "t.yaml"),
                       doctest::Contains("t.yaml:2: not valid YAML"), InputError);
  CHECK_THROWS_WITH_AS(parse_yaml("- a\n,\n", "l.yaml"),
                       "l.yaml:2: not valid YAML: a ',' outside a flow collection ([a, b] or "
                       "{a: 1, b: 2})",
                       InputError);
  // A second document is still one, named at its marker; a ',' inside a value is text.
  CHECK_THROWS_WITH_AS(parse_yaml("a: 1\n---\nb: 2\n", "d.yaml"),
                       "d.yaml:2: a second YAML document; expected one document per file",
                       InputError);
  CHECK(parse_yaml("a: b\n ,\n", "v.yaml")["a"].as<std::string>() == "b ,");
}
