#pragma once
// The config store of a live elastic run (KUNGFU.md 4: KungFu's config server, etcd in the
// issue's terms), as a folder that every process of the job sees: the single-machine default,
// with nothing else running. It holds
//   cluster.json              the versioned cluster {"version": V, "workers": [w, ...]}, replaced
//                             whole by rename (a reader sees one version or the next);
//   notices/v<V>.json         the runners' notices (RunnerNotice): the first worker's wins
//                             (link(2) of a finished temporary file fails once one exists);
//   addresses/v<V>/w<W>       where worker W listens for version V's connections;
//   records/w<W>-<pid>.json   what each process measured (runtime::RunRecord), for the launcher;
//   checkpoint.bin            the restart baseline's model state;
//   leases/w<W>               renewed by worker W's process while it runs (its mtime), and by
//                             the runner that started the process until then;
//   started/w<W>.v<V>         worker W's process for version V renews its lease itself;
//   lock                      serializes compare-and-swaps of the cluster.
// Every write is a temporary file renamed (or linked) into place; nothing is left half written.
// Readers validate what they read and say what is wrong in one line.
//
// EtcdStore (etcd_store.h) keeps the config store's part (the cluster, the notices, the addresses,
// the leases) in etcd instead, and the bulk files (records, checkpoint) in the folder.

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/runtime/elastic.h"
#include "sim/runtime/trainer.h"

namespace adaptsim::live {

class FileStore {
 public:
  // A store in `dir`; `capacity` bounds the worker ids a valid cluster may hold.
  FileStore(std::filesystem::path dir, int capacity);
  virtual ~FileStore() = default;
  // Creates the folder's layout and puts `first` (the launcher, before any worker runs).
  void create(const runtime::ClusterConfig& first) const;
  const std::filesystem::path& dir() const { return dir_; }
  int capacity() const { return capacity_; }

  // The cluster the store holds, or nullopt with `*error` saying why not in one line: the file is
  // missing or unreadable (the store is unavailable) or fails validation (a version below 0, no
  // workers, a worker id outside 0..capacity-1 or twice).
  virtual std::optional<runtime::ClusterConfig> get(std::string* error) const;
  // Replaces the cluster (the caller gives the next version). Throws RuntimeFailure when the folder
  // cannot be written.
  virtual void put(const runtime::ClusterConfig& cluster) const;

  // The runners' notices: post returns false when a notice of that version was already posted.
  virtual bool post_notice(const runtime::RunnerNotice& notice) const;
  // The versions with a notice, ascending; the notice of one (throws RuntimeFailure naming the
  // file when it is unreadable or invalid).
  virtual std::vector<int> notice_versions() const;
  std::filesystem::path notice_file(int version) const;
  virtual runtime::RunnerNotice read_notice(int version) const;

  // Replaces the cluster only while the store holds `expected_version` (etcd's compare-and-swap
  // transaction; a lock file serializes the swappers); whether it did.
  virtual bool swap(int expected_version, const runtime::ClusterConfig& cluster) const;

  // Leases (failure detection): a running process renews its worker's lease (the file's
  // modification time); the workers whose lease was renewed within `lifetime_ns`, ascending.
  virtual void renew_lease(int worker) const;
  virtual std::vector<int> live_leases(TimeNs lifetime_ns) const;
  // A process's start-up: the runner that started worker W's process for cluster version V holds
  // W's lease (renews it as the process would) until the process has renewed it itself, which it
  // marks here; a process slower to start than a lease's lifetime is not taken for a failed one.
  // The marks are files of the folder (with etcd as well: the folder is the run's).
  void mark_started(int worker, int version) const;
  bool started(int worker, int version) const;

  // The address rendezvous of a version's connections.
  virtual void publish_address(int version, int worker, const std::string& address) const;
  virtual std::optional<std::string> address(int version, int worker) const;

  // The restart baseline's checkpoint of the model state, replaced whole: `tensors`' float32
  // values one after another, then the `words` (a learner's data cursor and samples trained),
  // written from and read into their own memory (no copy of the whole). Reading throws
  // RuntimeFailure naming the file when it is missing, unreadable or not exactly the tensors' and
  // words' size.
  void write_checkpoint(const std::vector<std::vector<float>>& tensors,
                        std::span<const std::uint64_t> words = {}) const;
  void read_checkpoint(std::vector<std::vector<float>>& tensors,
                       std::span<std::uint64_t> words = {}) const;

  // What one process measured; the launcher reads them all.
  void write_record(int worker, const runtime::RunRecord& record) const;
  std::vector<runtime::RunRecord> read_records() const;

 private:
  std::filesystem::path dir_;
  int capacity_;
};

// The cluster document's text form, and its reader: nullopt with `*error` saying what is wrong in
// one line (not JSON, a version below 0, no workers, a worker id outside 0..capacity-1 or twice).
std::string cluster_json(const runtime::ClusterConfig& cluster);
std::optional<runtime::ClusterConfig> parse_cluster(const std::string& text, int capacity,
                                                    std::string* error);

// Text forms (JSON) of a notice and a record; the readers throw RuntimeFailure naming `label`.
std::string notice_json(const runtime::RunnerNotice& notice);
runtime::RunnerNotice notice_from_json(const std::string& text, const std::string& label);
std::string record_json(const runtime::RunRecord& record);
runtime::RunRecord record_from_json(const std::string& text, const std::string& label);

}  // namespace adaptsim::live
