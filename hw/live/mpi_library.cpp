#include "hw/live/mpi_library.h"

#include <chrono>
#include <climits>
#include <cstring>
#include <optional>

#include "hw/tcp/event_loop.h"
#include "sim/core/error.h"
#include "sim/core/units.h"

#if ADAPTSIM_LIVE_HAVE_MPI
#include <mpi.h>
#endif

namespace adaptsim::live {

bool mpi_library_available() {
  return ADAPTSIM_LIVE_HAVE_MPI != 0;
}

#if ADAPTSIM_LIVE_HAVE_MPI

namespace {

void check(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw RuntimeFailure(what + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

std::optional<MPI_Datatype> mpi_type(coll::DType t) {
  switch (t) {
    case coll::DType::kF32:
      return MPI_FLOAT;
    case coll::DType::kF64:
      return MPI_DOUBLE;
    case coll::DType::kI32:
      return MPI_INT32_T;
    case coll::DType::kI64:
      return MPI_INT64_T;
    case coll::DType::kU8:
      return MPI_UINT8_T;
    case coll::DType::kF16:
    case coll::DType::kBF16:
      return std::nullopt;  // no MPI type (Horovod 0.16 sent float16 as
                            // its own type with a custom op)
  }
  return std::nullopt;
}

MPI_Op mpi_op(coll::ReduceOp op) {
  switch (op) {
    case coll::ReduceOp::kSum:
      return MPI_SUM;
    case coll::ReduceOp::kMin:
      return MPI_MIN;
    case coll::ReduceOp::kMax:
      return MPI_MAX;
  }
  return MPI_SUM;
}

int as_int(std::size_t v, const std::string& what) {
  if (v > static_cast<std::size_t>(INT_MAX)) {
    throw RuntimeFailure(what + ": " + std::to_string(v) + " is beyond MPI's int counts");
  }
  return static_cast<int>(v);
}

}  // namespace

MpiLibrary::MpiLibrary(std::function<void(Task)> post, std::function<void(const std::string&)> fail,
                       TimeNs timeout_ns)
    : post_(std::move(post)), fail_(std::move(fail)), timeout_ns_(timeout_ns) {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (!initialised || finalised) {
    throw InputError(
        "mpi: {live: library}: MPI is not initialised in this process (adaptsim-live must run "
        "under mpirun; simctl run --live starts it so)");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // Errors come back as codes, so a failed call fails the run with the library's text.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  thread_ = std::thread([this] { thread_main(); });
  watchdog_ = std::thread([this] { watchdog_main(); });
}

MpiLibrary::~MpiLibrary() {
  bool stuck = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    stuck = !current_.empty();
  }
  cv_.notify_all();
  watchdog_.join();
  // A call that never returned (the watchdog failed the run) cannot be cancelled: the process is
  // ending with that failure, and the thread with it.
  if (stuck) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

std::uint64_t MpiLibrary::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void MpiLibrary::submit(Call call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(std::move(call));
  }
  cv_.notify_all();
}

void MpiLibrary::thread_main() {
  for (;;) {
    Call call;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || (!calls_.empty() && !failed_); });
      if (stop_) return;
      call = std::move(calls_.front());
      calls_.pop_front();
      current_ = call.what;
      current_start_ = tcp::EventLoop::now_ns();
    }
    Task then;
    std::string error;
    try {
      then = call.work();
    } catch (const std::exception& e) {
      error = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      current_.clear();
      ++done_;
      if (!error.empty()) failed_ = true;
    }
    if (!error.empty()) {
      fail_("rank " + std::to_string(rank_) + ": " + error);
    } else {
      post_(std::move(then));
    }
  }
}

void MpiLibrary::watchdog_main() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stop_ || failed_ || current_.empty()) continue;
    const TimeNs waited = tcp::EventLoop::now_ns() - current_start_;
    if (waited < timeout_ns_) continue;
    failed_ = true;
    const std::string what = current_;
    lock.unlock();
    fail_("rank " + std::to_string(rank_) + ": " + what + " did not return within " +
          format_duration(timeout_ns_) +
          " (a peer stopped or cannot be reached; MPI does not say which)");
    lock.lock();
  }
}

