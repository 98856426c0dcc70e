// Latest JSON status snapshots that actors publish and HTTP handlers read
// (e.g. /api/sync). Actors never get asked synchronously from a network
// thread: they push a snapshot, readers take the newest one. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace graspd::runtime {

class StatusBoard {
 public:
  void publish(const std::string& name, std::string json) {
    auto doc = std::make_shared<const std::string>(std::move(json));
    std::lock_guard<std::mutex> lock(mutex_);
    docs_[name] = std::move(doc);
  }
  /// The newest snapshot, or null when nothing was published under `name`.
  std::shared_ptr<const std::string> get(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = docs_.find(name);
    return it == docs_.end() ? nullptr : it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const std::string>> docs_;
};

}  // namespace graspd::runtime
