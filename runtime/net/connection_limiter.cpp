#include "runtime/net/connection_limiter.hpp"

#include "messages/client_address.hpp"

namespace graspd::runtime {

bool ConnectionLimiter::try_acquire(const std::string& address) {
  auto ip = client_address_group(address);
  std::lock_guard lock(mutex_);
  if (max_total_ != 0 && total_ >= max_total_) return false;
  auto& count = per_ip_[ip];
  if (max_per_ip_ != 0 && count >= max_per_ip_) {
    if (count == 0) per_ip_.erase(ip);
    return false;
  }
  ++count;
  ++total_;
  return true;
}

void ConnectionLimiter::release(const std::string& address) {
  auto ip = client_address_group(address);
  std::lock_guard lock(mutex_);
  auto it = per_ip_.find(ip);
  if (it == per_ip_.end()) return;
  if (--it->second == 0) per_ip_.erase(it);
  --total_;
}

std::size_t ConnectionLimiter::open() const {
  std::lock_guard lock(mutex_);
  return total_;
}

}  // namespace graspd::runtime
