#include "sim/coll/ompi_allreduce.h"

#include <array>
#include <bit>
#include <charconv>

#include "sim/coll/partition.h"
#include "sim/core/error.h"

namespace adaptsim::coll {
namespace {

constexpr std::array<std::string_view, kOmpiAllreduceCount> kNames = {
    "ignore", "basic_linear",   "nonoverlapping", "recursive_doubling",
    "ring",   "segmented_ring", "rabenseifner"};

// The largest power of two not above n (n >= 1): Rabenseifner's nprocs_pof2, recursive
// doubling's adjsize.
std::uint64_t floor_pow2(std::uint64_t n) {
  std::uint64_t p = 1;
  while (p * 2 <= n)
    p *= 2;
  return p;
}

// COLL_BASE_COMPUTED_SEGCOUNT: elements per segment for a segment size in bytes (0: all).
std::uint64_t segment_count(std::uint64_t segment_bytes, std::uint64_t element_bytes,
                            std::uint64_t count) {
  if (segment_bytes >= element_bytes && segment_bytes > 0) {
    const std::uint64_t s = segment_bytes / element_bytes;
    if (s < count) return s;
  }
  return count;
}

// Open MPI's algorithms work in the receive buffer: rbuf = sbuf first, unless the call is
// MPI_IN_PLACE (Horovod's fused buffer: the same buffer, or a size-only workspace), then `next`.
void into_receive_buffer(Transport& t, const Workspace& w, Callback next) {
  if (w.send.data != w.recv.data) {
    t.copy(w.recv, w.send, std::move(next));
  } else {
    next();
  }
}

// ---------------------------------------------------------------------------------------------
// ompi_coll_base_allreduce_intra_ring_segmented (coll_base_allreduce.c, v4.0.0); the ring is the
// same with one phase. The count is cut into ranks blocks (the first count % ranks one element
// longer); each phase reduce-scatters one segment of every block around the ring, a rank keeping
// the receive of the next block posted while it waits for, folds and forwards the current one
// (two receive buffers, blocking sends); then the whole reduced blocks travel once around the
// ring (ompi_coll_base_sendrecv per step).
class OmpiRingRun : public std::enable_shared_from_this<OmpiRingRun> {
 public:
  OmpiRingRun(Transport& t, const Workspace& w, std::size_t phases, Callback done)
      : t_(t),
        w_(w),
        n_(t.size()),
        me_(t.rank()),
        es_(dtype_size(w.dtype)),
        blocks_(even_partition({0, w.count}, static_cast<std::size_t>(t.size()))),
        phases_(phases),
        done_(std::move(done)) {}

  void start() {
    auto self = shared_from_this();
    into_receive_buffer(t_, w_, [self] { self->phase(0); });
  }

 private:
  struct Slot {  // one posted receive
    Bytes buffer;
    bool arrived = false;
    Callback waiter;
  };

  int mod(int x) const { return ((x % n_) + n_) % n_; }
  // Block b's part in phase p (COLL_BASE_COMPUTE_BLOCKCOUNT of the block over the phases).
  Interval part(int b, std::size_t p) const {
    return even_part(blocks_[static_cast<std::size_t>(b)], phases_, p);
  }
  Bytes at(Interval i) const { return w_.recv.sub(i.begin * es_, i.length() * es_); }
  std::string name(std::size_t p, int k) const {
    return w_.name + "/rs" + std::to_string(p) + ":" + std::to_string(k);
  }

