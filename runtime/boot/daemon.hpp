// The daemon: builds the process-wide objects (metrics, actor system, network I/O, HTTP listener)
// from a Config, wires every component in start order (wire_*.hpp), serves until SIGINT/SIGTERM,
// then shuts everything down in order. Keep CAF and Beast out of this header.
#pragma once

#include "runtime/config/config.hpp"

namespace graspd::boot {

class Daemon {
 public:
  explicit Daemon(runtime::Config config);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  /// Boots, logs the readiness line ("listening on host:port"), waits for SIGINT/SIGTERM and shuts
  /// down. Returns the process exit code: 0 after a clean shutdown, 1 when boot failed.
  int run();

 private:
  runtime::Config config_;
};

}  // namespace graspd::boot
