#include "hw/nccl/sweep_csv.h"

namespace adaptsim::hw {

std::string sweep_csv_filename(coll::Collective collective, coll::DType dtype, coll::ReduceOp op,
                               int n_ranks) {
  const std::string op_name =
      coll::collective_reduces(collective) ? std::string(coll::reduce_op_name(op)) : "none";
  return "nccl_" + std::string(coll::collective_name(collective)) + "_" +
         std::string(coll::dtype_name(dtype)) + "_" + op_name + "_" + std::to_string(n_ranks) +
         "r.csv";
}

}  // namespace adaptsim::hw
