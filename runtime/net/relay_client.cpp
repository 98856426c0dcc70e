#include <utility>  // before Asio (docs/toolchain.md §1)

#include "runtime/net/relay_client.hpp"

#include <rapidjson/document.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <algorithm>
#include <deque>
#include <type_traits>

#include "runtime/net/ws_deflate.hpp"

namespace graspd::runtime {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

constexpr std::size_t max_info_bytes = 64 * 1024;
constexpr auto info_timeout = std::chrono::seconds(5);

/// One TLS client context for every wss connection. Trust comes from the
/// system store (OpenSSL honours SSL_CERT_FILE / SSL_CERT_DIR, which tests
/// use to trust their own CA).
ssl::context& tls_context() {
  static ssl::context ctx = [] {
    ssl::context c(ssl::context::tls_client);
    c.set_default_verify_paths();
    c.set_verify_mode(ssl::verify_peer);
    c.set_options(ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                  ssl::context::no_tlsv1_1);
    return c;
  }();
  return ctx;
}

using PlainLayer = beast::tcp_stream;
using TlsLayer = beast::ssl_stream<beast::tcp_stream>;

template <class Layer>
constexpr bool is_tls = std::is_same_v<Layer, TlsLayer>;

template <class Layer>
Layer make_layer(net::any_io_executor executor) {
  if constexpr (is_tls<Layer>)
    return Layer(executor, tls_context());
  else
    return Layer(executor);
}

std::string host_for_resolver(const std::string& host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    return host.substr(1, host.size() - 2);
  return host;
}

std::string host_header(const ParsedUrl& url) {
  if (!url.explicit_port || url.port == default_port(url.scheme)) return url.host;
  return url.host + ":" + std::to_string(url.port);
}

/// One outbound connection: optional NIP-11 probe, then the WebSocket.
/// Every member runs on the strand; public entry points post onto it.
template <class Layer>
class Connection final : public RelayClient,
                         public std::enable_shared_from_this<Connection<Layer>> {
 public:
  Connection(net::io_context& io, ParsedUrl url, RelayClientOptions options,
             std::shared_ptr<RelayClientHandler> handler)
      : strand_(net::make_strand(io)),
        resolver_(strand_),
        url_(std::move(url)),
        options_(options),
        handler_(std::move(handler)) {}

  void start() {
    resolver_.async_resolve(host_for_resolver(url_.host), std::to_string(url_.port),
                            beast::bind_front_handler(&Connection::on_resolved, self()));
  }

  void send(std::string text) override {
    net::post(strand_, [self = self(), text = std::move(text)]() mutable {
      self->enqueue(std::move(text));
    });
  }

  void close() override {
    net::post(strand_, [self = self()] { self->shut_down("closed by graspd"); });
  }

  void pause_reading() override {
    net::post(strand_, [self = self()] { self->paused_ = true; });
  }

  void resume_reading() override {
    net::post(strand_, [self = self()] {
      self->paused_ = false;
      self->read_if_idle();
    });
  }

  void consumed(std::size_t bytes) override {
    net::post(strand_, [self = self(), bytes] {
      self->unconsumed_ -= std::min(self->unconsumed_, bytes);
      // Hysteresis: resuming at half the bound, not just under it, spares a stop and a restart
      // per frame while the handler keeps pace only barely.
      if (self->backlog_full_ && self->unconsumed_ < self->options_.unconsumed_bound() / 2) {
        self->backlog_full_ = false;
        self->read_if_idle();
      }
    });
  }

 private:
  std::shared_ptr<Connection> self() { return this->shared_from_this(); }

  void on_resolved(beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) return finish("cannot resolve " + url_.host + ": " + ec.message());
    bool ourselves = false;
    for (const auto& entry : results) {
      if (is_own_endpoint(entry.endpoint())) {
        ourselves = true;
        continue;
      }
      auto address = entry.endpoint().address().to_string();
      if (options_.allow_private_addresses || is_public_address(address))
        endpoints_.push_back(entry.endpoint());
    }
    if (endpoints_.empty())
      return finish(ourselves ? url_.host + " is this relay itself (refused)"
                              : url_.host + " resolves only to non-public addresses (refused)");
    if (options_.fetch_relay_info)
      fetch_info();
    else
      connect_websocket();
  }

