#include "messages/nostr/json.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cstring>
#include <string>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/text_scan.hpp"

namespace graspd::nostr {

namespace {

using detail::view_of;
using rapidjson::Value;

// Largest created_at JavaScript represents exactly: beyond it nostr-tools
// serializes a different number and therefore computes a different id.
constexpr std::int64_t kMaxCreatedAt = 9007199254740991;  // 2^53 - 1
constexpr std::uint64_t kMaxKind = 65535;
constexpr std::size_t kParsePadding = 16;
constexpr std::size_t kKeptParseBuffer = 256 * 1024;  // a larger message's copy is freed after it

std::string invalid(std::string_view what) {
  std::string out = "invalid: ";
  out += what;
  return out;
}

int lower_hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Event fields must be lowercase hex (NIP-01); from_hex also accepts uppercase.
template <std::size_t N>
bool read_lower_hex(const Value& v, std::array<std::uint8_t, N>& out) {
  if (!v.IsString() || v.GetStringLength() != 2 * N) return false;
  const char* s = v.GetString();
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = lower_hex_value(s[2 * i]);
    const int lo = lower_hex_value(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

// Strings from RapidJSON are valid UTF-8 except for surrogates decoded from
// lone \uXXXX escapes, which JavaScript would re-escape differently.
bool read_text(const Value& v, std::string& out) {
  if (!v.IsString()) return false;
  const std::string_view text = view_of(v);
  if (detail::has_surrogate(text)) return false;
  out.assign(text);
  return true;
}

// --- events ---------------------------------------------------------------

enum class EventField : unsigned { id, pubkey, created_at, kind, tags, content, sig, count };
constexpr const char* kEventFieldNames[] = {"id",   "pubkey",  "created_at", "kind",
                                            "tags", "content", "sig"};
constexpr unsigned kAllEventFields = (1u << static_cast<unsigned>(EventField::count)) - 1;

std::optional<EventField> event_field(std::string_view key) {
  for (unsigned i = 0; i < static_cast<unsigned>(EventField::count); ++i)
    if (key == kEventFieldNames[i]) return static_cast<EventField>(i);
  return std::nullopt;
}

std::string read_tags(const Value& v, Tags& tags, const ParseLimits& limits) {
  if (!v.IsArray()) return invalid("tags must be an array");
  if (v.Size() > limits.max_event_tags) return invalid("too many tags");
  tags.resize(v.Size());
  for (rapidjson::SizeType t = 0; t < v.Size(); ++t) {
    const Value& tag = v[t];
    if (!tag.IsArray()) return invalid("each tag must be an array of strings");
    if (tag.Size() > limits.max_tag_elements) return invalid("tag has too many elements");
    tags[t].resize(tag.Size());
    for (rapidjson::SizeType e = 0; e < tag.Size(); ++e)
      if (!read_text(tag[e], tags[t][e]))
        return invalid(tag[e].IsString() ? "unpaired UTF-16 surrogate in tag"
                                         : "each tag must be an array of strings");
  }
  return {};
}

std::string read_event_field(EventField field, const Value& v, Event& ev,
                             const ParseLimits& limits) {
  switch (field) {
    case EventField::id:
      return read_lower_hex(v, ev.id) ? std::string{} : invalid("bad id");
    case EventField::pubkey:
      return read_lower_hex(v, ev.pubkey) ? std::string{} : invalid("bad pubkey");
    case EventField::sig:
      return read_lower_hex(v, ev.sig) ? std::string{} : invalid("bad sig");
    case EventField::created_at:
      if (!v.IsInt64() || v.GetInt64() < 0 || v.GetInt64() > kMaxCreatedAt)
        return invalid("bad created_at");
      ev.created_at = v.GetInt64();
      return {};
    case EventField::kind:
      if (!v.IsUint64() || v.GetUint64() > kMaxKind) return invalid("bad kind");
      ev.kind = static_cast<std::uint32_t>(v.GetUint64());
      return {};
    case EventField::tags:
      return read_tags(v, ev.tags, limits);
    case EventField::content:
      if (!v.IsString()) return invalid("content must be a string");
      if (v.GetStringLength() > limits.max_content_length) return invalid("content too large");
      return read_text(v, ev.content) ? std::string{}
                                      : invalid("unpaired UTF-16 surrogate in content");
    case EventField::count:
      break;
  }
  return invalid("unknown field");
}

// --- filters --------------------------------------------------------------

template <std::size_t N>
std::string read_hex_list(const Value& v,
                          std::optional<std::vector<std::array<std::uint8_t, N>>>& out,
                          std::string_view name, const ParseLimits& limits) {
  const std::string bad = invalid(std::string(name) + " must be an array of 64-hex strings");
  if (!v.IsArray()) return bad;
  if (v.Size() > limits.max_values_per_filter) return invalid("too many " + std::string(name));
  out.emplace(v.Size());
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i)
    if (!v[i].IsString() || !from_hex(view_of(v[i]), (*out)[i])) return bad;
  return {};
}

std::string read_kinds(const Value& v, Filter& f, const ParseLimits& limits) {
  const std::string bad = invalid("kinds must be an array of integers 0..65535");
  if (!v.IsArray()) return bad;
  if (v.Size() > limits.max_values_per_filter) return invalid("too many kinds");
  f.kinds.emplace();
  f.kinds->reserve(v.Size());
  for (const Value& k : v.GetArray()) {
    if (!k.IsUint64() || k.GetUint64() > kMaxKind) return bad;
    f.kinds->push_back(static_cast<std::uint32_t>(k.GetUint64()));
  }
  return {};
}

std::string read_tag_values(char letter, const Value& v, Filter& f, const ParseLimits& limits) {
  const std::string name = std::string("#") + letter;
  const std::string bad = invalid(name + " must be an array of strings");
  if (!v.IsArray()) return bad;
  if (v.Size() > limits.max_values_per_filter) return invalid("too many " + name + " values");
  auto& values = f.tags[letter];
  values.resize(v.Size());
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i)
    if (!read_text(v[i], values[i])) return bad;
  return {};
}

template <class T>
std::string read_non_negative(const Value& v, std::optional<T>& out, std::string_view name) {
  if (!v.IsInt64() || v.GetInt64() < 0)
    return invalid(std::string(name) + " must be a non-negative integer");
  out = static_cast<T>(v.GetInt64());
  return {};
}

bool is_tag_key(std::string_view key) {
  if (key.size() != 2 || key[0] != '#') return false;
  const char c = key[1];
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Untrusted keys are echoed in errors: keep them short.
std::string quoted_key(std::string_view key) {
  constexpr std::size_t kMaxShown = 32;
  std::string out = "\"";
  out += key.substr(0, kMaxShown);
  if (key.size() > kMaxShown) out += "...";
  out += '"';
  return out;
}

std::string read_filter_member(std::string_view key, const Value& v, Filter& f,
                               const ParseLimits& limits) {
  if (key == "ids") return f.ids ? invalid("duplicate ids") : read_hex_list(v, f.ids, key, limits);
  if (key == "authors")
    return f.authors ? invalid("duplicate authors") : read_hex_list(v, f.authors, key, limits);
  if (key == "kinds") return f.kinds ? invalid("duplicate kinds") : read_kinds(v, f, limits);
  if (key == "since")
    return f.since ? invalid("duplicate since") : read_non_negative(v, f.since, key);
  if (key == "until")
    return f.until ? invalid("duplicate until") : read_non_negative(v, f.until, key);
  if (key == "limit")
    return f.limit ? invalid("duplicate limit") : read_non_negative(v, f.limit, key);
  if (is_tag_key(key)) {
    if (f.tags.count(key[1]) != 0) return invalid("duplicate " + std::string(key));
    return read_tag_values(key[1], v, f, limits);
  }
  return invalid("unsupported filter field " + quoted_key(key));
}

// --- serialization helpers -----------------------------------------------

template <class List, class Fn>
void append_list(std::string& out, const List& list, Fn&& append_one) {
  out += '[';
  bool first = true;
  for (const auto& item : list) {
    if (!first) out += ',';
    first = false;
    append_one(item);
  }
  out += ']';
}

template <std::size_t N>
void append_quoted_hex(std::string& out, const std::array<std::uint8_t, N>& bytes) {
  out += '"';
  append_hex(out, bytes.data(), N);
  out += '"';
}

template <std::size_t N>
void append_hex_list(std::string& out, const std::vector<std::array<std::uint8_t, N>>& list) {
  append_list(out, list, [&](const auto& bytes) { append_quoted_hex(out, bytes); });
}

class ObjectWriter {
 public:
  explicit ObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
  ~ObjectWriter() { out_ += '}'; }
  ObjectWriter(const ObjectWriter&) = delete;
  ObjectWriter& operator=(const ObjectWriter&) = delete;

  std::string& key(std::string_view name) {
    if (!first_) out_ += ',';
    first_ = false;
    append_json_string(out_, name);
    out_ += ':';
    return out_;
  }

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace

std::string_view detail::view_of(const rapidjson::Value& v) {
  return {v.GetString(), v.GetStringLength()};
}

// --- detail -----------------------------------------------------------------

std::size_t detail::nesting_depth(std::string_view json, std::size_t limit) {
  std::size_t depth = 0;
  std::size_t max_depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    if (in_string) {
      while (i + 8 <= json.size() && scan::no_quote_or_backslash(json.data() + i)) i += 8;
      if (i == json.size()) break;
      if (json[i] == '\\')
        ++i;
      else if (json[i] == '"')
        in_string = false;
      continue;
    }
    const char c = json[i];
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth && (max_depth = depth) > limit) return max_depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

bool detail::has_surrogate(std::string_view utf8) {
  // U+D800..U+DFFF encode as ED A0..BF xx.
  for (std::size_t i = 0; i + 1 < utf8.size(); ++i) {
    const void* hit = std::memchr(utf8.data() + i, 0xed, utf8.size() - 1 - i);
    if (hit == nullptr) return false;
    i = static_cast<std::size_t>(static_cast<const char*>(hit) - utf8.data());
    if (static_cast<unsigned char>(utf8[i + 1]) >= 0xa0) return true;
  }
  return false;
}

std::string detail::parse_document(std::string_view json, rapidjson::Document& doc,
                                   const ParseLimits& limits) {
  // RapidJSON reads a raw NUL as end of input and would ignore what follows;
  // valid JSON never contains one (a NUL in a string must be \u0000).
  if (std::memchr(json.data(), '\0', json.size()) != nullptr)
    return invalid("malformed JSON: raw NUL byte");
  if (nesting_depth(json, limits.max_nesting) > limits.max_nesting)
    return invalid("JSON nested too deeply");
  // RapidJSON's own validation decodes every character; this one skips ASCII a word at a time.
  if (!scan::valid_utf8(json)) return invalid("malformed JSON: Invalid encoding in string.");
  // A NUL-terminated copy (no NUL inside, checked above) parses faster than a length-bounded
  // stream; the padding keeps RapidJSON's 16-byte SIMD reads, where enabled, inside the buffer.
  thread_local std::string text;
  text.assign(json);
  text.append(kParsePadding, '\0');
  doc.Parse<rapidjson::kParseIterativeFlag>(text.c_str());
  if (text.capacity() > kKeptParseBuffer) std::string().swap(text);
  if (doc.HasParseError())
    return invalid(std::string("malformed JSON: ") +
                   rapidjson::GetParseError_En(doc.GetParseError()));
  return {};
}

// --- public -----------------------------------------------------------------

Parsed<Event> parse_event(const rapidjson::Value& value, const ParseLimits& limits) {
  using Result = Parsed<Event>;
  if (!value.IsObject()) return Result::failure(invalid("event must be a JSON object"));
  Event ev;
  unsigned seen = 0;
  for (auto m = value.MemberBegin(); m != value.MemberEnd(); ++m) {
    const auto field = event_field(view_of(m->name));
    if (!field) continue;  // unknown extra fields are ignored (NIP-01 leaves room for them)
    const unsigned bit = 1u << static_cast<unsigned>(*field);
    if ((seen & bit) != 0)
      return Result::failure(invalid(std::string("duplicate field ") +
                                     kEventFieldNames[static_cast<unsigned>(*field)]));
    seen |= bit;
    std::string error = read_event_field(*field, m->value, ev, limits);
    if (!error.empty()) return Result::failure(std::move(error));
  }
  if (seen == kAllEventFields) return ev;
  unsigned missing = 0;
  while ((seen & (1u << missing)) != 0) ++missing;
  return Result::failure(invalid(std::string("missing field ") + kEventFieldNames[missing]));
}

Parsed<Event> parse_event(std::string_view json, const ParseLimits& limits) {
  if (json.size() > limits.max_event_bytes)
    return Parsed<Event>::failure(invalid("event too large"));
  rapidjson::Document doc;
  std::string error = detail::parse_document(json, doc, limits);
  if (!error.empty()) return Parsed<Event>::failure(std::move(error));
  return parse_event(static_cast<const rapidjson::Value&>(doc), limits);
}

Parsed<Filter> parse_filter(const rapidjson::Value& value, const ParseLimits& limits) {
  using Result = Parsed<Filter>;
  if (!value.IsObject()) return Result::failure(invalid("filter must be a JSON object"));
  Filter f;
  for (auto m = value.MemberBegin(); m != value.MemberEnd(); ++m) {
    std::string error = read_filter_member(view_of(m->name), m->value, f, limits);
    if (!error.empty()) return Result::failure(std::move(error));
  }
  f.normalize();
  return f;
}

Parsed<Filter> parse_filter(std::string_view json, const ParseLimits& limits) {
  if (json.size() > limits.max_message_bytes)
    return Parsed<Filter>::failure(invalid("filter too large"));
  rapidjson::Document doc;
  std::string error = detail::parse_document(json, doc, limits);
  if (!error.empty()) return Parsed<Filter>::failure(std::move(error));
  return parse_filter(static_cast<const rapidjson::Value&>(doc), limits);
}

std::string serialize_event(const Event& ev) {
  std::string out;
  out.reserve(200 + estimated_json_size(ev));
  {
    ObjectWriter obj(out);
    append_quoted_hex(obj.key("id"), ev.id);
    append_quoted_hex(obj.key("pubkey"), ev.pubkey);
    obj.key("created_at") += std::to_string(ev.created_at);
    obj.key("kind") += std::to_string(ev.kind);
    append_tags_json(obj.key("tags"), ev.tags);
    append_json_string(obj.key("content"), ev.content);
    append_quoted_hex(obj.key("sig"), ev.sig);
  }
  return out;
}

std::string serialize_filter(const Filter& filter) {
  std::string out;
  {
    ObjectWriter obj(out);
    if (filter.ids) append_hex_list(obj.key("ids"), *filter.ids);
    if (filter.authors) append_hex_list(obj.key("authors"), *filter.authors);
    if (filter.kinds)
      append_list(obj.key("kinds"), *filter.kinds,
                  [&](std::uint32_t k) { out += std::to_string(k); });
    for (const auto& [letter, values] : filter.tags) {
      const char name[2] = {'#', letter};
      append_list(obj.key(std::string_view(name, 2)), values,
                  [&](const std::string& v) { append_json_string(out, v); });
    }
    if (filter.since) obj.key("since") += std::to_string(*filter.since);
    if (filter.until) obj.key("until") += std::to_string(*filter.until);
    if (filter.limit) obj.key("limit") += std::to_string(*filter.limit);
  }
  return out;
}

}  // namespace graspd::nostr
