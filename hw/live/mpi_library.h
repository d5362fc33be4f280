#pragma once
// The MPI library a live process runs under, as Horovod's MPI (sim/runtime/mpi_collectives.h,
// `mpi: {live: library}`): the real MPI_Gather, MPI_Gatherv, MPI_Bcast and MPI_Allreduce on
// MPI_COMM_WORLD, so a live Horovod reduces its fused buffers with the library's own algorithms
// (Open MPI's coll/tuned: its fixed decision, or the algorithm mpirun's --mca forces) over the
// library's own TCP transport, as Horovod 0.16.1 did. The model of it (sim/coll/ompi_allreduce.h)
// predicts the same calls in the simulation.
//
// As in Horovod (operations.cc, BackgroundThreadLoop), one thread of its own makes every call,
// one at a time, in the order the worker asked for them; each call's end is posted to the
// environment's loop with its result. The process keeps MPI initialised from the rendezvous
// (tcp::RendezvousOptions::keep_mpi) and finalises it after the run.
//
// Bounded waits: a blocking MPI call cannot be cancelled, so a watchdog fails the run when one
// call has not returned within the timeout, naming the call and this rank (MPI does not say
// which peer stalled); the process then ends without finalising, and mpirun ends the others.
// An MPI error (MPI_ERRORS_RETURN on the communicator) fails the run with the library's text.

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "sim/core/time.h"
#include "sim/runtime/mpi_collectives.h"

namespace adaptsim::live {

// Whether this build links an MPI library (CMake found one).
bool mpi_library_available();

class MpiLibrary final : public runtime::MpiCollectives {
 public:
  using Task = std::function<void()>;
  // `post` runs a task on the environment's loop (from any thread); `fail` fails the run with a
  // reason (from any thread). `timeout_ns` bounds each call. MPI must be initialised (kept).
  MpiLibrary(std::function<void(Task)> post, std::function<void(const std::string&)> fail,
             TimeNs timeout_ns);
  ~MpiLibrary() override;
  MpiLibrary(const MpiLibrary&) = delete;
  MpiLibrary& operator=(const MpiLibrary&) = delete;

  void gather(int worker, std::uint64_t cycle, Words list, std::size_t bytes, std::size_t max_bytes,
              std::function<void(std::vector<Words>)> done) override;
  void bcast(int worker, std::uint64_t cycle, Words list, std::size_t bytes, std::size_t max_bytes,
             std::function<void(Words)> done) override;
  void allreduce(int worker, const coll::Workspace& w, Callback done) override;

  // The calls made so far (for tests).
  std::uint64_t calls() const;

 private:
  // A call on the MPI thread: what it is ("MPI_Allreduce of 'hvd:3:0'"), and the work, which
  // returns the task to post (the caller's continuation) or throws RuntimeFailure.
  struct Call {
    std::string what;
    std::function<Task()> work;
  };
  void submit(Call call);
  void thread_main();
  void watchdog_main();

  std::function<void(Task)> post_;
  std::function<void(const std::string&)> fail_;
  TimeNs timeout_ns_;
  int rank_ = 0, size_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Call> calls_;    // guarded by mu_
  bool stop_ = false;         // guarded by mu_
  std::string current_;       // guarded by mu_: the call in progress, empty when none
  TimeNs current_start_ = 0;  // guarded by mu_
  std::uint64_t done_ = 0;    // guarded by mu_
  bool failed_ = false;       // guarded by mu_: the run was failed; no more calls are made
  std::thread thread_, watchdog_;
};

}  // namespace adaptsim::live
