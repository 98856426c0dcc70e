#include "messages/nostr/canonical.hpp"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

#include "messages/nostr/text_scan.hpp"

namespace graspd::nostr {

namespace {

// Characters that need an escape are exactly those below 0x20 plus `"` and `\`.
constexpr bool needs_escape(unsigned char c) {
  return c < 0x20 || c == '"' || c == '\\';
}

void append_escape(std::string& out, unsigned char c) {
  static constexpr char hex[] = "0123456789abcdef";
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default: {
      const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0x0f]};
      out.append(esc, sizeof esc);
    }
  }
}

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 when the
// bytes there are not valid UTF-8 (overlong, surrogate, > U+10FFFF, truncated).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (byte(k) & 0xc0) == 0x80; };
  const unsigned char c = byte(0);
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && byte(1) < 0xa0) return 0;   // overlong
    if (c == 0xed && byte(1) >= 0xa0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && byte(1) < 0x90) return 0;   // overlong
    if (c == 0xf4 && byte(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

// Explicit fetch once: the implicit fetch inside EVP_DigestInit costs ~40 %
// on small inputs (docs/toolchain.md §6).
const EVP_MD* sha256_md() {
  static const EVP_MD* md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (fetched == nullptr) throw std::runtime_error("OpenSSL: SHA256 unavailable");
    return fetched;
  }();
  return md;
}

EVP_MD_CTX* thread_md_ctx() {
  thread_local std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx{EVP_MD_CTX_new()};
  if (!ctx) throw std::runtime_error("OpenSSL: EVP_MD_CTX_new failed");
  return ctx.get();
}

}  // namespace

std::size_t estimated_json_size(const Event& ev) {
  std::size_t size = 200 + ev.content.size() + ev.content.size() / 16;  // a few escapes
  for (const auto& tag : ev.tags) {
    size += 3;  // [], and the comma
    for (const auto& value : tag) size += value.size() + 3;
  }
  return size;
}

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  std::size_t run_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    // Content is mostly text without escapes: skip it eight bytes at a time.
    while (i + 8 <= text.size() && scan::none_needs_escape(text.data() + i)) i += 8;
    if (i == text.size()) break;
    const auto c = static_cast<unsigned char>(text[i]);
    if (!needs_escape(c)) continue;
    out.append(text.data() + run_start, i - run_start);
    append_escape(out, c);
    run_start = i + 1;
  }
  out.append(text.data() + run_start, text.size() - run_start);
  out += '"';
}

void append_json_string_sanitized(std::string& out, std::string_view text) {
  out += '"';
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (needs_escape(c)) {
      append_escape(out, c);
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
      continue;
    }
    out.append(text.data() + i, n);
    i += n;
  }
  out += '"';
}

void append_tags_json(std::string& out, const Tags& tags) {
  out += '[';
  for (std::size_t t = 0; t < tags.size(); ++t) {
    if (t != 0) out += ',';
    out += '[';
    for (std::size_t e = 0; e < tags[t].size(); ++e) {
      if (e != 0) out += ',';
      append_json_string(out, tags[t][e]);
    }
    out += ']';
  }
  out += ']';
}

std::string canonical_serialization(const Event& ev) {
  std::string out;
  out.reserve(estimated_json_size(ev));
  out += "[0,\"";
  append_hex(out, ev.pubkey.data(), ev.pubkey.size());
  out += "\",";
  out += std::to_string(ev.created_at);
  out += ',';
  out += std::to_string(ev.kind);
  out += ',';
  append_tags_json(out, ev.tags);
  out += ',';
  append_json_string(out, ev.content);
  out += ']';
  return out;
}

Bytes32 sha256(std::string_view data) {
  EVP_MD_CTX* ctx = thread_md_ctx();
  Bytes32 digest{};
  unsigned int length = 0;
  if (EVP_DigestInit_ex2(ctx, sha256_md(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx, data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx, digest.data(), &length) != 1 || length != digest.size())
    throw std::runtime_error("OpenSSL: SHA-256 failed");
  return digest;
}

EventId compute_id(const Event& ev) {
  return sha256(canonical_serialization(ev));
}

}  // namespace graspd::nostr
