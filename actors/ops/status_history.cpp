#include "actors/ops/status_history.hpp"

#include "actors/ops/status_json.hpp"

namespace graspd::actors {

namespace {

std::uint64_t growth(std::uint64_t now, std::uint64_t before) {
  return now >= before ? now - before : now;  // restarted from zero
}

void tick(StatusHistoryActor self) {
  auto& state = self->state;
  auto now = state.options.unix_now();
  state.series.add(now, state.options.sample());
  state.options.publish(state.series.json(now));
}

}  // namespace

void ActivitySeries::add(std::int64_t now, const ActivitySample& sample) {
  auto start = now - now % bucket_secs_;
  if (buckets_.empty() || buckets_.back().start < start) buckets_.push_back({start, 0, 0});
  if (last_) {
    buckets_.back().stored += growth(sample.stored, last_->stored);
    buckets_.back().synced += growth(sample.synced, last_->synced);
  }
  last_ = sample;
  auto window = bucket_secs_ * static_cast<std::int64_t>(max_buckets_);
  while (buckets_.size() > max_buckets_ || buckets_.front().start <= now - window)
    buckets_.pop_front();
}

std::string ActivitySeries::json(std::int64_t now) const {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("bucket_secs");
  w.Int64(bucket_secs_);
  w.Key("now");
  w.Int64(now);
  w.Key("buckets");
  w.StartArray();
  for (const auto& bucket : buckets_) {
    w.StartObject();
    w.Key("start");
    w.Int64(bucket.start);
    write_count(w, "stored", bucket.stored);
    write_count(w, "synced", bucket.synced);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

status_history_actor::behavior_type status_history(StatusHistoryActor self,
                                                   StatusHistoryOptions options) {
  self->state.series = ActivitySeries(options.bucket_secs, options.buckets);
  self->state.options = std::move(options);
  tick(self);
  self->delayed_send(self, self->state.options.interval, atom::tick::value);
  return {
      [=](atom::tick) {
        tick(self);
        self->delayed_send(self, self->state.options.interval, atom::tick::value);
      },
  };
}

}  // namespace graspd::actors
