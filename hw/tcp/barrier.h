#pragma once
// A barrier written, like the all-reduce strategies, against coll::Transport only, so it runs on
// the live transport and on the simulator alike.
//
// Dissemination barrier (Hensgen, Finkel & Manber 1988): in round k every rank sends an empty
// message to rank + 2^k and waits for one from rank - 2^k; after ceil(log2 n) rounds every rank
// has (transitively) heard from every other. Messages are named `name`/k, so barriers with
// different names may overlap and repeated barriers with one name match in FIFO order.

#include <string>

#include "sim/coll/transport.h"

namespace adaptsim::tcp {

// `done` runs once every rank entered the barrier `name`. Every rank must call it with the same
// name.
void run_barrier(coll::Transport& t, const std::string& name, coll::Callback done);

}  // namespace adaptsim::tcp
