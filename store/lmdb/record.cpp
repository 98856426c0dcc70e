#include "store/lmdb/record.hpp"

#include <openssl/evp.h>

#include <charconv>

namespace graspd::store::detail {

namespace {

void append_pod(std::string& out, const void* p, std::size_t n) {
  out.append(static_cast<const char*>(p), n);
}

bool is_single_letter_tag(const nostr::Tag& tag) {
  if (tag.size() < 2 || tag[0].size() != 1) return false;
  char c = tag[0][0];
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

std::int64_t expiration_of(const nostr::Event& ev) {
  std::string_view value = ev.first_tag_value("expiration");
  std::int64_t t = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), t);
  if (ec != std::errc{} || end != value.data() + value.size() || t <= 0) return 0;
  return t;
}

std::string encode_record(const nostr::Event& ev, std::int64_t expiration, std::string_view json) {
  std::size_t tags_size = 0;  // the record is allocated once: header, tag index, JSON
  for (const auto& tag : ev.tags)
    if (is_single_letter_tag(tag)) tags_size += 5 + tag[1].size();
  std::string out;
  out.reserve(kHeaderSize + tags_size + json.size());
  append_pod(out, ev.id.data(), 32);
  append_pod(out, ev.pubkey.data(), 32);
  append_pod(out, &ev.created_at, 8);
  append_pod(out, &expiration, 8);
  append_pod(out, &ev.kind, 4);
  auto tags_len = static_cast<std::uint32_t>(tags_size);
  append_pod(out, &tags_len, 4);
  for (const auto& tag : ev.tags) {
    if (!is_single_letter_tag(tag)) continue;
    out.push_back(tag[0][0]);
    auto len = static_cast<std::uint32_t>(tag[1].size());
    append_pod(out, &len, 4);
    out += tag[1];
  }
  out += json;
  return out;
}

bool decode_record(std::string_view bytes, RecordView& out) {
  if (bytes.size() < kHeaderSize) return false;
  auto p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  out.id = p;
  out.pubkey = p + 32;
  std::memcpy(&out.created_at, p + 64, 8);
  std::memcpy(&out.expiration, p + 72, 8);
  std::memcpy(&out.kind, p + 80, 4);
  std::uint32_t tags_len;
  std::memcpy(&tags_len, p + 84, 4);
  if (bytes.size() < kHeaderSize + tags_len) return false;
  out.tags = bytes.substr(kHeaderSize, tags_len);
  out.json = bytes.substr(kHeaderSize + tags_len);
  return true;
}

std::string address_key(const std::uint8_t* pubkey, std::uint32_t kind, std::string_view d) {
  std::string out;
  append_bytes(out, pubkey, 32);
  append_be32(out, kind);
  if (d.size() <= 200) {
    out.push_back('\0');
    out.append(d);
  } else {
    unsigned char digest[32];
    EVP_Digest(d.data(), d.size(), digest, nullptr, EVP_sha256(), nullptr);
    out.push_back('\1');
    append_bytes(out, digest, 32);
  }
  return out;
}

}  // namespace graspd::store::detail