void MpiLibrary::gather(int, std::uint64_t cycle, Words list, std::size_t bytes,
                        std::size_t max_bytes, std::function<void(std::vector<Words>)> done) {
  const std::string what =
      "MPI_Gather/MPI_Gatherv of Horovod's requests, cycle " + std::to_string(cycle);
  submit({what,
          [this, what, list = std::move(list), bytes, max_bytes,
           done = std::move(done)]() mutable -> Task {
            const bool root = rank_ == 0;
            // Rank 0 gives its own list directly and no bytes (Horovod 0.16.1: MPI_IN_PLACE for
            // its count, nothing in its Gatherv).
            int mine = root ? 0 : as_int(bytes, what);
            std::vector<int> lengths(root ? static_cast<std::size_t>(size_) : 0);
            check(MPI_Gather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD),
                  what);
            std::vector<int> displs;
            std::vector<std::byte> all;
            if (root) {
              lengths[0] = 0;
              displs.assign(lengths.size(), 0);
              std::size_t total = 0;
              for (std::size_t r = 1; r < lengths.size(); ++r) {
                check_length(lengths[r], max_bytes, "request", static_cast<int>(r));
                const auto size = static_cast<std::size_t>(lengths[r]);
                displs[r] = as_int(total, what);
                total += size;
              }
              all.resize(total);
            }
            check(MPI_Gatherv(list.data(), mine, MPI_BYTE, all.data(), lengths.data(),
                              displs.data(), MPI_BYTE, 0, MPI_COMM_WORLD),
                  what);
            std::vector<Words> lists;
            if (root) {
              lists.resize(lengths.size());
              lists[0] = std::move(list);
              for (std::size_t r = 1; r < lengths.size(); ++r) {
                lists[r] = words_for(static_cast<std::size_t>(lengths[r]));
                std::memcpy(lists[r].data(), all.data() + displs[r],
                            static_cast<std::size_t>(lengths[r]));
              }
            }
            return [done = std::move(done), lists = std::move(lists)]() mutable {
              done(std::move(lists));
            };
          }});
}

void MpiLibrary::bcast(int, std::uint64_t cycle, Words list, std::size_t bytes,
                       std::size_t max_bytes, std::function<void(Words)> done) {
  const std::string what = "MPI_Bcast of Horovod's response, cycle " + std::to_string(cycle);
  submit({what,
          [this, what, list = std::move(list), bytes, max_bytes,
           done = std::move(done)]() mutable -> Task {
            int length = rank_ == 0 ? as_int(bytes, what) : 0;
            check(MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD), what);
            check_length(length, max_bytes, "response", 0);
            if (rank_ != 0) list = words_for(static_cast<std::size_t>(length));
            check(MPI_Bcast(list.data(), length, MPI_BYTE, 0, MPI_COMM_WORLD), what);
            return [done = std::move(done), list = std::move(list)]() mutable {
              done(std::move(list));
            };
          }});
}

void MpiLibrary::allreduce(int, const coll::Workspace& w, Callback done) {
  const std::string what =
      "MPI_Allreduce of '" + w.name + "' (" + std::to_string(w.bytes()) + " B)";
  const std::optional<MPI_Datatype> type = mpi_type(w.dtype);
  if (!type) {
    throw RuntimeFailure(what + ": " + std::string(coll::dtype_name(w.dtype)) + " has no MPI type");
  }
  if (w.count > 0 && (!w.recv.data || !w.send.data)) {
    throw RuntimeFailure(what + ": the buffer holds no values (sizes only)");
  }
  submit({what, [what, w, type = *type, done = std::move(done)]() mutable -> Task {
            const int count = as_int(w.count, what);
            const void* send = w.send.data == w.recv.data ? MPI_IN_PLACE : w.send.data;
            check(MPI_Allreduce(send, w.recv.data, count, type, mpi_op(w.op), MPI_COMM_WORLD),
                  what);
            return std::move(done);
          }});
}

#else  // no MPI in this build

MpiLibrary::MpiLibrary(std::function<void(Task)>, std::function<void(const std::string&)>, TimeNs) {
  throw InputError(
      "mpi: {live: library}: this adaptsim-live was built without MPI; rebuild with an MPI "
      "development package (Debian: libopenmpi-dev) or use live: model");
}
MpiLibrary::~MpiLibrary() = default;
std::uint64_t MpiLibrary::calls() const {
  return 0;
}
void MpiLibrary::submit(Call) {}
void MpiLibrary::thread_main() {}
void MpiLibrary::watchdog_main() {}
void MpiLibrary::gather(int, std::uint64_t, Words, std::size_t, std::size_t,
                        std::function<void(std::vector<Words>)>) {}
void MpiLibrary::bcast(int, std::uint64_t, Words, std::size_t, std::size_t,
                       std::function<void(Words)>) {}
void MpiLibrary::allreduce(int, const coll::Workspace&, Callback) {}

#endif

}  // namespace adaptsim::live
