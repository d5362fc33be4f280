// TagWorkers (hw/tcp/tag_workers.h) on its own: a streaming job fed its payload in pieces gives
// frame_tag's tag; while it waits for bytes it holds no thread, so other jobs run and retract(),
// finish() and the destructor return at once.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "hw/tcp/auth.h"
#include "hw/tcp/tag_workers.h"

using namespace adaptsim::tcp;

namespace {

struct Frame {
  std::array<std::byte, kFrameHeaderBytes> header{};
  std::string name;
  std::vector<std::byte> payload;
};

Frame random_frame(std::mt19937_64& rng, std::size_t payload_bytes) {
  Frame f;
  for (std::byte& b : f.header)
    b = static_cast<std::byte>(rng());
  f.name = "segment" + std::to_string(rng() % 100);
  f.payload.resize(payload_bytes);
  for (std::byte& b : f.payload)
    b = static_cast<std::byte>(rng());
  return f;
}

std::shared_ptr<TagWorkers::Job> job_of(const Frame& f, const SecretKey& key, std::uint64_t seq,
                                        bool streaming) {
  auto job = std::make_shared<TagWorkers::Job>();
  job->key = key;
  job->seq = seq;
  job->header = f.header;
  job->name = f.name;
  job->payload = ByteView(f.payload);
  job->streaming = streaming;
  return job;
}

Tag whole_tag(const Frame& f, const SecretKey& key, std::uint64_t seq) {
  const ByteView parts[3] = {
      f.header, {reinterpret_cast<const std::byte*>(f.name.data()), f.name.size()}, f.payload};
  return frame_tag(key, seq, parts);
}

bool wait_done(const TagWorkers::Job& job) {
  for (int i = 0; i < 5000 && !job.done.load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return job.done.load();
}

}  // namespace

TEST_CASE("a streaming job fed its payload in random pieces gives frame_tag's tag") {
  // The owner publishes growing prefixes, as the loop thread does while a payload is read; the
  // workers absorb what is in place, park when they caught up and are queued again by later
  // publishes. The tag must equal the one over the whole frame, whatever the pieces.
  std::mt19937_64 rng(1919);
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    std::atomic<int> done_calls{0};
    TagWorkers workers(threads, [&] { ++done_calls; });
    for (int round = 0; round < 20; ++round) {
      CAPTURE(round);
      const SecretKey key = JobSecret::random().key();
      const std::size_t size = round == 0 ? 0 : rng() % (3 * TagWorkers::kStreamChunkBytes);
      const Frame f = random_frame(rng, size);
      auto job = job_of(f, key, static_cast<std::uint64_t>(round), /*streaming=*/true);
      workers.submit(job);
      for (std::size_t published = 0; published < size;) {
        published = std::min(size, published + rng() % 100000);
        workers.publish(job, published);
        if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      REQUIRE(wait_done(*job));
      CHECK_FALSE(job->error);
      CHECK(job->tag == whole_tag(f, key, static_cast<std::uint64_t>(round)));
    }
    // on_done once per job, after it is done.
    for (int i = 0; i < 1000 && done_calls.load() < 20; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(done_calls.load() == 20);
  }
}

TEST_CASE(
    "a streaming job waiting for bytes holds no thread, and retract, finish and the "
    "destructor end it without waiting for them") {
  std::mt19937_64 rng(7);
  const SecretKey key = JobSecret::random().key();
  const Frame big = random_frame(rng, 1 << 20);
  const Frame small = random_frame(rng, 1000);
  TagWorkers workers(1, [] {});

  // A peer that stops mid-payload: the job parks with half of it absorbed.
  auto stuck = job_of(big, key, 1, /*streaming=*/true);
  workers.submit(stuck);
  workers.publish(stuck, big.payload.size() / 2);
  // The only thread still computes other frames' tags meanwhile.
  auto other = job_of(small, key, 2, /*streaming=*/false);
  workers.submit(other);
  REQUIRE(wait_done(*other));
  CHECK(other->tag == whole_tag(small, key, 2));
  CHECK_FALSE(stuck->done.load());
  // The connection closes: retracted, never done, and nothing reads the payload afterwards.
  workers.retract(stuck);
  CHECK_FALSE(stuck->done.load());

  // finish() of a job whose payload is all in place completes it here if a worker has not.
  for (int round = 0; round < 20; ++round) {
    auto job = job_of(big, key, 3, /*streaming=*/true);
    workers.submit(job);
    workers.publish(job, big.payload.size() / 3);
    if (round % 2 == 1) std::this_thread::sleep_for(std::chrono::microseconds(300));
    workers.publish(job, big.payload.size());
    workers.finish(job);
    CHECK(job->done.load());
    CHECK(job->tag == whole_tag(big, key, 3));
  }

  // A parked job left at destruction does not keep the destructor waiting.
  auto left = std::make_unique<TagWorkers>(1, [] {});
  auto parked = job_of(big, key, 4, /*streaming=*/true);
  left->submit(parked);
  left->publish(parked, 100);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  left.reset();
  CHECK_FALSE(parked->done.load());
}
