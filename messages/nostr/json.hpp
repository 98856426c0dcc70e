// Strict JSON parsing and normalized serialization of events and filters.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <rapidjson/fwd.h>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "messages/result.hpp"

namespace graspd::nostr {

/// Bounds applied to untrusted JSON. Defaults follow docs/spec/protocol.md §5
/// (NGIT_MAX_MESSAGE_BYTES / NGIT_MAX_EVENT_BYTES) and leave ample room for
/// NIP-34 events (30618 state events carry one tag per ref).
struct ParseLimits {
  std::size_t max_message_bytes = 1048576;
  std::size_t max_event_bytes = 524288;
  std::size_t max_event_tags = 10000;
  std::size_t max_tag_elements = 1000;
  std::size_t max_content_length = 524288;
  std::size_t max_subid_length = 64;
  std::size_t max_filters = 100;
  /// Per list: ids, authors, kinds and each #x list.
  std::size_t max_values_per_filter = 5000;
  /// Array/object depth of a whole frame. An EVENT frame needs 4.
  std::size_t max_nesting = 10;
};

/// What a parser returns: the value or the reason it was refused (the one Result type). For
/// events, filters and client messages the error is a complete NIP-01 machine-readable message,
/// prefix included (e.g. "invalid: bad pubkey"), ready for OK/CLOSED/NOTICE.
template <class T, class E = std::string>
using Parsed = Result<T, E>;

/// Parses one event object. Strict: exactly the seven NIP-01 fields with the
/// right types (unknown extra fields are ignored, a repeated known field is
/// refused); id/pubkey 64 and sig 128 LOWERCASE hex digits; created_at an
/// integer in [0, 2^53-1] (beyond that JavaScript clients compute other ids);
/// kind an integer in [0, 65535]; tags an array of arrays of strings; valid
/// UTF-8 and no lone surrogates anywhere. Does not check id or signature.
Parsed<Event> parse_event(std::string_view json, const ParseLimits& limits);
/// Same rules on an already parsed value (used inside client messages; the
/// caller has applied max_event_bytes and UTF-8 validation).
Parsed<Event> parse_event(const rapidjson::Value& value, const ParseLimits& limits);

/// Parses one NIP-01 filter: ids/authors (exact 64-hex, either case),
/// kinds (0..65535), "#x" for a single letter a-z/A-Z (arrays of strings),
/// since/until/limit (non-negative integers). Any other key is refused with
/// "unsupported filter field" (like strfry): silently ignoring e.g. NIP-50
/// "search" would answer with far more than asked. Result is normalize()d.
Parsed<Filter> parse_filter(std::string_view json, const ParseLimits& limits);
Parsed<Filter> parse_filter(const rapidjson::Value& value, const ParseLimits& limits);

/// Normalized event JSON, keys in order id,pubkey,created_at,kind,tags,
/// content,sig; strings escaped like JSON.stringify. What a relay sends.
std::string serialize_event(const Event& ev);

/// Filter JSON, keys in order ids,authors,kinds,#x...,since,until,limit.
std::string serialize_filter(const Filter& filter);

namespace detail {
/// Largest array/object depth in `json` (strings skipped), stopping early
/// once `limit` is exceeded. Checked before a DOM parse so hostile nesting
/// can neither overflow the stack nor make destruction recursive.
std::size_t nesting_depth(std::string_view json, std::size_t limit);
/// Parses `json` into `doc` (UTF-8 validated by scan::valid_utf8 first, then
/// RapidJSON's iterative parser without its own validation, on a padded
/// NUL-terminated copy); returns an error message ("invalid: ...") or empty on
/// success. Not in situ, and not with RapidJSON's validator: RapidJSON 1.1's
/// validator reads up to 3 bytes past the end of a NUL-terminated in-situ
/// buffer (found by fuzzing).
std::string parse_document(std::string_view json, rapidjson::Document& doc,
                           const ParseLimits& limits);
/// Whether a parsed string contains an encoded UTF-16 surrogate (RapidJSON
/// 1.1 decodes a lone "\udc00" escape into one).
bool has_surrogate(std::string_view utf8);
/// The bytes of a parsed JSON string value (which must be a string).
std::string_view view_of(const rapidjson::Value& v);
}  // namespace detail

}  // namespace graspd::nostr
