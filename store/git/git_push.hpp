// Push authorisation for git hosting (docs/spec/git-hosting.md §5, §7): the pkt-line command list
// at the start of a `git-receive-pack` request, the rule that decides a push against the newest
// state event (kind 30618) of the owner's recursive maintainer set, and the store lookups that
// gather what the rule needs. Pure: no I/O beyond StoreView, no git process; tested as a table.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "messages/git_messages.hpp"
#include "messages/nostr/event.hpp"
#include "store/policy/acceptance_policy.hpp"

namespace graspd::git {

/// Every object id is SHA-1 hex here (repositories are created with the default format).
inline constexpr std::size_t object_id_length = 40;
inline const std::string zero_id(object_id_length, '0');

/// One `<old> <new> <ref>` command of a push.
struct RefUpdate {
  std::string old_id;
  std::string new_id;
  std::string ref;

  bool creates() const { return old_id == zero_id; }
  bool deletes() const { return new_id == zero_id; }
  friend bool operator==(const RefUpdate&, const RefUpdate&) = default;
};

struct CommandList {
  std::vector<RefUpdate> updates;
  /// Capabilities named after the NUL of the first command (`report-status`, `side-band-64k`, ...).
  std::set<std::string> capabilities;
  /// Bytes of the body the list and its flush packet took.
  std::size_t consumed = 0;
};

/// Ref name → object id (hex).
using RefMap = std::map<std::string, std::string>;

enum class ParseStatus { complete, need_more, invalid };

struct CommandParse {
  ParseStatus status = ParseStatus::need_more;
  CommandList list;
  std::string error;  ///< for `invalid`: what was wrong, for the log and the refusal
};

/// Parses the command list from the start of a receive-pack request body: pkt-lines up to the
/// first flush packet. `need_more` while no flush has been seen and nothing was wrong so far.
/// Fails closed (§5.7): a bad pkt-line length, a non-hex or wrong-length id, a ref name that
/// `git check-ref-format` rejects, `shallow` or `push-cert` lines. Both ids zero is a valid command
/// (the deletion of a ref that is not here).
CommandParse parse_command_list(std::string_view body);

/// What can still be read from a command list parse_command_list refused: the commands' refs (ids
/// and names as sent, unchecked) and the first command's capabilities, so that each ref can be
/// answered `ng` in git's report-status. Stops at the first malformed pkt-line or the flush
/// (then `consumed` is set, as by parse_command_list); empty when nothing looks like a command.
CommandList salvage_command_list(std::string_view body);

/// The pkt-lines of `list` up to and including its flush packet (capabilities after the first
/// command, space-separated); parse_command_list of the result gives `list` back.
std::string encode_command_list(const CommandList& list);

/// For updates whose ref is already where the push wants it (another writer got there first, e.g. a
/// state applied on arrival): the old id becomes the current one, so git applies a no-op instead of
/// failing on a stale old id. Returns whether anything changed.
bool rebase_satisfied_updates(CommandList& list, const RefMap& current);

/// 40 lowercase hex digits.
bool is_object_id(std::string_view text);
/// The first 12 digits of an id, as push refusals name ids.
std::string short_id(std::string_view id);
/// `git check-ref-format` rules for a full ref name starting with `refs/`.
bool is_valid_ref_name(std::string_view ref);

/// What a state event (kind 30618) says about branches and tags.
struct StateRefs {
  std::string event_id;  ///< hex
  RefMap refs;  ///< refs/heads/* and refs/tags/* only (`^{}` entries and `ref:` values ignored)
  std::optional<std::string> head;  ///< the branch of `HEAD: ref: refs/heads/<b>`, if named
};

StateRefs state_refs(const nostr::Event& state);

/// What the store says about a push to one repository.
struct PushAuthority {
  /// The newest state of the owner's recursive maintainer set; none when no maintainer published
  /// one.
  std::optional<StateRefs> state;
  /// Commit (`c` tag) of each kind 1618/1619 event named by a pushed `refs/nostr/<id>`, by id.
  std::map<std::string, std::string> pr_commits;
  /// The repository is a GRASP-05 archive (policy::is_archive): every ref is refused.
  bool archive = false;
  /// For a GRASP-06 submission area: pushed ids whose PR event is for another area, and why.
  std::map<std::string, std::string> pr_refusals{};
};

struct RefVerdict {
  std::string ref;
  bool ok = false;
  std::string reason;  ///< for refusals: names the ref and the ids
};

struct PushDecision {
  bool accepted = false;
  /// One entry per update, in push order (for `ok`/`ng` report-status lines).
  std::vector<RefVerdict> refs;
  /// The first refusal's reason (empty when accepted).
  std::string reason;
};

/// §5.3–5.8 and §7: applying `updates` to `current` (refs/heads, refs/tags, refs/nostr of the
/// repository) must leave branches and tags equal to the state's; every old id must equal the
/// current value; `refs/nostr/<64-hex>` may be pushed by anyone unless a PR event with that id
/// names another commit; any other ref is refused. One refusal refuses every update.
PushDecision authorise_push(const std::vector<RefUpdate>& updates, const RefMap& current,
                            const PushAuthority& authority);

/// The owner, the maintainers of the owner's announcement named `identifier`, then those listed in
/// each maintainer's own announcement with that identifier (cycle-safe, bounded).
std::set<nostr::Pubkey> maintainer_closure(const policy::StoreView& store,
                                           const nostr::Pubkey& owner, std::string_view identifier);

/// Everything authorise_push needs from the store for a push to `owner`'s `identifier`:
/// the newest state (created_at, tie → lowest id) by a member of the maintainer closure, and the
/// commits of the PR events named by `pr_ids` (hex).
PushAuthority push_authority(const policy::StoreView& store, const nostr::Pubkey& owner,
                             std::string_view identifier, const std::vector<std::string>& pr_ids);

/// Whether `owner`'s repository `identifier` is a GRASP-05 archive here: its owner's newest
/// announcement (stored or held, in `store`) is one (policy::is_archive). Without archive rules,
/// false without a lookup.
bool archived_repository(const policy::StoreView& store, const policy::PolicyConfig& config,
                         const nostr::Pubkey& owner, std::string_view identifier);

/// `owner`'s newest announcement (created_at, tie → lowest id) named `identifier` in `store`.
std::optional<nostr::Event> newest_announcement(const policy::StoreView& store,
                                                const nostr::Pubkey& owner,
                                                std::string_view identifier);

/// The branch HEAD should name after a push the state authorised (§5.9): the state's HEAD when it
/// names one of its branches, else the only branch, else `main`, else `master`, else the first by
/// name; nullopt when the state has no branch.
std::optional<std::string> head_branch(const StateRefs& state);

/// The `refs/nostr/<id>` refs an applied push created or moved, with their new commits (a push
/// never deletes one, §7).
std::vector<PrRefPushed> pr_refs_pushed(const std::vector<RefUpdate>& updates);

}  // namespace graspd::git
