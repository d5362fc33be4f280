// runtime::read_system and system_yaml: a system's options as a scenario writes them, and back.
#include <doctest/doctest.h>

#include <string>

#include "sim/core/error.h"
#include "sim/io/yaml_reader.h"
#include "sim/runtime/system_config.h"
#include "tests/support/read_yaml.h"

using namespace adaptsim;
using namespace adaptsim::runtime;

namespace {

SystemConfig read(const std::string& yaml) {
  return testing::read_yaml(yaml, [](io::MapReader& r) { return read_system(r); });
}

}  // namespace

TEST_CASE("a flat NCCL system's net transport reads back as written") {
  SystemConfig c;
  c.kind = SystemKind::kNcclScheduled;
  c.label = "nccl-socket";
  c.nccl_net.transport = train::NcclNetTransport::kSocket;
  c.nccl_net.socket_interfaces = 3;
  const std::string text = system_yaml(c);
  CHECK(text.find("nccl_net: {transport: socket, interfaces: 3}") != std::string::npos);
  const SystemConfig back = read(text);
  CHECK(back.kind == SystemKind::kNcclScheduled);
  CHECK(back.nccl_net.transport == train::NcclNetTransport::kSocket);
  CHECK(back.nccl_net.socket_interfaces == 3);
  // IB verbs, the default, write no interface count, and read back as the default.
  c.nccl_net = {};
  CHECK(system_yaml(c).find("nccl_net: {transport: ib}") != std::string::npos);
  CHECK(read(system_yaml(c)).nccl_net.transport == train::NcclNetTransport::kIb);
  CHECK(read("{kind: horovod-nccl}").nccl_net.transport == train::NcclNetTransport::kIb);
  CHECK(read("{kind: horovod-nccl, nccl_net: {transport: socket}}").nccl_net.socket_interfaces ==
        1);
  // Systems without a flat NCCL communicator write none.
  c.kind = SystemKind::kHierarchical;
  CHECK(system_yaml(c).find("nccl_net") == std::string::npos);
  CHECK_THROWS_AS(read("{kind: kungfu, nccl_net: {transport: socket}}"), InputError);
}
