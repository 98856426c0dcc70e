// Every atom (verb) of graspd's actor messages. Payloads travel as structs
// (see the other headers in messages/); atoms are only verbs. CAF 0.17 limits
// atom text to 10 characters.
#pragma once

#include <caf/atom.hpp>

namespace graspd::atom {

/// Ask a long-lived actor for a JSON status snapshot.
using status = caf::atom_constant<caf::atom("status")>;
/// Ask an actor to finish its work and quit cleanly.
using shutdown = caf::atom_constant<caf::atom("shutdown")>;
/// Periodic timer tick an actor sends to itself.
using tick = caf::atom_constant<caf::atom("tick")>;

}  // namespace graspd::atom
