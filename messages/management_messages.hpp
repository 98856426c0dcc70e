// Payloads of the management actor's messages (NIP-86 over HTTP, see management_actor in
// messages/interfaces.hpp): the request as the HTTP transport read it, and the answer it sends.
#pragma once

#include <caf/meta/type_name.hpp>

#include <string>

namespace graspd {

/// One `POST /` with Content-Type application/nostr+json+rpc.
struct ManagementCall {
  std::string authorization;  ///< the Authorization header, "Nostr <base64 event>"
  std::string body;           ///< at most 64 KiB (the transport's body limit)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ManagementCall& x) {
  return f(caf::meta::type_name("ManagementCall"), x.authorization, x.body);
}

/// The HTTP answer: its status (200, 400 or 401) and its application/nostr+json+rpc body.
struct ManagementAnswer {
  unsigned status = 200;
  std::string body;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ManagementAnswer& x) {
  return f(caf::meta::type_name("ManagementAnswer"), x.status, x.body);
}

}  // namespace graspd