  /// TCP connect (to the checked endpoints) and, for wss, the TLS handshake
  /// with SNI and hostname verification; then `next(ec)`.
  template <class Next>
  void connect_layer(Layer& layer, Next next) {
    auto& tcp_layer = beast::get_lowest_layer(layer);
    tcp_layer.expires_after(options_.connect_timeout);
    tcp_layer.async_connect(endpoints_, [this, self = self(), &layer, next](
                                            beast::error_code ec, const tcp::endpoint&) mutable {
      (void)layer;  // used only by the TLS branch below
      if (ec || closing_) return next(ec ? ec : net::error::operation_aborted);
      if constexpr (is_tls<Layer>) {
        auto host = host_for_resolver(url_.host);
        beast::error_code not_an_address;
        net::ip::make_address(host, not_an_address);
        // SNI carries names only, never IP literals (RFC 6066).
        if (not_an_address) SSL_set_tlsext_host_name(layer.native_handle(), host.c_str());
        layer.set_verify_callback(ssl::host_name_verification(host));
        layer.async_handshake(ssl::stream_base::client,
                              [this, &layer, next](beast::error_code ec2) mutable {
                                // Say why verification failed ("hostname mismatch",
                                // "unable to get local issuer certificate", ...).
                                auto verify = SSL_get_verify_result(layer.native_handle());
                                if (ec2 && verify != X509_V_OK)
                                  tls_detail_ = X509_verify_cert_error_string(verify);
                                next(ec2);
                              });
      } else {
        next(ec);
      }
    });
  }

  bool is_own_endpoint(const tcp::endpoint& endpoint) const {
    if (options_.own_endpoint.empty()) return false;
    auto colon = options_.own_endpoint.rfind(':');
    if (colon == std::string::npos) return false;
    if (options_.own_endpoint.substr(colon + 1) != std::to_string(endpoint.port())) return false;
    beast::error_code ec;
    auto own = net::ip::make_address(host_for_resolver(options_.own_endpoint.substr(0, colon)), ec);
    if (ec) return false;
    if (own.is_unspecified()) return endpoint.address().is_loopback();
    return own == endpoint.address();
  }

  void fetch_info() {
    info_layer_.emplace(make_layer<Layer>(strand_));
    connect_layer(*info_layer_, [this, self = self()](beast::error_code ec) {
      if (ec) return info_done({});
      info_request_ = {http::verb::get, url_.path_and_query.empty() ? "/" : url_.path_and_query,
                       11};
      info_request_.set(http::field::host, host_header(url_));
      info_request_.set(http::field::accept, "application/nostr+json");
      info_request_.set(http::field::user_agent, "graspd");
      beast::get_lowest_layer(*info_layer_).expires_after(info_timeout);
      http::async_write(
          *info_layer_, info_request_, [this, self](beast::error_code ec2, std::size_t) {
            if (ec2) return info_done({});
            info_parser_.emplace();
            info_parser_->body_limit(max_info_bytes);
            http::async_read(*info_layer_, info_buffer_, *info_parser_,
                             [this, self](beast::error_code ec3, std::size_t) {
                               PeerLimits limits;
                               if (!ec3 && info_parser_->get().result_int() == 200)
                                 limits = parse_peer_limits(info_parser_->get().body());
                               info_done(limits);
                             });
          });
    });
  }

  void info_done(PeerLimits limits) {
    peer_ = limits;
    if (info_layer_) {
      beast::error_code ignored;
      beast::get_lowest_layer(*info_layer_).socket().shutdown(tcp::socket::shutdown_both, ignored);
      beast::get_lowest_layer(*info_layer_).close();
    }
    if (closing_) return finish("closed by graspd");
    connect_websocket();
  }

