// The NIP-01 id serialization and JSON string escaping shared by every
// serializer in messages/nostr.
#pragma once

#include <string>
#include <string_view>

#include "messages/nostr/event.hpp"

namespace graspd::nostr {

/// Appends `text` as a JSON string literal (with quotes), escaped exactly like
/// JavaScript's JSON.stringify: `"` `\` and \b \f \n \r \t as two-character
/// escapes, every other byte below 0x20 as \u00xx with LOWERCASE hex, every
/// other byte verbatim (`/`, DEL and all non-ASCII included). RapidJSON's
/// Writer uses uppercase hex, which changes event ids: never use it for ids.
/// `text` is expected to be valid UTF-8 (parsed input always is).
void append_json_string(std::string& out, std::string_view text);

/// Same escaping, but invalid UTF-8 sequences become U+FFFD so the output is
/// always valid JSON. For untrusted text of unknown origin (relay messages).
void append_json_string_sanitized(std::string& out, std::string_view text);

/// Appends tags as a JSON array of arrays of strings (append_json_string escaping).
void append_tags_json(std::string& out, const Tags& tags);
/// Bytes to reserve for the canonical serialisation of `ev`: tags, content and the fixed fields,
/// with room for a few escapes (the stored JSON adds the id, sig and keys: ~200 more).
std::size_t estimated_json_size(const Event& ev);

/// `[0,<pubkey>,<created_at>,<kind>,<tags>,<content>]`, byte-identical to
/// JSON.stringify of the same array: the preimage of the event id.
std::string canonical_serialization(const Event& ev);

/// SHA-256 of canonical_serialization(ev).
EventId compute_id(const Event& ev);

/// SHA-256 of arbitrary bytes (OpenSSL EVP, digest fetched once per process).
Bytes32 sha256(std::string_view data);

}  // namespace graspd::nostr
