// Classic ring all-reduce (Patarasuk & Yuan 2009; the algorithm of NCCL's ring, OpenMPI's
// ring allreduce and Horovod's MPI path): the tensor is cut into n segments; in n-1 reduce-scatter
// steps each rank sends one segment to its successor and folds the one from its predecessor into
// its result; in n-1 all-gather steps the fully reduced segments travel once around the ring.
// On an uncontended switch each step costs alpha + S/(n*B): total 2(n-1)(alpha + S/(n*B)).

#include <memory>
#include <string>

#include "sim/coll/allreduce.h"
#include "sim/coll/partition.h"

namespace adaptsim::coll {
namespace {

class RingRun : public std::enable_shared_from_this<RingRun> {
 public:
  RingRun(Transport& t, const Workspace& w, Callback done)
      : t_(t), w_(w), n_(t.size()), me_(t.rank()), done_(std::move(done)) {}

  void start() { step(0); }

 private:
  int mod(int x) const { return ((x % n_) + n_) % n_; }
  // Segment i, computed where used: a rank holding all n would make the ring n^2 in memory.
  Interval segment(int i) const {
    return even_part({0, w_.count}, static_cast<std::size_t>(n_), static_cast<std::size_t>(i));
  }
  // Segment i of a buffer of the workspace (Bytes or ConstBytes).
  template <class Buffer>
  Buffer seg(Buffer b, int i) const {
    const std::size_t es = dtype_size(w_.dtype);
    const Interval part = segment(i);
    return b.sub(part.begin * es, part.length() * es);
  }
  // One of the step's two halves (its send, its received segment in place) is done.
  void finish(int s) {
    if (--pending_ == 0) step(s + 1);
  }

  // Steps 0..n-2 reduce-scatter, n-1..2n-3 all-gather. A step ends when its send completed and its
  // received segment is in place (and reduced); the next step's send depends on that segment.
  void step(int s) {
    if (s == 2 * (n_ - 1)) {
      Callback done = std::move(done_);
      done();
      return;
    }
    const bool scatter = s < n_ - 1;
    const int k = scatter ? s : s - (n_ - 1);
    const int send_i = scatter ? mod(me_ - k) : mod(me_ + 1 - k);
    const int recv_i = scatter ? mod(me_ - k - 1) : mod(me_ - k);
    const int next = mod(me_ + 1), prev = mod(me_ - 1);
    // The step's message name, in a string kept across steps (send and recv copy it).
    name_.assign(w_.name);
    name_ += scatter ? "/rs" : "/ag";
    name_ += std::to_string(k);
    const std::string& name = name_;
    pending_ = 2;
    auto self = shared_from_this();
    // In the first reduce-scatter step the own segment is still only in the send buffer.
    const ConstBytes out =
        (scatter && k == 0) ? seg(w_.send, send_i) : seg(ConstBytes(w_.recv), send_i);
    t_.send(next, name, out, [self, s] { self->finish(s); });
    if (scatter) {
      // One receive at a time: the next step starts once this one's segment is folded.
      scratch_ = acquire_scratch_for(t_, w_, segment(recv_i).length() * dtype_size(w_.dtype));
      t_.recv(prev, name, scratch_, [self, s, recv_i] {
        // recv[i] = send[i] + incoming: the first (and only) fold of segment i on this rank.
        self->t_.reduce(self->seg(self->w_.recv, recv_i), self->seg(self->w_.send, recv_i),
                        self->scratch_, self->w_.dtype, self->w_.op, [self, s] {
                          release_scratch_for(self->t_, self->scratch_);
                          self->finish(s);
                        });
      });
    } else {
      t_.recv(prev, name, seg(w_.recv, recv_i), [self, s] { self->finish(s); });
    }
  }

  Transport& t_;
  const Workspace w_;
  const int n_;
  const int me_;
  Callback done_;
  Bytes scratch_;  // the reduce-scatter step's incoming segment
  std::string name_;
  int pending_ = 0;
};

class ClassicRingAllReduce final : public AllReduce {
 public:
  StrategyKind kind() const override { return StrategyKind::kClassicRing; }
  // Rank r sends segment r - k to r + 1 and receives segment r - k - 1 from r - 1 in step k,
  // under names without ranks: shifting every rank shifts the segments, whose sizes are all
  // equal when n divides the count (even_part).
  RankSymmetry rank_symmetry(int n, std::size_t count) const override {
    return n > 1 && count > 0 && count % static_cast<std::size_t>(n) == 0 ? RankSymmetry::kRotation
                                                                          : RankSymmetry::kNone;
  }
  void run(Transport& t, const Workspace& w, Callback done) const override {
    if (t.size() == 1 || w.count == 0) {
      t.copy(w.recv, w.send, std::move(done));
      return;
    }
    std::make_shared<RingRun>(t, w, std::move(done))->start();
  }
};

}  // namespace

std::unique_ptr<AllReduce> make_classic_ring_allreduce() {
  return std::make_unique<ClassicRingAllReduce>();
}

}  // namespace adaptsim::coll