  void connect_websocket() {
    ws_.emplace(make_layer<Layer>(strand_));
    connect_layer(ws_->next_layer(), [this, self = self()](beast::error_code ec) {
      if (ec && !tls_detail_.empty())
        return finish("cannot connect: certificate verify failed (" + tls_detail_ + ")");
      if (ec) return finish(connect_failure("cannot connect: " + ec.message()));
      beast::get_lowest_layer(*ws_).expires_never();
      websocket::stream_base::timeout timeouts{};
      timeouts.handshake_timeout = options_.connect_timeout;
      timeouts.idle_timeout = options_.idle_timeout;
      timeouts.keep_alive_pings = true;
      ws_->set_option(timeouts);
      // With permessage-deflate the bound applies to the inflated message, so a small compressed
      // frame cannot grow past it.
      ws_->read_message_max(options_.max_message_bytes);
      if (options_.compression) {
        websocket::permessage_deflate offer;
        offer.client_enable = true;
        // Our own messages (REQs, NEG-MSGs of random fingerprints) gain nothing from a long
        // window: asking for 512 bytes keeps our deflate stream at ~10 KiB instead of ~140 KiB,
        // where the peer agrees (otherwise RFC 7692's 15 bits apply).
        offer.client_max_window_bits = 9;
        // Level 1: our NEG-MSGs are hex of random bytes, where deflate gains its ~2x from the
        // Huffman codes alone; level 8 searched for matches there at ~1 ms a message.
        offer.compLevel = 1;
        ws_->set_option(offer);
      }
      ws_->set_option(websocket::stream_base::decorator(
          [](websocket::request_type& req) { req.set(http::field::user_agent, "graspd"); }));
      auto path = url_.path_and_query.empty() ? std::string("/") : url_.path_and_query;
      ws_->async_handshake(
          handshake_, host_header(url_), path, [this, self](beast::error_code ec2) {
            if (ec2) return finish(connect_failure("websocket handshake failed: " + ec2.message()));
            if (closing_) return shut_down("closed by graspd");
            open_ = true;
            const auto agreed = handshake_[http::field::sec_websocket_extensions];
            const bool compressed =
                options_.compression &&
                negotiated_deflate(std::string_view(agreed.data(), agreed.size())).enabled;
            handshake_ = {};
            handler_->on_open(peer_, compressed);
            read();
            write_next();
          });
    });
  }

  void read() {
    if (paused_ || backlog_full_ || closing_) return;
    reading_ = true;
    ws_->async_read(buffer_, [this, self = self()](beast::error_code ec, std::size_t) {
      reading_ = false;
      if (ec) return finish(ec == websocket::error::closed ? "closed by peer" : ec.message());
      if (ws_->got_text()) {
        unconsumed_ += buffer_.size();
        if (unconsumed_ > options_.unconsumed_bound()) backlog_full_ = true;
        handler_->on_message(beast::buffers_to_string(buffer_.data()));
      }
      buffer_.consume(buffer_.size());
      read();
    });
  }

  /// Restarts the reads after a pause, unless one is pending or the connection is done.
  void read_if_idle() {
    if (open_ && !reading_ && !finished_) read();
  }

  void enqueue(std::string text) {
    if (finished_ || closing_) return;
    queued_bytes_ += text.size();
    if (queued_bytes_ > options_.max_outbound_bytes)
      return shut_down("outbound queue limit reached");
    outbox_.push_back(std::move(text));
    if (open_ && outbox_.size() == 1) write_next();
  }

  void write_next() {
    if (outbox_.empty() || writing_ || !open_) return;
    writing_ = true;
    ws_->text(true);
    ws_->async_write(net::buffer(outbox_.front()),
                     [this, self = self()](beast::error_code ec, std::size_t) {
                       writing_ = false;
                       if (ec) return finish("write failed: " + ec.message());
                       queued_bytes_ -= outbox_.front().size();
                       outbox_.pop_front();
                       write_next();
                     });
  }

  void shut_down(const std::string& reason) {
    if (finished_ || closing_) return;
    closing_ = true;
    close_reason_ = reason;
    if (!open_) {
      resolver_.cancel();
      if (info_layer_) beast::get_lowest_layer(*info_layer_).cancel();
      if (ws_) beast::get_lowest_layer(*ws_).cancel();
      return;
    }
    ws_->async_close(websocket::close_code::normal,
                     [this, self = self()](beast::error_code) { finish(close_reason_); });
  }

  std::string connect_failure(std::string detail) const {
    return options_.detailed_connect_errors ? detail : std::string("cannot connect");
  }

