// The catalogue of graspd's typed actor interfaces: one `using` per role, each
// handler documented. Message payload structs live in the other messages/
// headers; this file only composes them. CAF 0.17 dialect: reacts_to /
// replies_to<...>::with<...> (the function-signature form fails at spawn).
#pragma once

#include <caf/typed_actor.hpp>

#include "messages/atoms.hpp"

namespace graspd {

// Interfaces are added here by the issues that introduce each actor.

}  // namespace graspd
