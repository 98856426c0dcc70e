#include "actors/relay/engine/outbox.hpp"

#include <utility>

namespace graspd {

Outbox::Outbox(FrameSinkPtr sink, std::function<void()> schedule_flush)
    : sink_(std::move(sink)), schedule_flush_(std::move(schedule_flush)) {}

void Outbox::send(Frame frame) {
  frames_.push_back(std::move(frame));
  schedule();
}

void Outbox::consumed(std::size_t bytes) {
  consumed_unreported_ += bytes;
  schedule();
}

void Outbox::schedule() {
  if (flush_scheduled_) return;
  flush_scheduled_ = true;
  schedule_flush_();
}

void Outbox::flush() {
  flush_scheduled_ = false;
  if (consumed_unreported_ > 0) sink_->consumed(std::exchange(consumed_unreported_, 0));
  if (frames_.size() == 1) sink_->send(std::move(frames_.front()));
  if (frames_.size() > 1) sink_->send_batch(std::move(frames_));
  frames_.clear();
}

}  // namespace graspd