  // irecv of the segment of block `b` (the predecessor's step k) into slot k % 2.
  void post_recv(std::size_t p, int k, int b) {
    Slot& s = slots_[static_cast<std::size_t>(k % 2)];
    s = Slot{acquire_scratch_for(t_, w_, part(b, p).length() * es_), false, nullptr};
    auto self = shared_from_this();
    t_.recv(mod(me_ - 1), name(p, k), s.buffer, [self, k] {
      Slot& s2 = self->slots_[static_cast<std::size_t>(k % 2)];
      s2.arrived = true;
      if (s2.waiter) {
        Callback c = std::move(s2.waiter);
        c();
      }
    });
  }
  // Waits for slot k % 2, folds it into block b's segment, releases it, then `next`.
  void fold(std::size_t p, int k, int b, Callback next) {
    auto self = shared_from_this();
    Callback reduce = [self, p, k, b, next = std::move(next)]() mutable {
      Slot& s = self->slots_[static_cast<std::size_t>(k % 2)];
      const Bytes into = self->at(self->part(b, p));
      const Bytes incoming = s.buffer;
      self->t_.reduce(into, incoming, into, self->w_.dtype, self->w_.op,
                      [self, incoming, next = std::move(next)]() mutable {
                        release_scratch_for(self->t_, incoming);
                        next();
                      });
    };
    Slot& s = slots_[static_cast<std::size_t>(k % 2)];
    if (s.arrived) {
      reduce();
    } else {
      s.waiter = std::move(reduce);
    }
  }

  void phase(std::size_t p) {
    if (p == phases_) {
      gather(0);
      return;
    }
    // Receive block me-1's segment, send my own block's.
    post_recv(p, 1, mod(me_ - 1));
    auto self = shared_from_this();
    t_.send(mod(me_ + 1), name(p, 1), at(part(me_, p)), [self, p] { self->scatter_step(p, 2); });
  }

  // Steps k = 2 .. n-1: post the receive of block me-k, fold block me-k+1, send it on.
  void scatter_step(std::size_t p, int k) {
    auto self = shared_from_this();
    if (k == n_) {
      // The last block to arrive is me+1's: fold it, and the phase is done.
      fold(p, k - 1, mod(me_ + 1), [self, p] { self->phase(p + 1); });
      return;
    }
    post_recv(p, k, mod(me_ - k));
    const int b = mod(me_ - k + 1);
    fold(p, k - 1, b, [self, p, k, b] {
      self->t_.send(self->mod(self->me_ + 1), self->name(p, k), self->at(self->part(b, p)),
                    [self, p, k] { self->scatter_step(p, k + 1); });
    });
  }

  // Distribution: step k sends block me+1-k and receives block me-k, whole blocks.
  void gather(int k) {
    if (k == n_ - 1) {
      Callback done = std::move(done_);
      done();
      return;
    }
    auto self = shared_from_this();
    pending_ = 2;
    auto finish = [self, k] {
      if (--self->pending_ == 0) self->gather(k + 1);
    };
    const std::string nm = w_.name + "/ag" + std::to_string(k);
    const Interval out = blocks_[static_cast<std::size_t>(mod(me_ + 1 - k))];
    const Interval in = blocks_[static_cast<std::size_t>(mod(me_ - k))];
    t_.recv(mod(me_ - 1), nm, at(in), finish);
    t_.send(mod(me_ + 1), nm, at(out), finish);
  }

  Transport& t_;
  const Workspace w_;
  const int n_;
  const int me_;
  const std::size_t es_;
  const std::vector<Interval> blocks_;
  const std::size_t phases_;
  Callback done_;
  std::array<Slot, 2> slots_;
  int pending_ = 0;
};

// ompi_coll_base_allreduce_intra_recursivedoubling (v4.0.0): with adjsize the largest power of
// two <= n and extra = n - adjsize, ranks below 2 extra fold pairwise (even sends its buffer to
// odd, which reduces), the adjsize survivors exchange the whole buffer with the partner at
// distance 1, 2, 4, ... and reduce after each exchange, and the odd ranks return the result.
class OmpiRecursiveDoublingRun : public std::enable_shared_from_this<OmpiRecursiveDoublingRun> {
 public:
  OmpiRecursiveDoublingRun(Transport& t, const Workspace& w, Callback done)
      : t_(t), w_(w), done_(std::move(done)) {
    const int n = t.size();
    adjsize_ = static_cast<int>(floor_pow2(static_cast<std::uint64_t>(n)));
    extra_ = n - adjsize_;
    const int me = t.rank();
    if (me < 2 * extra_) {
      newrank_ = (me % 2 == 0) ? -1 : me / 2;
    } else {
      newrank_ = me - extra_;
    }
  }

