#include "sim/train/device_profile.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "sim/train/model_zoo.h"

using namespace adaptsim;
using namespace adaptsim::train;
namespace fs = std::filesystem;

namespace {

const fs::path kDevicesDir = fs::path(ADAPTSIM_SOURCE_DIR) / "traces" / "devices";

DeviceProfile shipped(const std::string& name) {
  return load_device_profile(kDevicesDir / (name + ".yaml"));
}

// A valid profile; the error tests change one line each. Line numbers are 1-based.
const std::string kValid =
    "name: test-gpu\n"                                 // 1
    "description: a test device\n"                     // 2
    "default_precision: fp32\n"                        // 3
    "memory: {value: 16GB, source: s}\n"               // 4
    "memory_bandwidth: {value: 900GB/s, source: s}\n"  // 5
    "step_time_cv: {value: 2%, source: s}\n"           // 6
    "throughput:\n"                                    // 7
    "  - model: resnet50\n"                            // 8
    "    precision: fp32\n"                            // 9
    "    batch: 32\n"                                  // 10
    "    step_time: 100ms\n"                           // 11
    "    source: s\n"                                  // 12
    "  - model: resnet50\n"                            // 13
    "    precision: fp32\n"                            // 14
    "    batch: 64\n"                                  // 15
    "    step_time: 300ms\n"                           // 16
    "    source: s\n";                                 // 17

std::string with(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

DeviceProfile parse(const std::string& text) {
  return parse_device_profile(text, "bad.yaml");
}

}  // namespace

TEST_CASE("every shipped device profile loads, and every number in it has a source") {
  std::set<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(kDevicesDir)) {
    if (e.path().extension() != ".yaml") continue;
    CAPTURE(e.path().string());
    const DeviceProfile d = load_device_profile(e.path());
    CHECK(d.name() == e.path().stem().string());
    names.insert(d.name());
    const std::vector<SourcedNumber> numbers = d.sourced_numbers();
    // memory, memory_bandwidth, step_time_cv, then one per throughput point.
    CHECK(numbers.size() == 3 + d.throughput().size());
    for (const SourcedNumber& n : numbers) {
      CAPTURE(n.key);
      CHECK(n.value > 0);
      CHECK(n.source.size() > 10);
    }
    for (const ThroughputPoint& p : d.throughput()) {
      CAPTURE(p.model);
      // Estimates keep their tag: no public measurement exists for these models on these GPUs.
      if (p.model == "mobilenetv2" || p.model == "resnet56" || p.model == "bert-base") {
        const bool tagged =
            p.source.find("[U]") != std::string::npos || p.source.find("[D]") != std::string::npos;
        CHECK(tagged);
      }
      // Every profile can time the points it lists, at its own batch.
      CHECK(d.step_compute_time_s(p.model, p.batch, p.precision) == doctest::Approx(p.step_time_s));
    }
    // The GPUs time ResNet-50; cpu-core is the CPU that live runs of fashion-mlp compute on.
    if (d.name() != "cpu-core") CHECK(d.has_throughput("resnet50", d.default_precision()));
  }
  CHECK(names ==
        std::set<std::string>{"a100", "cpu-core", "h100", "k80-half", "p100", "titan-x", "v100"});
}

TEST_CASE(
    "k80-half: ResNet-50 at 51.9 img/s (tf_cnn_benchmarks), one point so constant per image") {
  const DeviceProfile d = shipped("k80-half");
  CHECK(d.default_precision() == Precision::kFp32);
  // One listed point (batch 64): t(B) = B / 51.9 s.
  CHECK(d.step_compute_time_s("resnet50", 64) == doctest::Approx(64 / 51.9));
  CHECK(d.step_compute_time_s("resnet50", 32) == doctest::Approx(32 / 51.9));
  // Memory bandwidth: half of the board's 480 GB/s.
  CHECK(d.memory_bandwidth_Bps().value == doctest::Approx(240e9));
  CHECK(d.memory_bytes().value == doctest::Approx(12.0 * 1024 * 1024 * 1024));
  CHECK(d.step_time_cv().value == doctest::Approx(0.02));
  CHECK(d.step_time_cv().source.find("[U]") != std::string::npos);
}

TEST_CASE("p100: two batch sizes give a per-step overhead plus a per-image time") {
  const DeviceProfile d = shipped("p100");
  // t(32) = 32/195 s, t(64) = 64/219 s; c = (t64 - t32)/32 s per image, a = t32 - 32 c.
  const double t32 = 32 / 195.0;
  const double t64 = 64 / 219.0;
  const double c = (t64 - t32) / 32;
  const double a = t32 - 32 * c;
  CHECK(a > 0);
  CHECK(d.step_compute_time_s("resnet50", 48) == doctest::Approx(a + 48 * c));
  CHECK(d.step_compute_time_s("resnet50", 128) == doctest::Approx(a + 128 * c));
  CHECK(d.step_compute_time_s("resnet50", 8) == doctest::Approx(a + 8 * c));
}

