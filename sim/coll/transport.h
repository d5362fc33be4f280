#pragma once
// The narrow interface between collective algorithms and whatever moves the bytes.
//
// Algorithms (KungFu graph strategies, classic ring, halving-doubling) are written once against
// Transport; the simulator implements it over the flow-level network (SimFabric), the live runtime
// over TCP sockets (hw/tcp). This is what makes a simulated and a live run of the same scenario
// comparable: the same code decides who sends which bytes to whom, and when.
//
// Threading contract: all callbacks of one Transport run on one thread (the simulation loop, or
// the live runtime's event loop) and never inside the call that registered them, so algorithm
// state needs no locks and cannot re-enter itself.
//
// Buffers: `data` may be null in simulated runs that only model sizes; implementations then
// charge time without touching memory. Live runs always carry real bytes.

#include <cstddef>
#include <string>

#include "sim/coll/dtype.h"
#include "sim/core/inline_callback.h"

namespace adaptsim::coll {

// Move-only, callables of up to 40 bytes in place: a collective posts several callbacks per
// message, and std::function allocates for any capture beyond 16 trivially copyable bytes.
using Callback = InlineCallback;

struct ConstBytes {
  const std::byte* data = nullptr;
  std::size_t size = 0;
  ConstBytes sub(std::size_t offset, std::size_t length) const {
    return {data ? data + offset : nullptr, length};
  }
};

struct Bytes {
  std::byte* data = nullptr;
  std::size_t size = 0;
  Bytes sub(std::size_t offset, std::size_t length) const {
    return {data ? data + offset : nullptr, length};
  }
  operator ConstBytes() const { return {data, size}; }
};

// How a collective's ranks relate (coll::AllReduce::rank_symmetry): whether rank r's part, with
// every peer p taken as p + k (kRotation, mod n) or as p xor k (kXor), is rank (r + k)'s, resp.
// (r xor k)'s, for every k -- messages of the same sizes and names at the same points. On
// interchangeable servers such a run may be folded onto one server (fabric::SimFabric::
// fold_servers).
enum class RankSymmetry { kNone, kRotation, kXor };

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Host of each rank (same value = same machine); strategies use it to find host masters.
  virtual int host_of(int rank) const = 0;

  // Sends `data` to `peer` as message `name`. The buffer must stay valid and unchanged until
  // `done` runs. Two messages with the same (peer, name) arrive in the order they were sent.
  virtual void send(int peer, const std::string& name, ConstBytes data, Callback done) = 0;

  // Receives message `name` from `peer` into `into`, whose size must equal the message's. A
  // message that arrives before its recv is posted is held until then. `done` runs once the
  // bytes are in place.
  virtual void recv(int peer, const std::string& name, Bytes into, Callback done) = 0;

  // Whether message `name` from `peer` has fully arrived and waits for its recv: a recv posted
  // now would find it. (An MPI library matches such a message inside the receive call itself:
  // RendezvousTransport answers an announcement that is already there before anything it sends
  // next.)
  virtual bool arrived(int peer, const std::string& name) const = 0;

  // out = op(a, b) element-wise (`out` may alias `a` or `b`), charged at this rank's reduction
  // throughput. `count` = out.size / dtype_size(dtype).
  virtual void reduce(Bytes out, ConstBytes a, ConstBytes b, DType dtype, ReduceOp op,
                      Callback done) = 0;

  // dst = src (a local copy), then done.
  virtual void copy(Bytes dst, ConstBytes src, Callback done) = 0;

  // Scratch memory for an incoming message of `size` bytes, valid until `release_scratch`.
  // Size-only simulations return a null buffer of that size.
  virtual Bytes acquire_scratch(std::size_t size) = 0;
  virtual void release_scratch(Bytes buffer) = 0;
};

// A transport over another that passes the local operations (reduction, copy, scratch) to it:
// the base of adapters that change only who is addressed or how messages travel
// (SubsetTransport, RendezvousTransport).
class DelegatingTransport : public Transport {
 public:
  explicit DelegatingTransport(Transport& base) : base_(base) {}
  bool arrived(int peer, const std::string& name) const override {
    return base_.arrived(peer, name);
  }
  void reduce(Bytes out, ConstBytes a, ConstBytes b, DType dtype, ReduceOp op,
              Callback done) override {
    base_.reduce(out, a, b, dtype, op, std::move(done));
  }
  void copy(Bytes dst, ConstBytes src, Callback done) override {
    base_.copy(dst, src, std::move(done));
  }
  Bytes acquire_scratch(std::size_t size) override { return base_.acquire_scratch(size); }
  void release_scratch(Bytes buffer) override { base_.release_scratch(buffer); }

 protected:
  Transport& base_;
};

}  // namespace adaptsim::coll
