#include "sim/coll/rendezvous_transport.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>

#include "sim/core/error.h"

namespace adaptsim::coll {
namespace {

// A control message's bytes: the payload's length, then zeros to the header's size. They live
// until the last callback that uses them has run.
struct Header {
  std::array<std::byte, kRendezvousHeaderBytes> bytes{};
  void put(std::uint64_t length) { std::memcpy(bytes.data(), &length, sizeof length); }
  std::uint64_t length() const {
    std::uint64_t v = 0;
    std::memcpy(&v, bytes.data(), sizeof v);
    return v;
  }
  Bytes buffer() { return {bytes.data(), bytes.size()}; }
};

std::string rts_name(const std::string& name) {
  return name + "|rndv";
}
std::string ack_name(const std::string& name) {
  return name + "|ack";
}

}  // namespace

void RendezvousTransport::send(int peer, const std::string& name, ConstBytes data, Callback done) {
  if (data.size <= eager_limit_) {
    base_.send(peer, name, data, std::move(done));
    return;
  }
  auto rts = std::make_shared<Header>();
  auto ack = std::make_shared<Header>();
  rts->put(data.size);
  base_.send(peer, rts_name(name), rts->buffer(), [rts] {});
  base_.recv(peer, ack_name(name), ack->buffer(),
             [this, peer, name, data, ack, done = std::move(done)]() mutable {
               if (ack->length() != data.size) {
                 throw RuntimeFailure("rank " + std::to_string(base_.rank()) + ": rank " +
                                      std::to_string(peer) + " acknowledged " +
                                      std::to_string(ack->length()) + " bytes of message '" + name +
                                      "', which has " + std::to_string(data.size));
               }
               base_.send(peer, name, data, std::move(done));
             });
}

void RendezvousTransport::recv(int peer, const std::string& name, Bytes into, Callback done) {
  if (into.size <= eager_limit_) {
    base_.recv(peer, name, into, std::move(done));
    return;
  }
  // An announcement already here is matched inside the receive call, and the answer leaves
  // before anything this rank sends after it (ob1: MPI_Irecv finds the unexpected rendezvous
  // header and its PUT control goes out at once, pml_ob1_irecv.c mca_pml_ob1_recv_req_start ->
  // mca_pml_ob1_recv_request_progress_rndv): with the TCP BTL's one connection per peer carrying
  // frames in order, an exchange whose partner came late then sends the two payloads one after
  // the other. Otherwise the answer leaves when the announcement arrives.
  auto rts = std::make_shared<Header>();
  const bool here = match_in_receive_ && base_.arrived(peer, rts_name(name));
  auto answer = [this, peer, name, size = into.size] {
    auto ack = std::make_shared<Header>();
    ack->put(size);
    base_.send(peer, ack_name(name), ack->buffer(), [ack] {});
  };
  if (here) answer();
  base_.recv(peer, rts_name(name), rts->buffer(),
             [this, peer, name, into, rts, here, answer, done = std::move(done)]() mutable {
               if (rts->length() != into.size) {
                 throw RuntimeFailure("rank " + std::to_string(base_.rank()) + ": rank " +
                                      std::to_string(peer) + " announced " +
                                      std::to_string(rts->length()) + " bytes for message '" +
                                      name + "', the receive expects " + std::to_string(into.size));
               }
               if (!here) answer();
               base_.recv(peer, name, into, std::move(done));
             });
}

}  // namespace adaptsim::coll
