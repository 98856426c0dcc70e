// Internal on-disk encoding of the store: the event record (value of the
// `events` DB) and the index key layouts. Not part of the public API.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/event.hpp"

namespace graspd::store::detail {

/// Record = fixed header | single-letter tags section | normalized JSON.
/// Header: id[32] pubkey[32] created_at[8] expiration[8] kind[4] tags_len[4]
/// (host byte order: records are never compared, only read back).
/// Tags section: repeated letter[1] value_len[4] value — every tag whose name is
/// one letter and that has a value, in event order (what filters match on).
inline constexpr std::size_t kHeaderSize = 32 + 32 + 8 + 8 + 4 + 4;

/// A decoded view of a record; views point into the record bytes.
struct RecordView {
  const std::uint8_t* id = nullptr;
  const std::uint8_t* pubkey = nullptr;
  std::int64_t created_at = 0;
  std::int64_t expiration = 0;  // 0 = none
  std::uint32_t kind = 0;
  std::string_view tags;  // encoded tags section
  std::string_view json;

  const nostr::EventId& event_id() const { return *reinterpret_cast<const nostr::EventId*>(id); }

  /// Calls fn(letter, value) for each single-letter tag; stops when fn returns true.
  template <class Fn>
  bool any_tag(Fn&& fn) const {
    std::size_t pos = 0;
    while (pos + 5 <= tags.size()) {
      char letter = tags[pos];
      std::uint32_t len;
      std::memcpy(&len, tags.data() + pos + 1, 4);
      std::string_view value = tags.substr(pos + 5, len);
      pos += 5 + len;
      if (fn(letter, value)) return true;
    }
    return false;
  }
  /// First `d` tag value (the address of addressable events).
  std::string_view d_tag() const {
    std::string_view out;
    any_tag([&](char letter, std::string_view value) {
      if (letter != 'd') return false;
      out = value;
      return true;
    });
    return out;
  }
};

bool decode_record(std::string_view bytes, RecordView& out);
std::string encode_record(const nostr::Event& ev, std::int64_t expiration, std::string_view json);

/// NIP-40 expiration timestamp from the tags, 0 when absent or unparsable.
std::int64_t expiration_of(const nostr::Event& ev);

// ---- key building --------------------------------------------------------

/// created_at mapped to an unsigned big-endian-sortable value.
inline std::uint64_t sortable_time(std::int64_t t) {
  return static_cast<std::uint64_t>(t) ^ (std::uint64_t{1} << 63);
}
inline std::int64_t time_from_sortable(std::uint64_t v) {
  return static_cast<std::int64_t>(v ^ (std::uint64_t{1} << 63));
}

inline void append_be64(std::string& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}
inline void append_be32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}
inline std::uint64_t read_be64(const void* p) {
  auto b = static_cast<const std::uint8_t*>(p);
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | b[i];
  return v;
}
inline void append_bytes(std::string& out, const std::uint8_t* p, std::size_t n) {
  out.append(reinterpret_cast<const char*>(p), n);
}

/// Longest tag value kept verbatim in a tag index key (LMDB keys are at most
/// 511 bytes). Longer values are truncated: the key then matches a superset,
/// and every candidate is re-checked against the full filter anyway.
inline constexpr std::size_t kMaxTagKeyValue = 255;

/// Prefix of a tag index key: letter | len | value (truncated).
inline void append_tag_prefix(std::string& out, char letter, std::string_view value) {
  if (value.size() > kMaxTagKeyValue) value = value.substr(0, kMaxTagKeyValue);
  out.push_back(letter);
  out.push_back(static_cast<char>(value.size()));
  out.append(value);
}

inline std::string tag_prefix(char letter, std::string_view value) {
  std::string out;
  append_tag_prefix(out, letter, value);
  return out;
}

/// Address key (pubkey | kind | d) of a replaceable/addressable event; a long
/// `d` is replaced by its SHA-256 so the key stays under LMDB's limit while
/// remaining exact.
std::string address_key(const std::uint8_t* pubkey, std::uint32_t kind, std::string_view d);

}  // namespace graspd::store::detail