TEST_CASE("an unphysical fit (negative overhead) extrapolates at constant time per sample") {
  // t(32) = 0.1 s, t(64) = 0.3 s: c = 0.2/32, a = 0.1 - 0.2 = -0.1 s < 0.
  const DeviceProfile d = parse(kValid);
  CHECK(d.step_compute_time_s("resnet50", 48) == doctest::Approx(0.2));  // interpolated
  CHECK(d.step_compute_time_s("resnet50", 16) == doctest::Approx(0.1 * 16 / 32));
  CHECK(d.step_compute_time_s("resnet50", 128) == doctest::Approx(0.3 * 128 / 64));
  CHECK_THROWS_AS(d.step_compute_time_s("resnet50", 0), InputError);
}

TEST_CASE("v100: precision selects the measurement: missing models are an error") {
  const DeviceProfile d = shipped("v100");
  CHECK(d.step_compute_time_s("resnet50", 112) == doctest::Approx(112 / 367.0));
  CHECK(d.step_compute_time_s("resnet50", 256, Precision::kAmp) == doctest::Approx(256 / 1200.0));
  CHECK(d.step_compute_time_s("vgg16", 32) == doctest::Approx(32 / 242.0));  // derived entry
  const DeviceProfile h = shipped("h100");
  CHECK_THROWS_WITH_AS(h.step_compute_time_s("vgg16", 32),
                       doctest::Contains("lists no throughput for model 'vgg16' at"), InputError);
  CHECK_THROWS_WITH_AS(d.step_compute_time_s("resnet50", 64, Precision::kTf32),
                       doctest::Contains("(listed: "), InputError);
}

TEST_CASE("a model built with other options scales the zoo entry's time by FLOPs") {
  const DeviceProfile d = shipped("v100");
  BertOptions short_seq;
  short_seq.sequence_length = 128;
  const Model bert128 = build_bert_base(short_seq);
  const ModelTotals t128 = bert128.totals();
  const ModelTotals t384 = model("bert-base").totals();
  const double ratio =
      (t128.forward_flops + t128.backward_flops) / (t384.forward_flops + t384.backward_flops);
  CHECK(ratio < 0.35);
  CHECK(d.step_compute_time_s(bert128, 2) ==
        doctest::Approx(d.step_compute_time_s("bert-base", 2) * ratio));
  CHECK(d.step_compute_time_s(model("bert-base"), 2) ==
        doctest::Approx(d.step_compute_time_s("bert-base", 2)));
}

TEST_CASE("rates and step times are both accepted, in the model's sample unit") {
  const DeviceProfile d = parse(with(kValid, "    step_time: 100ms\n", "    rate: 320 img/s\n"));
  CHECK(d.step_compute_time_s("resnet50", 32) == doctest::Approx(0.1));
  CHECK(d.throughput()[0].samples_per_s() == doctest::Approx(320));
  CHECK_THROWS_WITH_AS(parse(with(kValid, "    step_time: 100ms\n", "    rate: 320 seq/s\n")),
                       doctest::Contains("bad.yaml:11: key 'throughput[0].rate': expected a rate "
                                         "such as 125 Timg/s"),
                       InputError);
}

