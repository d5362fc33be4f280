#pragma once
// Point-to-point calibration of one link: a ping-pong between two ranks of a live Runtime, the
// rest of the ranks waiting. For each size, `warmup_iters` untimed round trips, then `iters`
// round trips back to back on the initiator's event-loop thread (no thread hand-off inside the
// burst), each timed from its send to its reply with a steady clock; the one-way time is the
// median round trip / 2 (Gloo-style per-op latency, robust to a scheduler stall: FACTS 2.5 step
// 1), the latency + size / bandwidth of the alpha-beta model with nothing else in flight
// (FACTS 2.4: "for point-to-point, a = alpha, b = beta").
//
// The responder echoes each message from the buffer it received it in; with `check`, the
// initiator's last reply is compared with what it sent, element by element.

#include <cstdint>
#include <vector>

#include "hw/tcp/runtime.h"
#include "sim/coll/dtype.h"
#include "sim/core/time.h"

namespace adaptsim::calibrate {

struct PingPongOptions {
  std::vector<std::uint64_t> sizes;  // bytes, rounded down to whole elements; 0-element sizes skip
  int iters = 20;
  int warmup_iters = 5;
  bool check = true;
  coll::DType dtype = coll::DType::kF32;
  TimeNs timeout_ns = 30 * kNsPerSecond;  // per round trip (the whole burst gets iters x this)
  int initiator = 0;
  int responder = 1;
};

struct PingPongRow {
  std::uint64_t size_bytes = 0;
  std::uint64_t count = 0;
  double time_us = 0;  // one way: median round trip / 2
  std::uint64_t wrong = 0;
};

// Every rank of `rt` calls it with the same options (the sizes are separated by barriers of all
// ranks). Returns the rows on the initiator, an empty list elsewhere. Throws RuntimeFailure from
// the Runtime, InputError for a bad rank pair.
std::vector<PingPongRow> run_pingpong_sweep(tcp::Runtime& rt, const PingPongOptions& options);

// A ping-pong between two runtimes inside this process over 127.0.0.1 (two threads): the
// loopback link of this host, whatever the cluster's layout. `runtime` sets transport limits.
std::vector<PingPongRow> run_local_loopback_pingpong(const PingPongOptions& options,
                                                     const tcp::RuntimeOptions& runtime = {});

}  // namespace adaptsim::calibrate