  void finish(std::string reason) {
    if (finished_) return;
    finished_ = true;
    if (closing_ && !close_reason_.empty()) reason = close_reason_;
    if (ws_) {
      beast::error_code ignored;
      beast::get_lowest_layer(*ws_).socket().close(ignored);
    }
    outbox_.clear();
    handler_->on_close(open_, std::move(reason));
  }

  net::strand<net::io_context::executor_type> strand_;
  tcp::resolver resolver_;
  ParsedUrl url_;
  RelayClientOptions options_;
  std::shared_ptr<RelayClientHandler> handler_;
  std::vector<tcp::endpoint> endpoints_;
  std::optional<Layer> info_layer_;
  http::request<http::empty_body> info_request_;
  std::optional<http::response_parser<http::string_body>> info_parser_;
  beast::flat_buffer info_buffer_;
  PeerLimits peer_;
  std::optional<websocket::stream<Layer>> ws_;
  websocket::response_type handshake_;  // the peer's 101 answer, read for the extension it agreed
  beast::flat_buffer buffer_;
  std::deque<std::string> outbox_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool reading_ = false;
  bool paused_ = false;  // pause_reading(): the handler's own back-pressure
  /// Text handed to on_message and not yet reported consumed; past the bound reading stops
  /// (backlog_full_) until consumed() brings it under half.
  std::size_t unconsumed_ = 0;
  bool backlog_full_ = false;
  bool open_ = false;
  bool closing_ = false;
  bool finished_ = false;
  std::string close_reason_;
  std::string tls_detail_;
};

}  // namespace

PeerLimits parse_peer_limits(const std::string& body) {
  PeerLimits out;
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  // HasMember/operator[] rather than member iterators: comparing those is
  // ambiguous for clang in C++20 mode.
  if (doc.HasParseError() || !doc.IsObject()) return out;
  if (doc.HasMember("supported_nips") && doc["supported_nips"].IsArray()) {
    const auto& nips = doc["supported_nips"];
    out.nip77 = std::any_of(nips.Begin(), nips.End(),
                            [](const auto& n) { return n.IsUint64() && n.GetUint64() == 77; });
  }
  if (!doc.HasMember("limitation")) return out;
  const auto& limitation = doc["limitation"];
  if (!limitation.IsObject()) return out;
  auto field = [&](const char* name) -> std::size_t {
    if (!limitation.HasMember(name) || !limitation[name].IsUint64()) return 0;
    return static_cast<std::size_t>(limitation[name].GetUint64());
  };
  out.max_message_bytes = field("max_message_length");
  out.max_filters = field("max_filters");
  out.max_limit = field("max_limit");
  out.max_subscriptions = field("max_subscriptions");
  out.max_subscription_values = field("max_subscription_values");
  return out;
}

std::shared_ptr<RelayClient> RelayClientRegistry::start(
    net::io_context& io, const ParsedUrl& url, RelayClientOptions options,
    std::shared_ptr<RelayClientHandler> handler) {
  auto client = RelayClient::start(io, url, options, std::move(handler));
  std::lock_guard<std::mutex> lock(mutex_);
  clients_.erase(std::remove_if(clients_.begin(), clients_.end(),
                                [](const auto& weak) { return weak.expired(); }),
                 clients_.end());
  clients_.push_back(client);
  return client;
}

void RelayClientRegistry::close_all() {
  std::vector<std::shared_ptr<RelayClient>> open;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& weak : clients_)
      if (auto client = weak.lock()) open.push_back(std::move(client));
    clients_.clear();
  }
  for (const auto& client : open) client->close();
}

std::shared_ptr<RelayClient> RelayClient::start(net::io_context& io, const ParsedUrl& url,
                                                RelayClientOptions options,
                                                std::shared_ptr<RelayClientHandler> handler) {
  if (url.scheme == "wss") {
    auto c = std::make_shared<Connection<TlsLayer>>(io, url, options, std::move(handler));
    c->start();
    return c;
  }
  auto c = std::make_shared<Connection<PlainLayer>>(io, url, options, std::move(handler));
  c->start();
  return c;
}

}  // namespace graspd::runtime
