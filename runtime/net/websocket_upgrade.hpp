#pragma once
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <functional>
#include <string>
#include <utility>  // before Asio, see docs/toolchain.md §1
namespace graspd::runtime {
/// Takes over an HTTP connection that asked for a WebSocket upgrade on "/". Called on the
/// connection's strand; the callee owns the stream from then on (it performs the accept with
/// `request`). `buffer` holds bytes already read past the request. `remote_ip` is the peer address
/// as text.
using WebSocketUpgradeHandler =
    std::function<void(boost::beast::tcp_stream&& stream,
                       boost::beast::http::request<boost::beast::http::string_body>&& request,
                       boost::beast::flat_buffer&& buffer, std::string remote_ip)>;
}  // namespace graspd::runtime