  void start() {
    auto self = shared_from_this();
    into_receive_buffer(t_, w_, [self] { self->fold_in(); });
  }

 private:
  std::string name(const char* what, int k) const {
    return w_.name + "/" + what + std::to_string(k);
  }
  void fold_in() {
    const int me = t_.rank();
    auto self = shared_from_this();
    if (me < 2 * extra_) {
      if (me % 2 == 0) {
        t_.send(me + 1, name("fold", 0), w_.recv, [self] { self->fold_out(); });
      } else {
        receive_and_reduce(me - 1, name("fold", 0), [self] { self->exchange(1); });
      }
      return;
    }
    exchange(1);
  }
  // result <op>= tmp, releases tmp, then `next`.
  void reduce_scratch(Bytes tmp, Callback next) {
    auto self = shared_from_this();
    t_.reduce(w_.recv, tmp, w_.recv, w_.dtype, w_.op,
              [self, tmp, next = std::move(next)]() mutable {
                release_scratch_for(self->t_, tmp);
                next();
              });
  }
  void receive_and_reduce(int peer, const std::string& nm, Callback next) {
    Bytes tmp = acquire_scratch_for(t_, w_, w_.bytes());
    auto self = shared_from_this();
    t_.recv(peer, nm, tmp, [self, tmp, next = std::move(next)]() mutable {
      self->reduce_scratch(tmp, std::move(next));
    });
  }
  // The exchange with the partner at `distance`: irecv, isend, wait for both, then reduce
  // (ompi_coll_base_allreduce_intra_recursivedoubling; the result is not changed while its send
  // may still read it).
  void exchange(int distance) {
    auto self = shared_from_this();
    if (distance >= adjsize_) {
      fold_out();
      return;
    }
    const int newremote = newrank_ ^ distance;
    const int remote = newremote < extra_ ? newremote * 2 + 1 : newremote + extra_;
    const std::string nm = name("rd", distance);
    Bytes tmp = acquire_scratch_for(t_, w_, w_.bytes());
    auto pending = std::make_shared<int>(2);
    auto both = [self, tmp, pending, distance] {
      if (--*pending > 0) return;
      self->reduce_scratch(tmp, [self, distance] { self->exchange(distance * 2); });
    };
    t_.recv(remote, nm, tmp, both);
    t_.send(remote, nm, w_.recv, both);
  }
  void fold_out() {
    const int me = t_.rank();
    auto self = shared_from_this();
    Callback done = [self] {
      Callback d = std::move(self->done_);
      d();
    };
    if (me < 2 * extra_) {
      if (me % 2 == 0) {
        t_.recv(me + 1, name("back", 0), w_.recv, std::move(done));
      } else {
        t_.send(me - 1, name("back", 0), w_.recv, std::move(done));
      }
      return;
    }
    done();
  }

