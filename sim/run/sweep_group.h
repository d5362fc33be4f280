#pragma once
// The processes that share one sweep (simctl run under mpirun, on one machine or many): each runs
// its share of the tasks, rank 0 gathers every task's rows and files and writes the outputs, so
// they are byte for byte those of one process. The runner only moves bytes through this
// interface; simctl implements it over MPI (sim/simctl/mpi_sweep_group.h), so nothing under
// sim/run needs MPI. A single process uses no group at all.
//
// gather, broadcast and agree are collective: each rank of the group calls them, in the same
// order. A step
// that may fail on some ranks goes through agree(), so that every rank then fails with the same
// error and none is left waiting in a collective the others never reach.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace adaptsim::run {

class SweepGroup {
 public:
  virtual ~SweepGroup() = default;
  virtual int rank() const = 0;  // 0 .. size() - 1; rank 0 writes the outputs
  virtual int size() const = 0;
  // Rank 0 receives every rank's bytes, by rank (its own first); the others receive nothing.
  virtual std::vector<std::string> gather(const std::string& bytes) = 0;
  // Every rank receives rank 0's bytes (the others' `bytes` are ignored).
  virtual std::string broadcast(const std::string& bytes) = 0;

  // Whether task `index` of the sweep (in the runner's order: points, then each point's tasks)
  // runs on this rank: a static, strided share (index mod size), so neighbouring points, often
  // of similar cost, go to different ranks.
  bool runs_task(std::size_t index) const {
    return index % static_cast<std::size_t>(size()) == static_cast<std::size_t>(rank());
  }

  // Runs `step` on this rank, then every rank learns whether it failed anywhere: if it did, each
  // rank throws the error of the lowest rank that failed (InputError stays InputError, anything
  // else becomes RuntimeFailure, the message unchanged but for "rank N (host H): " before an
  // error that only a rank other than 0 had).
  void agree(const std::function<void()>& step);
};

// The fields of what ranks exchange: a count as 8 bytes (little-endian), a field as its length
// then its bytes. take_* consume from the front of `in` and throw std::runtime_error when it is
// shorter than the field (a truncated message is a bug, not bad input).
void put_count(std::string& out, std::uint64_t n);
void put_field(std::string& out, std::string_view field);
std::uint64_t take_count(std::string_view& in);
std::string take_field(std::string_view& in);

// A failure carried between ranks: its kind and message, encoded as bytes ("" is no failure).
// Thrown again on every rank by throw_failure().
std::string encode_current_failure();  // call inside a catch block
[[noreturn]] void throw_failure(const std::string& encoded);

}  // namespace adaptsim::run
