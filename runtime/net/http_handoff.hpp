// Hand-off of an HTTP request whose header has been read to a handler that owns the connection from
// then on (git hosting: its bodies and answers are streamed, never held whole). Include only where
// the server or the handler is built (Beast is expensive to compile, docs/toolchain.md §9).
#pragma once
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>  // before Asio, see docs/toolchain.md §1
namespace graspd::runtime {
using HeaderParser = boost::beast::http::request_parser<boost::beast::http::empty_body>;
/// Takes over a connection after its request header was parsed (the body, if any, is unread: the
/// callee converts the parser to the body type it reads with). Called on the connection's strand.
/// `buffer` holds bytes already read past the header. `remote_ip` is the peer address as text.
using HttpHandoffHandler =
    std::function<void(boost::beast::tcp_stream&& stream, std::unique_ptr<HeaderParser> parser,
                       boost::beast::flat_buffer&& buffer, std::string remote_ip)>;
/// Which request targets go to the hand-off handler (checked on the path with query).
using HttpHandoffPredicate = std::function<bool(std::string_view target)>;
}  // namespace graspd::runtime