TEST_CASE("bad device files name the file, the line and the key") {
  SUBCASE("unknown key") {
    // A misspelt required key is named at its own line, as the key it was meant to be.
    CHECK_THROWS_WITH_AS(parse(with(kValid, "memory: {", "memroy: {")),
                         doctest::Contains("bad.yaml:4: key 'memory': missing required key (did "
                                           "you mean 'memory' instead of 'memroy'?)"),
                         InputError);
    CHECK_THROWS_WITH_AS(parse(with(kValid, "description: a test device\n",
                                    "description: a test device\ncolour: green\n")),
                         doctest::Contains("bad.yaml:3: unknown key 'colour'; expected one of: "
                                           "default_precision, description, memory, "),
                         InputError);
  }
  SUBCASE("unknown key inside a quantity") {
    CHECK_THROWS_WITH_AS(
        parse(with(kValid, "{value: 900GB/s, source: s}", "{value: 900GB/s, source: s, note: x}")),
        doctest::Contains("bad.yaml:5: unknown key 'memory_bandwidth.note'"), InputError);
  }
  SUBCASE("number without its unit") {
    CHECK_THROWS_WITH_AS(
        parse(with(kValid, "900GB/s", "900")),
        doctest::Contains("bad.yaml:5: key 'memory_bandwidth.value': expected a bandwidth with a "
                          "unit such as 10Gbps or 25GB/s, got the bare number \"900\""),
        InputError);
    CHECK_THROWS_WITH_AS(parse(with(kValid, "value: 2%", "value: 2")),
                         doctest::Contains("bad.yaml:6: key 'step_time_cv.value': expected a "
                                           "percentage such as 2%"),
                         InputError);
    CHECK_THROWS_WITH_AS(parse(with(kValid, "    step_time: 100ms\n", "    rate: 320\n")),
                         doctest::Contains("bad.yaml:11: key 'throughput[0].rate'"), InputError);
  }
  SUBCASE("a jitter of 100% or more") {
    CHECK_THROWS_WITH_AS(parse(with(kValid, "value: 2%", "value: 100%")),
                         doctest::Contains("bad.yaml:6: key 'step_time_cv.value': expected a "
                                           "percentage in [0%, 100%)"),
                         InputError);
  }
  SUBCASE("number without its source") {
    CHECK_THROWS_WITH_AS(
        parse(with(kValid, "{value: 900GB/s, source: s}", "{value: 900GB/s}")),
        doctest::Contains("bad.yaml:5: key 'memory_bandwidth.source': missing required key "
                          "(every number needs its source)"),
        InputError);
    CHECK_THROWS_WITH_AS(parse(with(kValid, "{value: 16GB, source: s}", "16GB")),
                         doctest::Contains("bad.yaml:4: key 'memory': expected "
                                           "{value: <number with unit>, source: \"...\"}"),
                         InputError);
    CHECK_THROWS_WITH_AS(
        parse(with(kValid, "    step_time: 100ms\n    source: s\n", "    step_time: 100ms\n")),
        doctest::Contains("bad.yaml:8: key 'throughput[0].source': missing "
                          "required key"),
        InputError);
  }
  SUBCASE("missing required key") {
    CHECK_THROWS_WITH_AS(parse(with(kValid, "description: a test device\n", "")),
                         doctest::Contains("bad.yaml:1: key 'description': missing required key"),
                         InputError);
  }
  SUBCASE("unknown model, precision, bad batch, duplicate point") {
    CHECK_THROWS_WITH_AS(parse(with(kValid, "model: resnet50", "model: resnet5")),
                         doctest::Contains("bad.yaml:8: key 'throughput[0].model': unknown "
                                           "model 'resnet5' (known: bert-base, fashion-mlp, "),
                         InputError);
    CHECK_THROWS_WITH_AS(parse(with(kValid, "    precision: fp32", "    precision: fp64")),
                         doctest::Contains("bad.yaml:9: key 'throughput[0].precision': unknown "
                                           "precision 'fp64'"),
                         InputError);
    CHECK_THROWS_WITH_AS(parse(with(kValid, "batch: 32", "batch: 32.5")),
                         doctest::Contains("bad.yaml:10: key 'throughput[0].batch': expected an "
                                           "integer, got \"32.5\""),
                         InputError);
    CHECK_THROWS_WITH_AS(parse(with(kValid, "batch: 32\n    step_time: 100ms\n",
                                    "batch: 32\n    step_time: 100ms\n    rate: 320 img/s\n")),
                         doctest::Contains("key 'throughput[0].rate': give exactly one of rate "
                                           "(img/s) and step_time"),
                         InputError);
    CHECK_THROWS_WITH_AS(parse(with(kValid, "batch: 64", "batch: 32")),
                         doctest::Contains("bad.yaml:13: key 'throughput[1]': duplicate point for "
                                           "resnet50 fp32 batch 32 (first at line 8)"),
                         InputError);
  }
  SUBCASE("invalid YAML and an empty file") {
    CHECK_THROWS_WITH_AS(
        parse(with(kValid, "  - model: resnet50\n    precision: fp32\n    batch: 64",
                   "  - model: [resnet50\n    precision: fp32\n    batch: 64")),
        doctest::Contains("bad.yaml:"), InputError);
    CHECK_THROWS_WITH_AS(
        parse(""), doctest::Contains("bad.yaml: empty file (expected a YAML mapping of keys)"),
        InputError);
    CHECK_THROWS_WITH_AS(parse("- a list\n"),
                         doctest::Contains("bad.yaml:1: expected a YAML mapping of keys"),
                         InputError);
  }
}

TEST_CASE("a file on disk is named by its path, and a missing file is an InputError") {
  const fs::path dir = fs::path(ADAPTSIM_BINARY_DIR) / "tests" / "train";
  fs::create_directories(dir);
  const fs::path bad = dir / "device_profile_bad_unit.yaml";
  {
    std::ofstream out(bad);
    out << with(kValid, "16GB", "16");
  }
  const std::string expected = bad.string() + ":4: key 'memory.value': expected a size";
  CHECK_THROWS_WITH_AS(load_device_profile(bad), doctest::Contains(expected.c_str()), InputError);
  CHECK_THROWS_WITH_AS(load_device_profile(dir / "no_such_device.yaml"),
                       doctest::Contains("cannot read the file"), InputError);
}
