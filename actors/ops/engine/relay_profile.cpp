#include "actors/ops/engine/relay_profile.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>

namespace graspd::ops {

namespace {

constexpr std::uint32_t profile_kind = 0;
constexpr std::uint32_t relay_list_kind = 10002;

/// {"name":..,"about":..,"nip05":"_@<domain>"}, keys in that order (a relay's copy is compared
/// as text).
std::string profile_json(const RelayProfileContent& content) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  auto field = [&writer](const char* key, const std::string& value) {
    writer.Key(key);
    writer.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
  };
  writer.StartObject();
  field("name", content.name);
  field("about", content.about);
  field("nip05", "_@" + content.domain);
  writer.EndObject();
  return buffer.GetString();
}

}  // namespace

std::vector<nostr::Event> relay_profile_events(const RelayProfileContent& content,
                                               std::int64_t created_at) {
  nostr::Event profile;
  profile.kind = profile_kind;
  profile.created_at = created_at;
  profile.content = profile_json(content);
  nostr::Event relays;
  relays.kind = relay_list_kind;
  relays.created_at = created_at;
  relays.tags = {{"r", content.relay_url}};
  return {profile, relays};
}

nostr::Filter relay_profile_filter(const nostr::Pubkey& author) {
  nostr::Filter filter;
  filter.authors = std::vector<nostr::Pubkey>{author};
  filter.kinds = std::vector<std::uint32_t>{profile_kind, relay_list_kind};
  return filter;
}

void ProfileExchange::offer(const nostr::Event& theirs) {
  auto ours = std::find_if(ours_.begin(), ours_.end(), [&](const nostr::Event& ev) {
    return ev.kind == theirs.kind && ev.pubkey == theirs.pubkey;
  });
  if (ours == ours_.end()) return;
  auto known = std::find_if(theirs_.begin(), theirs_.end(),
                            [&](const nostr::Event& ev) { return ev.kind == theirs.kind; });
  if (known == theirs_.end())
    theirs_.push_back(theirs);
  else if (theirs.created_at > known->created_at)
    *known = theirs;
}

std::vector<nostr::Event> ProfileExchange::needed() const {
  std::vector<nostr::Event> out;
  for (const auto& ours : ours_) {
    auto theirs = std::find_if(theirs_.begin(), theirs_.end(),
                               [&](const nostr::Event& ev) { return ev.kind == ours.kind; });
    if (theirs == theirs_.end() || theirs->content != ours.content || theirs->tags != ours.tags)
      out.push_back(ours);
  }
  return out;
}

}  // namespace graspd::ops
