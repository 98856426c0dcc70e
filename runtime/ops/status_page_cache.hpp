// The status page behind GET /, rendered off the network threads and at most once per interval.
// A request finds the newest page: when it is younger than the interval it is handed over at
// once; otherwise the request waits (without holding its network thread) for the next rendering,
// which one renderer thread starts now, and every request that arrives meanwhile shares it. The
// rendering reads the store and parses announcements (runtime/ops/status_page.*); however many
// clients ask, that work happens at most once per interval, on this thread alone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace graspd::runtime {

class StatusPageCache {
 public:
  using Render = std::function<std::string()>;
  using Delivery = std::function<void(std::shared_ptr<const std::string>)>;
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  /// Starts the renderer thread; nothing is rendered before the first request. `clock` is the
  /// steady clock unless a test passes its own.
  StatusPageCache(Render render, std::chrono::milliseconds interval, Clock clock = {});
  /// Stops the renderer after the rendering in progress; requests still waiting get null.
  ~StatusPageCache();
  StatusPageCache(const StatusPageCache&) = delete;
  StatusPageCache& operator=(const StatusPageCache&) = delete;

  /// Hands `deliver` a page whose rendering started less than an interval ago: at once (on the
  /// caller's thread) when there is one, else later on the renderer thread. Null when the
  /// rendering failed (logged). Thread-safe.
  void get(Delivery deliver);

  /// Renderings started so far (tests).
  std::uint64_t renders() const;

 private:
  void run();
  bool fresh(std::chrono::steady_clock::time_point now) const;

  Render render_;
  std::chrono::milliseconds interval_;
  Clock clock_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<const std::string> page_;                       // guarded by mutex_
  std::optional<std::chrono::steady_clock::time_point> started_;  // of page_'s rendering
  std::vector<Delivery> waiting_;                                 // guarded by mutex_
  std::uint64_t renders_ = 0;                                     // guarded by mutex_
  bool stopping_ = false;                                         // guarded by mutex_
  std::thread thread_;
};

}  // namespace graspd::runtime