  Transport& t_;
  const Workspace w_;
  Callback done_;
  int adjsize_ = 1;
  int extra_ = 0;
  int newrank_ = 0;
};

// ompi_coll_base_allreduce_intra_redscat_allgather (coll_base_allreduce.c, v4.1.4), Rabenseifner's
// algorithm as Open MPI orders it, which differs from MPICH's (halving_doubling_allreduce.cpp) in
// who folds and in the order of distances. With p' the largest power of two <= n and r = n - p':
//   1. ranks below 2r pair up (even 2i with odd 2i+1) and exchange halves (ompi_coll_base_sendrecv:
//      the even sends the right half, the odd the left), each reducing the half it kept; the odd
//      sends its reduced right half to the even and drops out; the even ranks go on (vrank i);
//   2. reduce-scatter by recursive vector halving and distance doubling (distance 1, 2, 4, ...;
//      the lower real rank keeps the left half of the window), reducing each received half;
//   3. all-gather by recursive doubling, the exchanges in reverse order;
//   4. each even rank below 2r sends the whole result to its odd partner.
// Each exchange posts its receive, then sends (blocking), then waits for the receive.
class OmpiRabenseifnerRun : public std::enable_shared_from_this<OmpiRabenseifnerRun> {
 public:
  OmpiRabenseifnerRun(Transport& t, const Workspace& w, Callback done)
      : t_(t),
        w_(w),
        es_(dtype_size(w.dtype)),
        me_(t.rank()),
        done_(std::move(done)),
        wsize_(w.count) {
    const int n = t.size();
    pof2_ = static_cast<int>(floor_pow2(static_cast<std::uint64_t>(n)));
    rem_ = n - pof2_;
    if (me_ < 2 * rem_) {
      vrank_ = me_ % 2 != 0 ? -1 : me_ / 2;
    } else {
      vrank_ = me_ - rem_;
    }
  }

  void start() {
    auto self = shared_from_this();
    into_receive_buffer(t_, w_, [self] {
      self->tmp_ = acquire_scratch_for(self->t_, self->w_, self->w_.bytes());
      self->fold_in();
    });
  }

 private:
  Bytes rbuf(std::size_t index, std::size_t count) const {
    return w_.recv.sub(index * es_, count * es_);
  }
  Bytes tmp(std::size_t index, std::size_t count) const {
    return tmp_.sub(index * es_, count * es_);
  }
  std::string name(const char* what, int k) const {
    return w_.name + "/" + what + std::to_string(k);
  }
  int real_rank(int vrank) const { return vrank < rem_ ? vrank * 2 : vrank + rem_; }

  // ompi_coll_base_sendrecv: the receive posted, the send, then both done; `then` after.
  void sendrecv(int peer, const std::string& nm, Bytes out, Bytes in, Callback then) {
    auto self = shared_from_this();
    // The two halves' count and the continuation, shared by both (a callback is move-only).
    auto pending = std::make_shared<std::pair<int, Callback>>(2, std::move(then));
    auto finish = [pending] {
      if (--pending->first == 0) pending->second();
    };
    t_.recv(peer, nm, in, finish);
    t_.send(peer, nm, out, finish);
  }
  // rbuf[index, +count) <op>= tmp[index, +count), then `then`.
  void reduce_into(std::size_t index, std::size_t count, Callback then) {
    const Bytes into = rbuf(index, count);
    t_.reduce(into, tmp(index, count), into, w_.dtype, w_.op, std::move(then));
  }

  // Step 1.
  void fold_in() {
    auto self = shared_from_this();
    if (me_ >= 2 * rem_) {
      halving(1);
      return;
    }
    const std::size_t lhalf = w_.count / 2, rhalf = w_.count - lhalf;
    if (me_ % 2 != 0) {
      sendrecv(me_ - 1, name("fold", 0), rbuf(0, lhalf), tmp(lhalf, rhalf), [self, lhalf, rhalf] {
        self->reduce_into(lhalf, rhalf, [self, lhalf, rhalf] {
          self->t_.send(self->me_ - 1, self->name("fold", 1), self->rbuf(lhalf, rhalf),
                        [self] { self->fold_out(); });
        });
      });
      return;
    }
    sendrecv(me_ + 1, name("fold", 0), rbuf(lhalf, rhalf), tmp(0, lhalf), [self, lhalf, rhalf] {
      self->reduce_into(0, lhalf, [self, lhalf, rhalf] {
        self->t_.recv(self->me_ + 1, self->name("fold", 1), self->rbuf(lhalf, rhalf),
                      [self] { self->halving(1); });
      });
    });
  }

