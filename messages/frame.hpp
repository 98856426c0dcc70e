// One outbound WebSocket text message, in up to three pieces the transport writes as one message:
// a small owned head, a body that every recipient shares, and a small owned tail. A frame of one
// piece (NOTICE, OK, EOSE) is all body. An EVENT frame for one subscription is the head
// `["EVENT","<subid>",`, the event's JSON as the body and `]` as the tail, so delivering one event
// to a thousand subscriptions holds one copy of its JSON and a thousand heads, not a thousand
// copies of the event. Immutable once built; copies share the body. No CAF, no Beast.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace graspd {

class Frame {
 public:
  Frame() = default;
  /// A whole frame; implicit so a shared text is a frame.
  Frame(std::shared_ptr<const std::string> text)  // NOLINT(google-explicit-constructor)
      : body_(std::move(text)) {}
  /// `deflate_now`: on a compressing connection the body is compressed on the way out even when
  /// no compressed copy is cached yet (see deflate_now()).
  Frame(std::string head, std::shared_ptr<const std::string> body, std::string tail,
        bool deflate_now = false)
      : head_(std::move(head)),
        body_(std::move(body)),
        tail_(std::move(tail)),
        deflate_now_(deflate_now) {}

  /// False for the empty frame (no body).
  explicit operator bool() const { return body_ != nullptr; }

  std::string_view head() const { return head_; }
  std::string_view body() const { return body_ ? std::string_view(*body_) : std::string_view(); }
  std::string_view tail() const { return tail_; }
  /// The shared piece, to tell frames that hold the same one apart.
  const std::shared_ptr<const std::string>& shared_body() const { return body_; }
  /// Bytes before latency: a compressing connection sends the body compressed even the first
  /// time (the transport's cache otherwise sends an uncached body plain and compresses it for
  /// later, runtime/net/ws_deflate.hpp). Set on events a client fetched by id.
  bool deflate_now() const { return deflate_now_; }

  /// Bytes of the message on the wire (before compression).
  std::size_t size() const { return head_.size() + body().size() + tail_.size(); }
  /// The whole message as one string (tests, logs); copies the body.
  std::string text() const {
    std::string out;
    out.reserve(size());
    out.append(head_).append(body()).append(tail_);
    return out;
  }

 private:
  std::string head_;
  std::shared_ptr<const std::string> body_;
  std::string tail_;
  bool deflate_now_ = false;
};

}  // namespace graspd
