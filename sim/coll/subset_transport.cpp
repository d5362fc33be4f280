#include "sim/coll/subset_transport.h"

#include <algorithm>
#include <stdexcept>

namespace adaptsim::coll {

SubsetTransport::SubsetTransport(Transport& base, std::vector<int> members, std::string prefix)
    : DelegatingTransport(base), members_(std::move(members)), prefix_(std::move(prefix)) {
  const auto it = std::find(members_.begin(), members_.end(), base.rank());
  if (it == members_.end()) {
    throw std::invalid_argument("rank " + std::to_string(base.rank()) + " is not in the subset");
  }
  index_ = static_cast<int>(it - members_.begin());
}

}  // namespace adaptsim::coll
