#include "hw/live/rank_launcher.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hw/tcp/cluster_spec.h"
#include "hw/tcp/socket_util.h"
#include "sim/core/error.h"

namespace adaptsim::live {
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) != 0) {
      throw InputError("cannot execute \"" + name + "\": " + tcp::errno_text(errno));
    }
    return name;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw InputError("program \"" + name + "\" not found in PATH");
}

std::string netns_of(const std::vector<std::string>& prefix) {
  const bool ip = !prefix.empty() && std::filesystem::path(prefix[0]).filename() == "ip";
  return ip && prefix.size() == 4 && prefix[1] == "netns" && prefix[2] == "exec" ? prefix[3] : "";
}

std::vector<std::string> expand_prefix_template(const std::string& template_text, int rank) {
  std::vector<std::string> out;
  std::stringstream ss(template_text);
  std::string word;
  const std::string rank_text = std::to_string(rank);
  while (ss >> word) {
    for (std::size_t at = word.find("{rank}"); at != std::string::npos;
         at = word.find("{rank}", at + rank_text.size())) {
      word.replace(at, 6, rank_text);
    }
    out.push_back(word);
  }
  return out;
}

std::vector<RankPlacement> load_rank_placements(const std::filesystem::path& path) {
  const std::string label = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(label + ": cannot read the rank prefix file");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(label + ": invalid JSON: " + e.what());
  }
  const nlohmann::json* ranks = &j;
  if (j.is_object()) {
    if (!j.contains("ranks") || j.size() != 1) {
      throw InputError(label + ": expected {\"ranks\": [...]} or a list of prefixes");
    }
    ranks = &j.at("ranks");
  }
  if (!ranks->is_array() || ranks->empty()) {
    throw InputError(label + ": expected a non-empty list with one entry per rank");
  }
  auto string_list = [&](const nlohmann::json& v, const std::string& where) {
    std::vector<std::string> out;
    if (!v.is_array()) throw InputError(label + ": " + where + ": expected a list of strings");
    for (const auto& s : v) {
      if (!s.is_string()) throw InputError(label + ": " + where + ": expected a list of strings");
      out.push_back(s.get<std::string>());
    }
    return out;
  };
  std::vector<RankPlacement> out;
  for (std::size_t r = 0; r < ranks->size(); ++r) {
    const nlohmann::json& e = (*ranks)[r];
    const std::string where = "rank " + std::to_string(r);
    RankPlacement p;
    if (e.is_array()) {
      p.prefix = string_list(e, where);
    } else if (e.is_object()) {
      for (auto it = e.begin(); it != e.end(); ++it) {
        const std::string& key = it.key();
        if (key == "prefix") {
          p.prefix = string_list(it.value(), where + " 'prefix'");
        } else if (key == "address" || key == "bind") {
          if (!it.value().is_string()) {
            throw InputError(label + ": " + where + " '" + key + "': expected a string");
          }
          (key == "address" ? p.address : p.bind) = it.value().get<std::string>();
        } else {
          throw InputError(label + ": " + where + ": unknown key '" + key +
                           "' (known: prefix, address, bind)");
        }
      }
    } else {
      throw InputError(label + ": " + where + ": expected a list of strings or an object");
    }
    if (!p.address.empty()) tcp::parse_host_list(p.address);  // validates "host:port"
    out.push_back(std::move(p));
  }
  return out;
}

void assign_addresses(std::vector<RankPlacement>& ranks, const std::string& host_list) {
  if (!host_list.empty()) {
    const std::vector<tcp::SocketAddress> hosts = tcp::parse_host_list(host_list);
    if (hosts.size() != ranks.size()) {
      throw InputError("--hosts lists " + std::to_string(hosts.size()) + " addresses for " +
                       std::to_string(ranks.size()) + " ranks");
    }
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (ranks[r].address.empty()) ranks[r].address = hosts[r].str();
    }
    return;
  }
  // Hold every port until all are picked, so no two ranks get the same one.
  std::vector<tcp::UniqueFd> held;
  for (RankPlacement& p : ranks) {
    if (!p.address.empty()) continue;
    held.push_back(tcp::listen_tcp({"127.0.0.1", 0}));
    p.address = tcp::local_address(held.back().get()).str();
  }
}

std::string host_list_of(const std::vector<RankPlacement>& ranks) {
  std::string out;
  for (const RankPlacement& p : ranks)
    out += (out.empty() ? "" : ",") + p.address;
  return out;
}

std::string self_executable() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw RuntimeFailure("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}

tcp::LaunchResult launch_commands(const CommandLaunchOptions& options) {
  if (options.commands.empty()) throw InputError("no rank to launch");
  std::vector<std::string> env = tcp::environment_without_launch_variables();
  env.insert(env.end(), options.env.begin(), options.env.end());
  std::vector<tcp::WorkerCommand> workers;
  for (const auto& argv : options.commands) {
    if (argv.empty()) throw InputError("empty command");
    tcp::WorkerCommand w;
    w.program = resolve_program(argv.front());
    w.argv = argv;
    w.env = env;
    workers.push_back(std::move(w));
  }
  tcp::SuperviseOptions so;
  so.grace_ns = options.grace_ns;
  so.own_process_group = true;
  so.name = "adaptsim-live launcher";
  return tcp::spawn_and_supervise(std::move(workers), so);
}

}  // namespace adaptsim::live
