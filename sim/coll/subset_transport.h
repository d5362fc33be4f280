#pragma once
// A communicator over a subset of another transport's ranks: member i of the subset is rank
// members[i] of the base. Message names get a prefix so the subset's collectives never match the
// base communicator's. (KungFu's CrossAllReduce among host masters runs this way.)

#include <string>
#include <vector>

#include "sim/coll/transport.h"

namespace adaptsim::coll {

class SubsetTransport final : public DelegatingTransport {
 public:
  // `base` is the transport of rank members[index]; `prefix` distinguishes the communicator.
  SubsetTransport(Transport& base, std::vector<int> members, std::string prefix);

  int rank() const override { return index_; }
  int size() const override { return static_cast<int>(members_.size()); }
  int host_of(int r) const override { return base_.host_of(members_.at(r)); }
  void send(int peer, const std::string& name, ConstBytes data, Callback done) override {
    // A closed connection carries nothing more: the send never completes (as a peer's reset
    // fails it, its collective stalls; whoever closed it has moved on).
    if (closed_ != nullptr && ((*closed_)[static_cast<std::size_t>(index_)] != 0 ||
                               (*closed_)[static_cast<std::size_t>(peer)] != 0)) {
      return;
    }
    base_.send(members_.at(peer), prefix_ + name, data, std::move(done));
  }
  bool arrived(int peer, const std::string& name) const override {
    return base_.arrived(members_.at(peer), prefix_ + name);
  }
  void recv(int peer, const std::string& name, Bytes into, Callback done) override {
    base_.recv(members_.at(peer), prefix_ + name, into, std::move(done));
  }
  // Members whose connections in this communicator are closed (by member index; nonzero:
  // closed), owned by the caller and read at every send; null (the default): none ever is.
  void set_closed(const std::vector<char>* closed) { closed_ = closed; }

 private:
  std::vector<int> members_;
  std::string prefix_;
  int index_ = -1;
  const std::vector<char>* closed_ = nullptr;
};

}  // namespace adaptsim::coll
