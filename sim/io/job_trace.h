#pragma once
// A job trace: the jobs a `jobs` workload replays on one cluster (sim/run/jobs_workload.cpp).
//
// A CSV file in the columns of a public GPU-cluster trace, Helios' `cluster_log.csv` (SenseTime's
// Helios traces, Hu et al., SC'21, "Characterization and Prediction of Deep Learning Workloads in
// Large-Scale GPU Datacenters"; github.com/S-Lab-System-Group/HeliosData: job_id, user, vc,
// gpu_num, cpu_num, node_num, state, submit_time, start_time, end_time, duration, queue), of which
// it reads job_id, gpu_num and submit_time, plus two columns the public traces lack and a
// simulation needs: `model` (a zoo model) and `samples` (the job's length: the samples it trains
// on, whatever number of GPUs it runs on). Other columns are allowed and ignored. submit_time is
// Helios' "YYYY-MM-DD HH:MM:SS" or seconds; the trace's clock starts at its earliest submission.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace adaptsim::io {

struct TraceJob {
  std::string id;     // job_id
  int gpus = 0;       // gpu_num: the GPUs it asks for
  TimeNs submit = 0;  // since the trace's earliest submission
  std::string model;
  double samples = 0;
  int line = 0;  // the file's line, for messages about the job
};

struct JobTrace {
  std::string file;
  std::vector<TraceJob> jobs;  // in submission order (the file's order among equal times)
};

// Reads and checks a trace: the header names each required column once; every row has the
// header's width, a job_id given once, gpu_num a whole number from 1 to `max_gpus`, a
// submit_time, a non-empty model, samples a number from 1 to 1e12; at least one job. Throws
// InputError "FILE:LINE: column 'NAME': what was expected". The model names are the caller's to
// check (it knows the zoo and the device).
JobTrace read_job_trace(const std::filesystem::path& path, int max_gpus);
// The same over a trace's text; `file` names it in messages.
JobTrace parse_job_trace(const std::string& text, const std::string& file, int max_gpus);

}  // namespace adaptsim::io
