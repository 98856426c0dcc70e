// What each write outcome means to a client: whether its OK is true, and the OK's text.
#include "store/lmdb/event_store.hpp"

namespace graspd::store {

bool is_accepted(WriteOutcome outcome) {
  switch (outcome) {
    case WriteOutcome::stored:
    case WriteOutcome::duplicate:
    case WriteOutcome::replaced_older:
    case WriteOutcome::ephemeral_not_stored:
    case WriteOutcome::held:
      return true;
    default:
      return false;
  }
}

std::string_view ok_message(WriteOutcome outcome) {
  switch (outcome) {
    case WriteOutcome::stored:
    case WriteOutcome::replaced_older:
    case WriteOutcome::ephemeral_not_stored:
      return "";
    case WriteOutcome::duplicate:
      return "duplicate: already have this event";
    case WriteOutcome::rejected_older_version:
      return "duplicate: an older version (a newer one is stored)";
    case WriteOutcome::deleted:
      return "blocked: this event was deleted by its author";
    case WriteOutcome::expired:
      return "invalid: event has expired";
    case WriteOutcome::dependency_missing:
      return "blocked: an event it depends on was not stored";
    case WriteOutcome::held:
      return "purgatory: won't be served until git data arrives";
    case WriteOutcome::error:
      break;
  }
  return "error: could not store the event";
}

}  // namespace graspd::store
