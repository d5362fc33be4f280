#pragma once
// Open MPI's point-to-point protocol over its TCP BTL (pml/ob1), as a transport over another:
// a message up to the eager limit leaves at once; a larger one goes by rendezvous. The sender
// first sends a rendezvous header; the receiver answers with an acknowledgement once a matching
// receive is posted (at once if it already is, else when it is posted); only then does the
// payload leave, and the blocking send completes when it has. So every message above the eager
// limit costs a round trip before its first payload byte, and cannot start before its receive
// is posted.
//
// Sources (github.com/open-mpi/ompi, v4.0.0): ompi/mca/pml/ob1/pml_ob1_sendreq.h,
// mca_pml_ob1_send_request_start_btl (size <= btl_eager_limit - header: eager; else rendezvous,
// by the RDMA protocol where the BTL can put, as the TCP BTL can: MCA_BTL_FLAGS_PUT in
// opal/mca/btl/tcp/btl_tcp_component.c, whose btl_eager_limit is 64 KiB); the receiver's ACK in
// pml_ob1_recvreq.c (mca_pml_ob1_recv_request_ack_send). The control messages are modelled at
// kRendezvousHeaderBytes each (mca_pml_ob1_rendezvous_hdr_t is 32 B, mca_pml_ob1_ack_hdr_t 40 B,
// pml_ob1_hdr.h); on the wire they carry the payload's length, which the receiver checks.

#include <string>

#include "sim/coll/transport.h"

namespace adaptsim::coll {

inline constexpr std::size_t kRendezvousHeaderBytes = 40;

class RendezvousTransport final : public DelegatingTransport {
 public:
  // Messages of more than `eager_limit` bytes go by rendezvous (ob1 compares the payload with
  // btl_eager_limit less its 14-byte match header; the difference is not modelled).
  // match_in_receive: an announcement already there is answered inside recv() (ob1's); false:
  // when its receive completes, after whatever the rank sends next (an ablation).
  RendezvousTransport(Transport& base, std::size_t eager_limit, bool match_in_receive = true)
      : DelegatingTransport(base), eager_limit_(eager_limit), match_in_receive_(match_in_receive) {}

  int rank() const override { return base_.rank(); }
  int size() const override { return base_.size(); }
  int host_of(int r) const override { return base_.host_of(r); }
  void send(int peer, const std::string& name, ConstBytes data, Callback done) override;
  void recv(int peer, const std::string& name, Bytes into, Callback done) override;

  std::size_t eager_limit() const { return eager_limit_; }

 private:
  std::size_t eager_limit_;
  bool match_in_receive_;
};

}  // namespace adaptsim::coll
