// Counts open connections overall and per peer address, under caps: the WebSocket sessions and git
// hosting's connections each keep one. Thread-safe; no I/O.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace graspd::runtime {

/// Counts open connections overall and per client address (IPv6 by its /64,
/// messages/client_address.hpp); thread-safe.
class ConnectionLimiter {
 public:
  ConnectionLimiter(std::size_t max_total, std::size_t max_per_ip)
      : max_total_(max_total), max_per_ip_(max_per_ip) {}
  /// Reserves a slot; false when a cap is reached.
  bool try_acquire(const std::string& address);
  void release(const std::string& address);
  std::size_t open() const;

 private:
  mutable std::mutex mutex_;
  std::size_t max_total_;
  std::size_t max_per_ip_;
  std::size_t total_ = 0;
  std::unordered_map<std::string, std::size_t> per_ip_;
};

}  // namespace graspd::runtime
