// Recursive halving-doubling all-reduce (Rabenseifner's algorithm; Thakur, Rabenseifner & Gropp,
// "Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1), 2005).
// With p' = the largest power of two <= n and r = n - p': ranks 0..2r-1 first fold pairwise
// (even -> odd), leaving p' participants; they reduce-scatter by recursive halving (lg p' steps,
// exchanging half of the current range with the partner at distance p'/2, p'/4, ..., 1) and
// all-gather by recursive doubling; finally each odd folded rank returns the result to its even
// partner. Cost on a switch: 2 lg p' (alpha) + 2 (p'-1)/p' S/B, plus 2(alpha + S/B) when r > 0.

#include <bit>
#include <memory>

#include "sim/coll/allreduce.h"

namespace adaptsim::coll {
namespace {

class HdRun : public std::enable_shared_from_this<HdRun> {
 public:
  HdRun(Transport& t, const Workspace& w, Callback done) : t_(t), w_(w), done_(std::move(done)) {
    const int n = t.size();
    pow2_ = 1;
    while (pow2_ * 2 <= n)
      pow2_ *= 2;
    rem_ = n - pow2_;
    const int me = t.rank();
    if (me < 2 * rem_) {
      new_rank_ = (me % 2 == 1) ? me / 2 : -1;
    } else {
      new_rank_ = me - rem_;
    }
    lo_ = 0;
    hi_ = w.count;
  }

  void start() {
    const int me = t_.rank();
    auto self = shared_from_this();
    if (me < 2 * rem_) {
      if (me % 2 == 0) {
        // Folded out: hand the data to the odd partner, then wait for the result.
        pending_ = 2;
        auto finish = [self] {
          if (--self->pending_ == 0) self->finish();
        };
        t_.send(me + 1, w_.name + "/pre", w_.send, finish);
        t_.recv(me + 1, w_.name + "/post", w_.recv, finish);
        return;
      }
      Bytes tmp = acquire_scratch_for(t_, w_, w_.bytes());
      t_.recv(me - 1, w_.name + "/pre", tmp, [self, tmp] {
        self->t_.reduce(self->w_.recv, self->w_.send, tmp, self->w_.dtype, self->w_.op,
                        [self, tmp] {
                          release_scratch_for(self->t_, tmp);
                          self->in_recv_ = true;
                          self->halving(self->pow2_ / 2);
                        });
      });
      return;
    }
    halving(pow2_ / 2);
  }

 private:
  int real_rank(int new_rank) const { return new_rank < rem_ ? 2 * new_rank + 1 : new_rank + rem_; }
  std::size_t es() const { return dtype_size(w_.dtype); }
  ConstBytes current(std::size_t lo, std::size_t hi) const {
    return in_recv_ ? ConstBytes(w_.recv.sub(lo * es(), (hi - lo) * es()))
                    : w_.send.sub(lo * es(), (hi - lo) * es());
  }

  // Reduce-scatter step at distance d: keep one half of [lo, hi), send the other to the partner.
  void halving(int d) {
    if (d == 0) {
      doubling(1);
      return;
    }
    const int partner = real_rank(new_rank_ ^ d);
    const std::size_t mid = lo_ + (hi_ - lo_) / 2;
    const bool lower = (new_rank_ & d) == 0;
    const std::size_t keep_lo = lower ? lo_ : mid, keep_hi = lower ? mid : hi_;
    const std::size_t send_lo = lower ? mid : lo_, send_hi = lower ? hi_ : mid;
    const std::string name = w_.name + "/rh" + std::to_string(d);
    pending_ = 2;
    auto self = shared_from_this();
    auto finish = [self, d, keep_lo, keep_hi] {
      if (--self->pending_ == 0) {
        self->lo_ = keep_lo;
        self->hi_ = keep_hi;
        self->in_recv_ = true;
        self->halving(d / 2);
      }
    };
    t_.send(partner, name, current(send_lo, send_hi), finish);
    Bytes tmp = acquire_scratch_for(t_, w_, (keep_hi - keep_lo) * es());
    t_.recv(partner, name, tmp, [self, tmp, keep_lo, keep_hi, finish] {
      const std::size_t e = self->es();
      self->t_.reduce(self->w_.recv.sub(keep_lo * e, (keep_hi - keep_lo) * e),
                      self->current(keep_lo, keep_hi), tmp, self->w_.dtype, self->w_.op,
                      [self, tmp, finish] {
                        release_scratch_for(self->t_, tmp);
                        finish();
                      });
    });
  }