  // Step 2: the exchange at distance `mask`, window [window_, window_ + wsize_).
  void halving(int mask) {
    if (mask >= pof2_) {
      doubling(pof2_ >> 1);
      return;
    }
    const int dest = real_rank(vrank_ ^ mask);
    Window s;
    if (me_ < dest) {
      s.rcount = wsize_ / 2;
      s.scount = wsize_ - s.rcount;
      s.rindex = window_;
      s.sindex = window_ + s.rcount;
    } else {
      s.scount = wsize_ / 2;
      s.rcount = wsize_ - s.scount;
      s.sindex = window_;
      s.rindex = window_ + s.scount;
    }
    steps_.push_back(s);
    auto self = shared_from_this();
    sendrecv(dest, name("rs", mask), rbuf(s.sindex, s.scount), tmp(s.rindex, s.rcount),
             [self, s, mask] {
               self->reduce_into(s.rindex, s.rcount, [self, s, mask] {
                 self->window_ = s.rindex;
                 self->wsize_ = s.rcount;
                 self->halving(mask << 1);
               });
             });
  }

  // Step 3: the exchanges of step 2 in reverse, each sending what it kept and receiving what it
  // sent.
  void doubling(int mask) {
    if (mask == 0) {
      fold_out();
      return;
    }
    const int dest = real_rank(vrank_ ^ mask);
    const Window s = steps_.back();
    steps_.pop_back();
    auto self = shared_from_this();
    sendrecv(dest, name("ag", mask), rbuf(s.rindex, s.rcount), rbuf(s.sindex, s.scount),
             [self, mask] { self->doubling(mask >> 1); });
  }

  // Step 4.
  void fold_out() {
    auto self = shared_from_this();
    Callback done = [self] {
      release_scratch_for(self->t_, self->tmp_);
      Callback d = std::move(self->done_);
      d();
    };
    if (me_ >= 2 * rem_) {
      done();
    } else if (me_ % 2 != 0) {
      t_.recv(me_ - 1, name("result", 0), w_.recv, std::move(done));
    } else {
      t_.send(me_ + 1, name("result", 0), w_.recv, std::move(done));
    }
  }

