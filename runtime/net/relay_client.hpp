// Outbound WebSocket transport for the sync engine: one connection to one
// remote relay (ws:// or wss:// with certificate + hostname verification and
// SNI), on the shared network io_context. It knows no actor and no Nostr
// beyond fetching the peer's NIP-11 `max_message_length`; everything arrives
// through a RelayClientHandler. Beast stays in the .cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/relay_url.hpp"
#include "runtime/net/public_address.hpp"  // is_public_address, for the resolved peers

namespace boost::asio {
class io_context;
}

namespace graspd::runtime {

struct RelayClientOptions {
  std::chrono::seconds connect_timeout{15};
  /// Pings after this much silence and gives up after as much again.
  std::chrono::seconds idle_timeout{60};
  std::size_t max_message_bytes = 1048576;
  /// Outbound bytes queued before the connection is dropped (a peer that
  /// does not read cannot grow our memory).
  std::size_t max_outbound_bytes = 8u << 20;
  /// Inbound text handed to the handler and not yet reported consumed; past it reading stops (the
  /// peer's sends then wait in TCP) until the handler reports half of it consumed, so a peer that
  /// floods frames cannot grow our memory. Never below four messages of `max_message_bytes`, so a
  /// few full-size events always fit (see unconsumed_bound()).
  std::size_t max_unconsumed_bytes = 8u << 20;
  /// Untrusted URLs (from events) may not resolve to loopback, private,
  /// link-local or unspecified addresses unless this is set (docs/spec/protocol.md §4.8).
  bool allow_private_addresses = false;
  /// Say why a connection failed before it opened (refused, timed out,
  /// declined handshake). Off for URLs from events: the reason would tell
  /// whoever publishes an announcement which ports of a host are open, so
  /// those failures read "cannot connect" (certificate errors still say
  /// why: only a TLS service presents a certificate).
  bool detailed_connect_errors = false;
  /// Fetch the peer's NIP-11 document before connecting, for REQ sizing.
  bool fetch_relay_info = true;
  /// Offer permessage-deflate (RFC 7692) in the handshake. What the peer sends then crosses the
  /// network compressed, at the cost of two zlib streams per connection (Beast's: inflating at
  /// the peer's window, ~40 KiB; deflating at 9 bits where the peer agrees, ~10 KiB) and a
  /// deflate of every message sent.
  bool compression = false;
  /// This service's own listening endpoint ("ip:port"): never dialled, even
  /// under another name (docs/spec/protocol.md §4.7). An unspecified ip (0.0.0.0, ::)
  /// stands for every loopback address on that port.
  std::string own_endpoint;

  /// The inbound bound in effect: max_unconsumed_bytes, raised to four maximal messages.
  std::size_t unconsumed_bound() const {
    return max_unconsumed_bytes > 4 * max_message_bytes ? max_unconsumed_bytes
                                                        : 4 * max_message_bytes;
  }
};

/// What the peer's NIP-11 document says about its limits; 0 = not advertised.
struct PeerLimits {
  std::size_t max_message_bytes = 0;
  std::size_t max_filters = 0;
  /// limitation.max_limit: most events one filter returns.
  std::size_t max_limit = 0;
  /// limitation.max_subscriptions: most REQs open at once on one connection.
  std::size_t max_subscriptions = 0;
  /// limitation.max_subscription_values (graspd's, not NIP-11's own): most filter values
  /// (nostr::value_count) one connection's open REQs may hold together.
  std::size_t max_subscription_values = 0;
  /// Whether supported_nips lists 77; unset when the document has no such list.
  std::optional<bool> nip77;
};
/// Reads a NIP-11 document; what it does not say (or says wrongly) stays 0 / unset.
PeerLimits parse_peer_limits(const std::string& body);

/// Receives the events of one client; called on the io thread, one at a
/// time. Implementations must not block.
class RelayClientHandler {
 public:
  virtual ~RelayClientHandler() = default;
  /// Connected; `peer` holds the NIP-11 limitation fields graspd uses, `compressed` whether the
  /// peer agreed to permessage-deflate.
  virtual void on_open(PeerLimits peer, bool compressed) = 0;
  virtual void on_message(std::string&& text) = 0;
  /// The client is finished (connect failure or disconnect); called once.
  virtual void on_close(bool was_open, std::string reason) = 0;
};

/// Thread-safe handle on one outbound connection.
class RelayClient {
 public:
  virtual ~RelayClient() = default;
  /// Queues a text frame (dropped when not open).
  virtual void send(std::string text) = 0;
  /// Closes the connection; on_close follows.
  virtual void close() = 0;
  /// Stops / restarts reading from the peer: back-pressure while the events
  /// already received are still being validated and stored.
  /// Independent of the inbound byte bound: reading resumes only when neither holds it back.
  virtual void pause_reading() = 0;
  virtual void resume_reading() = 0;
  /// The handler is done with `bytes` of the text it was handed (on_message); safe from any
  /// thread. Reading stops while more than unconsumed_bound() bytes are not done and resumes once
  /// less than half of it is, so every byte handed over must eventually be reported.
  virtual void consumed(std::size_t bytes) = 0;

  /// Starts connecting to `url` (ws or wss). on_close reports failures.
  static std::shared_ptr<RelayClient> start(boost::asio::io_context& io, const ParsedUrl& url,
                                            RelayClientOptions options,
                                            std::shared_ptr<RelayClientHandler> handler);
};

/// Every outbound connection opened through it, so shutdown can close them
/// all at once (their pending reads would otherwise keep the io threads
/// busy). Thread-safe.
class RelayClientRegistry {
 public:
  std::shared_ptr<RelayClient> start(boost::asio::io_context& io, const ParsedUrl& url,
                                     RelayClientOptions options,
                                     std::shared_ptr<RelayClientHandler> handler);
  /// Closes every connection still open.
  void close_all();

 private:
  std::mutex mutex_;
  std::vector<std::weak_ptr<RelayClient>> clients_;
};

}  // namespace graspd::runtime