  // All-gather step at distance d: swap the current range with the partner's; the range doubles.
  void doubling(int d) {
    if (d == pow2_) {
      post();
      return;
    }
    const int partner = real_rank(new_rank_ ^ d);
    // The partner's range is the sibling of ours within the enclosing range of size 2x. Both
    // sides halved the same parent range at this distance, so recompute it from the bits.
    const auto [parent_lo, parent_hi] = enclosing(d);
    const std::size_t mid = parent_lo + (parent_hi - parent_lo) / 2;
    const bool lower = (new_rank_ & d) == 0;
    const std::size_t other_lo = lower ? mid : parent_lo, other_hi = lower ? parent_hi : mid;
    const std::string name = w_.name + "/rd" + std::to_string(d);
    pending_ = 2;
    auto self = shared_from_this();
    // Copied by name: clang before 16 cannot capture a structured binding.
    auto finish = [self, d, lo = parent_lo, hi = parent_hi] {
      if (--self->pending_ == 0) {
        self->lo_ = lo;
        self->hi_ = hi;
        self->doubling(d * 2);
      }
    };
    t_.send(partner, name, ConstBytes(w_.recv.sub(lo_ * es(), (hi_ - lo_) * es())), finish);
    t_.recv(partner, name, w_.recv.sub(other_lo * es(), (other_hi - other_lo) * es()), finish);
  }

  // The range this rank held before the halving step at distance d (replayed from the top).
  std::pair<std::size_t, std::size_t> enclosing(int d) const {
    std::size_t lo = 0, hi = w_.count;
    for (int dd = pow2_ / 2; dd > d; dd /= 2) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if ((new_rank_ & dd) == 0) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return {lo, hi};
  }

  void post() {
    const int me = t_.rank();
    if (me < 2 * rem_) {  // odd folded rank: return the result to its partner
      auto self = shared_from_this();
      t_.send(me - 1, w_.name + "/post", ConstBytes(w_.recv), [self] { self->finish(); });
      return;
    }
    finish();
  }

  void finish() {
    Callback done = std::move(done_);
    done();
  }

  Transport& t_;
  const Workspace w_;
  Callback done_;
  int pow2_ = 1;
  int rem_ = 0;
  int new_rank_ = -1;
  std::size_t lo_ = 0, hi_ = 0;
  bool in_recv_ = false;  // whether [lo_, hi_) of the partial result lives in recv (else send)
  int pending_ = 0;
};

class HalvingDoublingAllReduce final : public AllReduce {
 public:
  StrategyKind kind() const override { return StrategyKind::kHalvingDoubling; }
  // On a power of two ranks nobody folds out: rank r exchanges with r xor d at every distance d,
  // under names without ranks, keeping the half its bit d picks; with n dividing the count every
  // halving splits evenly, so every rank's halves are of the same sizes.
  RankSymmetry rank_symmetry(int n, std::size_t count) const override {
    const bool pow2 = n > 1 && std::has_single_bit(static_cast<unsigned>(n));
    return pow2 && count > 0 && count % static_cast<std::size_t>(n) == 0 ? RankSymmetry::kXor
                                                                         : RankSymmetry::kNone;
  }
  void run(Transport& t, const Workspace& w, Callback done) const override {
    if (t.size() == 1 || w.count == 0) {
      t.copy(w.recv, w.send, std::move(done));
      return;
    }
    std::make_shared<HdRun>(t, w, std::move(done))->start();
  }
};

}  // namespace

std::unique_ptr<AllReduce> make_halving_doubling_allreduce() {
  return std::make_unique<HalvingDoublingAllReduce>();
}

}  // namespace adaptsim::coll