  struct Window {
    std::size_t sindex = 0, scount = 0, rindex = 0, rcount = 0;
  };
  Transport& t_;
  const Workspace w_;
  const std::size_t es_;
  const int me_;
  Callback done_;
  int pof2_ = 1, rem_ = 0, vrank_ = 0;
  Bytes tmp_;
  std::size_t window_ = 0;
  std::size_t wsize_ = 0;
  std::vector<Window> steps_;
};

bool forces(const OmpiOptions& o) {
  return o.forced && *o.forced != OmpiAllreduce::kIgnore;
}
// The segment size the segmented ring runs with: a forced algorithm's parameter, else what the
// release's decision passes.
std::uint64_t ring_segment_bytes(const OmpiOptions& o) {
  if (forces(o)) return o.forced_segment_bytes;
  return o.rules == OmpiRules::k41 ? 0 : kOmpiPre41SegmentBytes;
}

}  // namespace

std::string_view ompi_allreduce_name(int id) {
  if (id < 0 || id >= kOmpiAllreduceCount) return "unknown";
  return kNames[static_cast<std::size_t>(id)];
}

std::optional<OmpiAllreduce> parse_ompi_allreduce(std::string_view name) {
  for (int i = 1; i < kOmpiAllreduceCount; ++i) {
    if (kNames[static_cast<std::size_t>(i)] == name) return static_cast<OmpiAllreduce>(i);
  }
  return std::nullopt;
}

std::optional<OmpiRules> ompi_rules_for_version(std::string_view v) {
  int parts[3] = {0, 0, 0};
  int k = 0;
  const char* p = v.data();
  const char* end = v.data() + v.size();
  while (p < end && k < 3) {
    auto [next, ec] = std::from_chars(p, end, parts[k]);
    if (ec != std::errc() || next == p) return std::nullopt;
    ++k;
    p = next;
    if (p == end) break;
    if (*p != '.') return std::nullopt;
    ++p;
    if (p == end) return std::nullopt;
  }
  if (p != end || k < 2) return std::nullopt;
  const int major = parts[0], minor = parts[1];
  if (major < 2 || major > 4) return std::nullopt;
  if (major == 4 && minor > 1) return std::nullopt;
  return (major == 4 && minor == 1) ? OmpiRules::k41 : OmpiRules::kBefore41;
}

// The commutative branch of ompi_coll_tuned_allreduce_intra_dec_fixed (v4.1.4), transcribed
// row by row; thresholds are "total_dsize < X" in bytes.
OmpiAllreduce ompi41_fixed_allreduce(int p, std::uint64_t b) {
  using A = OmpiAllreduce;
  if (p < 4) {
    if (b < 8) return A::kRing;
    if (b < 4096) return A::kRecursiveDoubling;
    if (b < 8192) return A::kRing;
    if (b < 16384) return A::kRecursiveDoubling;
    if (b < 65536) return A::kRing;
    if (b < 262144) return A::kSegmentedRing;
    return A::kRabenseifner;
  }
  if (p < 8) {
    if (b < 16) return A::kRing;
    if (b < 8192) return A::kRecursiveDoubling;
    return A::kRabenseifner;
  }
  if (p < 16) return b < 8192 ? A::kRecursiveDoubling : A::kRabenseifner;
  if (p < 32) {
    if (b < 64) return A::kSegmentedRing;
    if (b < 4096) return A::kRecursiveDoubling;
    return A::kRabenseifner;
  }
  if (p < 64) return b < 128 ? A::kSegmentedRing : A::kRabenseifner;
  if (p < 128) return b < 262144 ? A::kRecursiveDoubling : A::kRabenseifner;
  if (p < 256) {
    if (b < 131072) return A::kNonoverlapping;
    if (b < 262144) return A::kRecursiveDoubling;
    return A::kRabenseifner;
  }
  if (p < 512) return b < 4096 ? A::kNonoverlapping : A::kRabenseifner;
  if (p < 2048) {
    if (b < 2048) return A::kNonoverlapping;
    if (b < 16384) return A::kRecursiveDoubling;
    return A::kRabenseifner;
  }
  if (p < 4096) {
    if (b < 2048) return A::kNonoverlapping;
    if (b < 4096) return A::kSegmentedRing;
    if (b < 16384) return A::kRecursiveDoubling;
    return A::kRabenseifner;
  }
  if (b < 2048) return A::kNonoverlapping;
  if (b < 16384) return A::kSegmentedRing;
  if (b < 32768) return A::kRecursiveDoubling;
  return A::kRabenseifner;
}

// The decision of v2.1.1-v4.0.7 (intermediate_message = 10000, segment_size = 1 << 20).
OmpiAllreduce ompi_pre41_fixed_allreduce(int p, std::uint64_t b, std::uint64_t count) {
  using A = OmpiAllreduce;
  if (b < 10000) return A::kRecursiveDoubling;
  if (count > static_cast<std::uint64_t>(p)) {
    return static_cast<std::uint64_t>(p) * kOmpiPre41SegmentBytes >= b ? A::kRing
                                                                       : A::kSegmentedRing;
  }
  return A::kNonoverlapping;
}

OmpiAllreduce ompi_effective_allreduce(OmpiAllreduce a, int p, std::uint64_t count,
                                       std::uint64_t element_bytes, std::uint64_t segment_bytes) {
  using A = OmpiAllreduce;
  const auto n = static_cast<std::uint64_t>(p);
  if (a == A::kSegmentedRing && p > 1 &&
      count < n * segment_count(segment_bytes, element_bytes, count)) {
    a = A::kRing;
  }
  if (a == A::kRing && count < n) a = A::kRecursiveDoubling;
  if (a == A::kRabenseifner && count < floor_pow2(n)) a = A::kBasicLinear;
  return a;
}

OmpiAllreduce ompi41_effective_allreduce(OmpiAllreduce a, int p, std::uint64_t count) {
  return ompi_effective_allreduce(a, p, count, 4, 0);
}

OmpiAllreduce ompi_allreduce_for(const OmpiOptions& o, int p, std::uint64_t count,
                                 std::uint64_t element_bytes) {
  const std::uint64_t bytes = count * element_bytes;
  OmpiAllreduce chosen;
  if (forces(o)) {
    chosen = *o.forced;
  } else if (o.rules == OmpiRules::k41) {
    chosen = ompi41_fixed_allreduce(p, bytes);
  } else {
    chosen = ompi_pre41_fixed_allreduce(p, bytes, count);
  }
  return ompi_effective_allreduce(chosen, p, count, element_bytes, ring_segment_bytes(o));
}

OmpiAllReduce::OmpiAllReduce(OmpiOptions options) : options_(std::move(options)) {}

RankSymmetry OmpiAllReduce::rank_symmetry(int n, std::uint64_t count, DType dtype) const {
  if (n < 2 || count == 0) return RankSymmetry::kNone;
  const bool pow2 = std::has_single_bit(static_cast<unsigned>(n));
  const bool even = count % static_cast<std::uint64_t>(n) == 0;
  switch (ompi_allreduce_for(options_, n, count, dtype_size(dtype))) {
    case OmpiAllreduce::kRing:
    case OmpiAllreduce::kSegmentedRing:
      return even ? RankSymmetry::kRotation : RankSymmetry::kNone;
    case OmpiAllreduce::kRecursiveDoubling:
      return pow2 ? RankSymmetry::kXor : RankSymmetry::kNone;
    case OmpiAllreduce::kRabenseifner:
      return pow2 && even ? RankSymmetry::kXor : RankSymmetry::kNone;
    default:
      return RankSymmetry::kNone;
  }
}

void OmpiAllReduce::run(Transport& t, const Workspace& w, Callback done) const {
  const int n = t.size();
  if (n == 1 || w.count == 0) {
    t.copy(w.recv, w.send, std::move(done));
    return;
  }
  const std::uint64_t es = dtype_size(w.dtype);
  const OmpiAllreduce a = ompi_allreduce_for(options_, n, w.count, es);
  switch (a) {
    case OmpiAllreduce::kRing:
    case OmpiAllreduce::kSegmentedRing: {
      std::size_t phases = 1;
      if (a == OmpiAllreduce::kSegmentedRing) {
        // num_phases = count / (n x segcount), one more for a large enough remainder.
        const std::uint64_t segcount = segment_count(ring_segment_bytes(options_), es, w.count);
        const std::uint64_t whole = static_cast<std::uint64_t>(n) * segcount;
        phases = static_cast<std::size_t>(w.count / whole);
        const std::uint64_t rest = w.count % whole;
        if (rest >= static_cast<std::uint64_t>(n) && rest > whole / 2) ++phases;
      }
      std::make_shared<OmpiRingRun>(t, w, phases, std::move(done))->start();
      return;
    }
    case OmpiAllreduce::kRecursiveDoubling:
      std::make_shared<OmpiRecursiveDoublingRun>(t, w, std::move(done))->start();
      return;
    case OmpiAllreduce::kRabenseifner:
      std::make_shared<OmpiRabenseifnerRun>(t, w, std::move(done))->start();
      return;
    default:
      throw RuntimeFailure("Open MPI " + options_.version + " would run its " +
                           std::string(ompi_allreduce_name(static_cast<int>(a))) +
                           " all-reduce for " + std::to_string(w.count) + " elements on " +
                           std::to_string(n) + " ranks, which is not modelled");
  }
}

}  // namespace adaptsim::coll
