// Raising machine-wide sysctls while testbeds are up and restoring them when the last goes, on a
// fake /proc/sys in a temporary directory (no root needed).
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hw/testbed/sysctl_guard.h"

namespace {

using namespace adaptsim::testbed;
namespace fs = std::filesystem;

struct FakeMachine {
  SysctlPaths paths;
  FakeMachine() {
    const fs::path root =
        fs::temp_directory_path() / ("adaptsim-sysctl-test-" + std::to_string(::getpid()));
    fs::remove_all(root);
    paths.proc_sys = root / "proc-sys";
    paths.state_dir = root / "state";
    fs::create_directories(paths.proc_sys / "net" / "core");
    set("net/core/rmem_max", "212992");
    set("net/core/wmem_max", "8388608");
  }
  ~FakeMachine() { fs::remove_all(paths.proc_sys.parent_path()); }
  void set(const std::string& rel, const std::string& value) {
    std::ofstream(paths.proc_sys / rel) << value << "\n";
  }
  std::string get(const std::string& rel) const {
    std::ifstream in(paths.proc_sys / rel);
    std::string v;
    in >> v;
    return v;
  }
};

const std::vector<std::pair<std::string, std::uint64_t>> kWanted = {
    {"net.core.rmem_max", 4194304}, {"net.core.wmem_max", 4194304}, {"net.core.absent", 1}};

}  // namespace

TEST_CASE("only lower values are raised: the original is saved before the write") {
  FakeMachine m;
  std::vector<std::string> notes;
  const std::vector<SysctlChange> changes = raise_sysctls(kWanted, &notes, m.paths);
  // rmem_max 212992 < 4194304: raised; wmem_max 8388608 >= 4194304: untouched; absent: a note.
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].key == "net.core.rmem_max");
  CHECK(changes[0].old_value == "212992");
  CHECK(changes[0].new_value == "4194304");
  CHECK(m.get("net/core/rmem_max") == "4194304");
  CHECK(m.get("net/core/wmem_max") == "8388608");
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("net.core.absent") != std::string::npos);
  std::ifstream saved(m.paths.state_dir / "sysctl.saved");
  std::string key, value;
  saved >> key >> value;
  CHECK(key == "net.core.rmem_max");
  CHECK(value == "212992");
}

TEST_CASE("the last testbed to go restores the original: earlier ones leave it raised") {
  FakeMachine m;
  raise_sysctls(kWanted, nullptr, m.paths);
  // A second testbed finds the value raised already: no change, and the saved original stays.
  CHECK(raise_sysctls(kWanted, nullptr, m.paths).empty());
  // The first to leave sees the other alive: nothing restored.
  CHECK(restore_sysctls_if_last([] { return true; }, m.paths).empty());
  CHECK(m.get("net/core/rmem_max") == "4194304");
  // The last one restores the value from before any testbed.
  const std::vector<SysctlChange> restored = restore_sysctls_if_last([] { return false; }, m.paths);
  REQUIRE(restored.size() == 1);
  CHECK(restored[0].new_value == "212992");
  CHECK(m.get("net/core/rmem_max") == "212992");
  CHECK_FALSE(fs::exists(m.paths.state_dir / "sysctl.saved"));
  // Nothing saved: nothing to do.
  CHECK(restore_sysctls_if_last([] { return false; }, m.paths).empty());
}

TEST_CASE("a word joins a list sysctl while testbeds are up, and the last one restores the list") {
  FakeMachine m;
  fs::create_directories(m.paths.proc_sys / "net" / "ipv4");
  m.set("net/ipv4/tcp_allowed_congestion_control", "reno bbr");
  const std::vector<std::pair<std::string, std::string>> cubic = {
      {"net.ipv4.tcp_allowed_congestion_control", "cubic"}, {"net.ipv4.absent_list", "x"}};
  std::vector<std::string> notes;
  const std::vector<SysctlChange> changes = include_in_sysctl_lists(cubic, &notes, m.paths);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].old_value == "reno bbr");
  CHECK(changes[0].new_value == "reno bbr cubic");
  std::ifstream in(m.paths.proc_sys / "net/ipv4/tcp_allowed_congestion_control");
  std::string line;
  std::getline(in, line);
  CHECK(line == "reno bbr cubic");
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("net.ipv4.absent_list") != std::string::npos);
  // Present already (a second testbed): nothing to do; a numeric raise beside it keeps both saved.
  CHECK(include_in_sysctl_lists(cubic, nullptr, m.paths).empty());
  raise_sysctls(kWanted, nullptr, m.paths);
  const std::vector<SysctlChange> restored = restore_sysctls_if_last([] { return false; }, m.paths);
  CHECK(restored.size() == 2);
  std::ifstream again(m.paths.proc_sys / "net/ipv4/tcp_allowed_congestion_control");
  std::getline(again, line);
  CHECK(line == "reno bbr");  // the whole list, its spaces kept
  CHECK(m.get("net/core/rmem_max") == "212992");
}

TEST_CASE("sysctl keys are dotted names, never paths") {
  CHECK(valid_sysctl_key("net.core.rmem_max"));
  CHECK_FALSE(valid_sysctl_key("net/core/rmem_max"));
  CHECK_FALSE(valid_sysctl_key("net..core"));
  CHECK_FALSE(valid_sysctl_key(".net"));
  CHECK_FALSE(valid_sysctl_key(""));
}
