// VerifierPool: one actor's signature checks on the shared verifier actors. It picks the
// verifiers in turn and keeps at most `max_out` of the owner's checks out at once; the rest wait
// here and go out as answers come back. The cap is what keeps one flooding owner from filling the
// mailboxes every other owner's checks go through. Answers are handed back in the order they
// arrive; an owner that needs arrival order puts them through an ArrivalOrder.
//
// One pool per owner actor, kept in its state: the requests capture the pool, so it must stay
// where it is while checks are out (actor state does).
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "actors/relay/verifier.hpp"
#include "messages/interfaces.hpp"
#include "messages/nostr/verify.hpp"

namespace graspd {

class VerifierPool {
 public:
  /// nullopt: the verifier failed (it is only gone when the daemon shuts down).
  using Answer = std::optional<nostr::EventCheck>;
  using OnAnswer = std::function<void(Answer)>;

  VerifierPool() = default;
  /// No verifiers: every check runs inline, in check().
  VerifierPool(std::vector<verifier_actor> verifiers, std::size_t max_out);

  VerifierPool(const VerifierPool&) = delete;
  VerifierPool& operator=(const VerifierPool&) = delete;
  VerifierPool(VerifierPool&&) = default;
  VerifierPool& operator=(VerifierPool&&) = default;

  /// Checks `request.event` for `self` and calls `on_answer` with the result: inline when there are
  /// no verifiers, otherwise in a later message once a verifier answered.
  template <class Self>
  void check(Self self, VerifyEvent request, OnAnswer on_answer) {
    if (verifiers_.empty()) return on_answer(check_request(request));
    waiting_.push_back({std::move(request), std::move(on_answer)});
    send_waiting(self);
  }

  bool inline_only() const { return verifiers_.empty(); }
  /// Checks out on the verifiers right now (never more than max_out()).
  std::size_t out() const { return out_; }
  /// Checks held back by the cap.
  std::size_t waiting() const { return waiting_.size(); }
  std::size_t max_out() const { return max_out_; }

 private:
  struct Waiting {
    VerifyEvent request;
    OnAnswer on_answer;
  };

  /// The verifier whose turn it is.
  const verifier_actor& next_verifier();

  template <class Self>
  void send_waiting(Self self) {
    while (out_ < max_out_ && !waiting_.empty()) {
      auto on_answer = std::make_shared<OnAnswer>(std::move(waiting_.front().on_answer));
      auto request = std::move(waiting_.front().request);
      waiting_.pop_front();
      ++out_;
      self->request(next_verifier(), caf::infinite, std::move(request))
          .then([this, self,
                 on_answer](nostr::EventCheck check) { answered(self, *on_answer, check); },
                [this, self, on_answer](const caf::error&) {
                  answered(self, *on_answer, std::nullopt);
                });
    }
  }

  template <class Self>
  void answered(Self self, const OnAnswer& on_answer, Answer answer) {
    --out_;
    // The freed slot goes out before the owner sees the answer, so the verifiers stay busy.
    send_waiting(self);
    on_answer(answer);
  }

  std::vector<verifier_actor> verifiers_;
  std::size_t max_out_ = 1;
  std::size_t turn_ = 0;
  std::size_t out_ = 0;
  std::deque<Waiting> waiting_;
};

}  // namespace graspd
