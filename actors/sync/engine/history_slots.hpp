// The history REQ slots of one connection: the plan keeps SyncConfig::reserved_subscriptions of
// the peer's `max_subscriptions` free of live REQs, and every history REQ (a HistoryPager page, a
// NegentropyHistory id fetch) holds one of them while it is open. Pages and fetches draw from this
// one pool, so together they never take more than the reserve, and a REQ that finds no free slot
// waits in arrival order whichever engine sent it. Pure; owned by the RelayConnection and shared
// by its engines.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>

namespace graspd::sync {

class HistorySlots {
 public:
  /// Who waits for a slot: one number per engine (`join`), so a grant goes back to the engine
  /// that asked.
  using User = std::size_t;
  struct Waiter {
    User user;
    std::string id;
  };

  explicit HistorySlots(std::size_t slots = 2) : slots_(slots == 0 ? 1 : slots) {}

  /// A new user number for an engine.
  User join() { return next_user_++; }
  /// Takes a slot for `id` when one is free and nobody waits ahead; otherwise queues `id` (once)
  /// and returns false: the slot comes later through `grant`.
  bool take(User user, const std::string& id);
  /// A REQ that held a slot ended.
  void give_back();
  /// The first waiter, now holding a slot, when a slot is free.
  std::optional<Waiter> grant();
  /// As `grant`, only when the first waiter is `user`'s (an engine resuming its own REQs).
  std::optional<std::string> grant(User user);
  /// `id` of `user` no longer waits (its subscription closed or moved on).
  void forget(User user, const std::string& id);

  std::size_t in_use() const { return in_use_; }
  std::size_t capacity() const { return slots_; }
  std::size_t waiting() const { return waiting_.size(); }

 private:
  std::size_t slots_;
  std::size_t in_use_ = 0;
  User next_user_ = 0;
  std::deque<Waiter> waiting_;
};

}  // namespace graspd::sync
