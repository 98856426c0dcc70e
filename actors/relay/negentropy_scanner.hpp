// NegentropyScanner: the NIP-77 NEG-OPEN store scans, on threads of their own. A scan reads the
// (created_at, id) of every matching stored event (about 20 ms per 40,000 records); run on a CAF
// scheduler thread, one address looping NEG-OPENs on a few connections delayed every other
// client's REQ and EVENT handled there. Sessions submit a scan with a callback (which sends the
// result back to the session as a message), and the scanner's threads take the queued scans in
// turn per client address, so one address's queue does not delay another's first scan by more
// than the scans already running. Bounded: a queue per address and one in all; past them
// submit() refuses and the session answers NEG-ERR "rate-limited: ...".
//
// With no threads nothing runs until run_one() is called (deterministic tests).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/relay/engine/negentropy_sessions.hpp"

namespace graspd {

struct NegentropyScannerLimits {
  /// Threads scanning (NGIT_NEGENTROPY_SCAN_THREADS); 0: only run_one() runs scans.
  std::size_t threads = 2;
  /// Scans one client address may have waiting (NGIT_NEGENTROPY_SCAN_QUEUE_PER_ADDRESS).
  std::size_t max_queued_per_address = 16;
  /// Scans waiting in all.
  std::size_t max_queued = 1024;
};

class NegentropyScanner {
 public:
  using Source = NegentropySessions::RecordSource;
  using Done = std::function<void(NegentropyScan)>;
  enum class Refusal { none, address_full, full, stopped };

  NegentropyScanner(NegentropyScannerLimits limits, Source source);
  ~NegentropyScanner();
  NegentropyScanner(const NegentropyScanner&) = delete;
  NegentropyScanner& operator=(const NegentropyScanner&) = delete;

  /// Queues a scan of `filter` (at most `max` records) for `address`; `done` is called on a
  /// scanner thread (or in run_one) with what it found. Refused scans are not queued and `done`
  /// is not called.
  Refusal submit(const std::string& address, nostr::Filter filter, std::uint64_t max, Done done);
  /// Runs the next scan (in turn per address) on the calling thread; false when none waits.
  bool run_one();
  /// Drops the waiting scans (their `done` is never called) and joins the threads once the
  /// running scans ended. Before the store closes.
  void stop();

  std::size_t queued() const;
  std::size_t queued_by(const std::string& address) const;

 private:
  struct Job {
    nostr::Filter filter;
    std::uint64_t max = 0;
    Done done;
  };
  /// The next job, the addresses taking turns; the lock is held.
  Job take_locked();
  void run(Job& job) const;
  void work();

  NegentropyScannerLimits limits_;
  Source source_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, std::deque<Job>> queues_;
  /// Addresses with waiting scans, in the order their turn comes.
  std::deque<std::string> turns_;
  std::size_t queued_ = 0;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace graspd
