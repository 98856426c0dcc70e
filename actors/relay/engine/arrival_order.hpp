// ArrivalOrder: completions taken back in the order their work arrived. An actor reserves a ticket
// when a piece of work arrives (an EVENT whose signature check goes out to a verifier, a frame that
// must wait behind such an EVENT), completes the ticket whenever the answer comes back, in any
// order, and drains: the completed values at the head come out in arrival order, and the first
// ticket still out holds back everything after it. Pure and CAF-free, so the ordering rule is
// tested alone; the client session and the relay connection both keep one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <stdexcept>
#include <utility>

namespace graspd {

template <class T>
class ArrivalOrder {
 public:
  /// Arrival number of a piece of work: the first reserve() returns 0, the next 1, and so on.
  using Ticket = std::uint64_t;

  /// Takes the next place in the arrival order.
  Ticket reserve() {
    slots_.emplace_back();
    ++in_flight_;
    return front_ + slots_.size() - 1;
  }

  /// Stores the outcome of `ticket`. Throws std::logic_error for a ticket never reserved, already
  /// drained or completed twice: each is a bug in the owner, and a silent overwrite would reorder.
  void complete(Ticket ticket, T value) {
    if (ticket < front_ || ticket - front_ >= slots_.size())
      throw std::logic_error("ArrivalOrder: ticket not reserved or already drained");
    auto& slot = slots_[ticket - front_];
    if (slot) throw std::logic_error("ArrivalOrder: ticket completed twice");
    slot.emplace(std::move(value));
    --in_flight_;
  }

  /// Calls `f(T&&)` for each completed value at the head, in arrival order, and stops at the first
  /// ticket still out. Each value leaves the queue before `f` runs, so `f` may reserve, complete
  /// and drain again (a nested drain continues from the new head; the order stays the same).
  template <class F>
  void drain(F&& f) {
    while (!slots_.empty() && slots_.front()) {
      T value = std::move(*slots_.front());
      slots_.pop_front();
      ++front_;
      f(std::move(value));
    }
  }

  /// Reserved and not drained yet (completed or not).
  std::size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  /// Reserved and not completed yet.
  std::size_t in_flight() const { return in_flight_; }
  /// The ticket the next drained value has (the head's).
  Ticket front() const { return front_; }

 private:
  std::deque<std::optional<T>> slots_;
  Ticket front_ = 0;  // ticket of slots_.front()
  std::size_t in_flight_ = 0;
};

}  // namespace graspd
