#include "store/git/git_push.hpp"

#include <algorithm>
#include <deque>

#include "messages/nostr/filter.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::git {

namespace {

using nostr::Event;
using nostr::Pubkey;

/// Largest pkt-line (git's LARGE_PACKET_MAX).
constexpr std::size_t max_packet = 65520;
/// Bounds the closure walk: a maintainer graph larger than this is cut off.
constexpr std::size_t max_maintainers = 256;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_lower_hex(std::string_view text, std::size_t length) {
  return text.size() == length && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool is_branch_or_tag(std::string_view ref) {
  return ref.rfind("refs/heads/", 0) == 0 || ref.rfind("refs/tags/", 0) == 0;
}

/// Parses one command line (without its trailing newline); fills `error` on failure.
std::optional<RefUpdate> parse_command(std::string_view line, std::string& error) {
  if (line.rfind("shallow ", 0) == 0) {
    error = "shallow pushes are not supported";
    return std::nullopt;
  }
  if (line.rfind("push-cert", 0) == 0) {
    error = "signed pushes are not supported";
    return std::nullopt;
  }
  if (line.size() < 2 * object_id_length + 3 || line[object_id_length] != ' ' ||
      line[2 * object_id_length + 1] != ' ') {
    error = "malformed push command";
    return std::nullopt;
  }
  RefUpdate update{std::string(line.substr(0, object_id_length)),
                   std::string(line.substr(object_id_length + 1, object_id_length)),
                   std::string(line.substr(2 * object_id_length + 2))};
  if (!is_object_id(update.old_id) || !is_object_id(update.new_id)) {
    error = "push command with an invalid object id";
    return std::nullopt;
  }
  if (!is_valid_ref_name(update.ref)) {
    error = "invalid ref name in push command";
    return std::nullopt;
  }
  // Both ids zero: deleting a ref that is not here (git's receive-pack warns and accepts it; the
  // state applier may have removed the branch before its push came).
  return update;
}

void add_capabilities(std::string_view text, std::set<std::string>& out) {
  while (!text.empty()) {
    auto space = text.find(' ');
    auto word = text.substr(0, space);
    if (!word.empty()) out.emplace(word);
    if (space == std::string_view::npos) break;
    text.remove_prefix(space + 1);
  }
}

nostr::Filter announcements_of(const std::vector<Pubkey>& authors, std::string_view identifier) {
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_announcement};
  f.authors = authors;
  f.tags['d'] = {std::string(identifier)};
  f.normalize();
  return f;
}

bool newer(const Event& a, const Event& b) {
  if (a.created_at != b.created_at) return a.created_at > b.created_at;
  return a.id < b.id;
}

}  // namespace

bool is_object_id(std::string_view text) {
  return is_lower_hex(text, object_id_length);
}

bool is_valid_ref_name(std::string_view ref) {
  if (ref.rfind("refs/", 0) != 0 || ref.size() > 1024) return false;
  if (ref.back() == '/' || ref.back() == '.') return false;
  if (ref.find("..") != std::string_view::npos || ref.find("//") != std::string_view::npos ||
      ref.find("@{") != std::string_view::npos)
    return false;
  for (unsigned char c : ref) {
    if (c < 0x20 || c == 0x7f) return false;
    switch (c) {
      case ' ':
      case '~':
      case '^':
      case ':':
      case '?':
      case '*':
      case '[':
      case '\\':
        return false;
      default:
        break;
    }
  }
  // Per component: not empty, not starting with '.', not ending with ".lock".
  std::size_t start = 0;
  while (start <= ref.size()) {
    auto end = ref.find('/', start);
    if (end == std::string_view::npos) end = ref.size();
    auto component = ref.substr(start, end - start);
    if (component.empty() || component.front() == '.') return false;
    if (component.size() >= 5 && component.substr(component.size() - 5) == ".lock") return false;
    start = end + 1;
  }
  return true;
}

CommandParse parse_command_list(std::string_view body) {
  CommandParse out;
  std::size_t at = 0;
  auto fail = [&](std::string error) {
    out.status = ParseStatus::invalid;
    out.error = std::move(error);
    out.list = {};
    return out;
  };
  while (true) {
    if (body.size() - at < 4) return out;  // need_more
    std::size_t length = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      int v = hex_value(body[at + i]);
      if (v < 0) return fail("bad pkt-line length");
      length = length * 16 + static_cast<std::size_t>(v);
    }
    if (length == 0) {
      out.status = ParseStatus::complete;
      out.list.consumed = at + 4;
      return out;
    }
    if (length < 5 || length > max_packet) return fail("bad pkt-line length");
    if (body.size() - at < length) return out;  // need_more
    auto line = body.substr(at + 4, length - 4);
    at += length;
    if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
    if (out.list.updates.empty()) {
      auto nul = line.find('\0');
      if (nul != std::string_view::npos) {
        add_capabilities(line.substr(nul + 1), out.list.capabilities);
        line = line.substr(0, nul);
      }
    } else if (line.find('\0') != std::string_view::npos) {
      return fail("NUL in push command");
    }
    std::string error;
    auto update = parse_command(line, error);
    if (!update) return fail(std::move(error));
    out.list.updates.push_back(std::move(*update));
  }
}

CommandList salvage_command_list(std::string_view body) {
  CommandList out;
  std::size_t at = 0;
  while (body.size() - at >= 4) {
    std::size_t length = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      int v = hex_value(body[at + i]);
      if (v < 0) return out;
      length = length * 16 + static_cast<std::size_t>(v);
    }
    if (length == 0) {
      out.consumed = at + 4;
      return out;
    }
    if (length < 5 || length > max_packet || body.size() - at < length) return out;
    auto line = body.substr(at + 4, length - 4);
    at += length;
    if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
    if (auto nul = line.find('\0'); nul != std::string_view::npos) {
      if (out.updates.empty()) add_capabilities(line.substr(nul + 1), out.capabilities);
      line = line.substr(0, nul);
    }
    bool command = line.size() > 2 * object_id_length + 2 && line[object_id_length] == ' ' &&
                   line[2 * object_id_length + 1] == ' ';
    if (!command) continue;  // shallow, push-cert and other lines name no ref
    out.updates.push_back(
        RefUpdate{std::string(line.substr(0, object_id_length)),
                  std::string(line.substr(object_id_length + 1, object_id_length)),
                  std::string(line.substr(2 * object_id_length + 2))});
  }
  return out;
}

std::string encode_command_list(const CommandList& list) {
  std::string out;
  auto pkt = [&out](const std::string& payload) {
    static constexpr char digits[] = "0123456789abcdef";
    auto length = payload.size() + 4;
    out += digits[(length >> 12) & 15];
    out += digits[(length >> 8) & 15];
    out += digits[(length >> 4) & 15];
    out += digits[length & 15];
    out += payload;
  };
  for (std::size_t i = 0; i < list.updates.size(); ++i) {
    const auto& u = list.updates[i];
    std::string line = u.old_id + " " + u.new_id + " " + u.ref;
    if (i == 0 && !list.capabilities.empty()) {
      line += '\0';
      bool first = true;
      for (const auto& capability : list.capabilities) {
        if (!first) line += ' ';
        line += capability;
        first = false;
      }
    }
    pkt(line + "\n");
  }
  out += "0000";
  return out;
}

bool rebase_satisfied_updates(CommandList& list, const RefMap& current) {
  bool changed = false;
  for (auto& u : list.updates) {
    auto it = current.find(u.ref);
    const std::string& here = it == current.end() ? zero_id : it->second;
    if (u.old_id != here && here == u.new_id) {
      u.old_id = here;
      changed = true;
    }
  }
  return changed;
}

StateRefs state_refs(const Event& state) {
  StateRefs out;
  out.event_id = nostr::to_hex(state.id);
  for (const auto& tag : state.tags) {
    if (tag.size() < 2) continue;
    const auto& name = tag[0];
    const auto& value = tag[1];
    if (name == "HEAD") {
      constexpr std::string_view prefix = "ref: refs/heads/";
      if (value.rfind(prefix, 0) == 0) out.head = value.substr(prefix.size());
      continue;
    }
    if (!is_branch_or_tag(name)) continue;
    if (name.size() >= 3 && name.substr(name.size() - 3) == "^{}") continue;
    if (value.rfind("ref: ", 0) == 0) continue;
    out.refs.emplace(name, value);
  }
  return out;
}

std::optional<std::string> head_branch(const StateRefs& state) {
  std::vector<std::string> branches;
  for (const auto& [ref, id] : state.refs)
    if (ref.rfind("refs/heads/", 0) == 0) branches.push_back(ref.substr(11));
  if (branches.empty()) return std::nullopt;
  auto has = [&](const std::string& b) {
    return std::find(branches.begin(), branches.end(), b) != branches.end();
  };
  if (state.head && has(*state.head)) return state.head;
  if (branches.size() == 1) return branches.front();
  if (has("main")) return std::string("main");
  if (has("master")) return std::string("master");
  return branches.front();  // the map is sorted by name
}

std::string short_id(std::string_view id) {
  return std::string(id.substr(0, 12));
}

PushDecision authorise_push(const std::vector<RefUpdate>& updates, const RefMap& current,
                            const PushAuthority& authority) {
  PushDecision out;
  std::string first_refusal;
  auto refuse = [&](RefVerdict& verdict, std::string reason) {
    if (!verdict.ok) return;  // keep the first reason per ref
    verdict.ok = false;
    verdict.reason = std::move(reason);
    if (first_refusal.empty()) first_refusal = verdict.reason;
  };
  out.refs.reserve(updates.size());
  for (const auto& u : updates) out.refs.push_back(RefVerdict{u.ref, true, {}});
  if (authority.archive) {
    // An archive mirrors a repository hosted elsewhere: its git data only comes by fetch.
    for (auto& verdict : out.refs) refuse(verdict, "read-only archive");
    out.reason = first_refusal;
    return out;
  }

  bool touches_branches = false;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < updates.size(); ++i) {
    const auto& u = updates[i];
    auto& verdict = out.refs[i];
    if (!seen.insert(u.ref).second) refuse(verdict, u.ref + ": pushed twice");
    auto it = current.find(u.ref);
    const std::string& here = it == current.end() ? zero_id : it->second;
    // A ref that is already where the push wants it is satisfied whatever old id was sent.
    if (u.old_id != here && here != u.new_id)
      refuse(verdict, u.ref + ": is at " + short_id(here) + " here, the push expected " +
                          short_id(u.old_id) + " (fetch first)");
    if (u.old_id == u.new_id) continue;  // no change (§5.6)
    if (is_branch_or_tag(u.ref)) {
      touches_branches = true;
    } else if (u.ref.rfind(nostr::nip34::refs_nostr_prefix, 0) == 0) {
      auto id = std::string_view(u.ref).substr(nostr::nip34::refs_nostr_prefix.size());
      if (!is_lower_hex(id, 64)) {
        refuse(verdict, u.ref + ": only refs/nostr/<event-id> (64 lowercase hex) may be pushed");
      } else if (u.deletes()) {
        refuse(verdict, u.ref + ": refs/nostr refs cannot be deleted");
      } else if (auto pr = authority.pr_commits.find(std::string(id));
                 pr != authority.pr_commits.end() && pr->second != u.new_id) {
        refuse(verdict, u.ref + ": pushed " + short_id(u.new_id) + ", PR event " + short_id(id) +
                            " names commit " + short_id(pr->second));
      }
    } else {
      refuse(verdict, u.ref + ": only branches, tags and refs/nostr/<event-id> may be pushed here");
    }
  }

  if (touches_branches) {
    if (!authority.state) {
      for (std::size_t i = 0; i < updates.size(); ++i)
        if (is_branch_or_tag(updates[i].ref) && updates[i].old_id != updates[i].new_id)
          refuse(out.refs[i], updates[i].ref +
                                  ": no state event (kind 30618) from a maintainer names this "
                                  "ref; publish the state before pushing");
    } else {
      const auto& state = *authority.state;
      const auto state_id = short_id(state.event_id);
      // Branches and tags after the push.
      RefMap after;
      for (const auto& [ref, id] : current)
        if (is_branch_or_tag(ref)) after[ref] = id;
      for (const auto& u : updates) {
        if (!is_branch_or_tag(u.ref)) continue;
        if (u.deletes())
          after.erase(u.ref);
        else
          after[u.ref] = u.new_id;
      }
      std::map<std::string, std::size_t> pushed;
      for (std::size_t i = 0; i < updates.size(); ++i) pushed.emplace(updates[i].ref, i);
      std::string unpushed_mismatch;
      auto mismatch = [&](const std::string& ref, const std::string& have,
                          const std::string* want) -> std::string {
        if (!want)
          return ref + ": state " + state_id + " does not name this ref (" +
                 (have == zero_id ? std::string("deleted") : short_id(have)) + ")";
        if (have == zero_id)
          return ref + ": state " + state_id + " wants " + short_id(*want) + ", ref is missing";
        return ref + ": pushed " + short_id(have) + ", state " + state_id + " wants " +
               short_id(*want);
      };
      std::set<std::string> names;
      for (const auto& [ref, id] : after) names.insert(ref);
      for (const auto& [ref, id] : state.refs) names.insert(ref);
      for (const auto& ref : names) {
        auto a = after.find(ref);
        auto s = state.refs.find(ref);
        const std::string have = a == after.end() ? zero_id : a->second;
        const std::string* want = s == state.refs.end() ? nullptr : &s->second;
        if (want && *want == have) continue;
        auto reason = mismatch(ref, have, want);
        if (auto p = pushed.find(ref); p != pushed.end()) {
          refuse(out.refs[p->second], reason);
        } else if (unpushed_mismatch.empty()) {
          unpushed_mismatch = reason;
        }
      }
      if (!unpushed_mismatch.empty()) {
        for (auto& verdict : out.refs)
          refuse(verdict, "push does not match the state: " + unpushed_mismatch);
      }
    }
  }

  out.accepted = first_refusal.empty();
  if (!out.accepted) {
    out.reason = first_refusal;
    for (auto& verdict : out.refs)
      refuse(verdict, "refused with the rest of the push: " + first_refusal);
  }
  return out;
}

std::set<Pubkey> maintainer_closure(const policy::StoreView& store, const Pubkey& owner,
                                    std::string_view identifier) {
  std::set<Pubkey> members{owner};
  std::deque<Pubkey> queue{owner};
  while (!queue.empty() && members.size() < max_maintainers) {
    std::vector<Pubkey> batch(queue.begin(), queue.end());
    queue.clear();
    store.scan({announcements_of(batch, identifier)}, [&](const Event& announcement) {
      for (const auto& key : nostr::nip34::listed_maintainers(announcement))
        if (members.size() < max_maintainers && members.insert(key).second) queue.push_back(key);
      return true;
    });
  }
  return members;
}

bool archived_repository(const policy::StoreView& store, const policy::PolicyConfig& config,
                         const Pubkey& owner, std::string_view identifier) {
  if (!config.archive.any_source()) return false;
  auto newest = newest_announcement(store, owner, identifier);
  return newest && policy::is_archive(config, *newest);
}

std::optional<Event> newest_announcement(const policy::StoreView& store, const Pubkey& owner,
                                         std::string_view identifier) {
  std::optional<Event> newest;
  store.scan({announcements_of({owner}, identifier)}, [&](const Event& announcement) {
    if (announcement.d_tag() == identifier && (!newest || newer(announcement, *newest)))
      newest = announcement;
    return true;
  });
  return newest;
}

PushAuthority push_authority(const policy::StoreView& store, const Pubkey& owner,
                             std::string_view identifier, const std::vector<std::string>& pr_ids) {
  PushAuthority out;
  auto members = maintainer_closure(store, owner, identifier);
  nostr::Filter states;
  states.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_state};
  states.authors = std::vector<Pubkey>(members.begin(), members.end());
  states.tags['d'] = {std::string(identifier)};
  states.normalize();
  std::optional<Event> newest;
  store.scan({states}, [&](const Event& state) {
    if (state.d_tag() == identifier && (!newest || newer(state, *newest))) newest = state;
    return true;
  });
  if (newest) out.state = state_refs(*newest);

  std::vector<nostr::EventId> ids;
  for (const auto& hex : pr_ids) {
    nostr::EventId id;
    if (is_lower_hex(hex, 64) && nostr::from_hex(hex, id)) ids.push_back(id);
  }
  if (!ids.empty()) {
    nostr::Filter prs;
    prs.ids = ids;
    prs.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::pull_request,
                                           nostr::nip34::kind::pull_request_update};
    prs.normalize();
    store.scan({prs}, [&](const Event& pr) {
      auto commit = pr.first_tag_value("c");
      // A PR event without a usable `c` tag fails closed: nothing matches it.
      out.pr_commits[nostr::to_hex(pr.id)] = is_object_id(commit) ? std::string(commit) : "none";
      return true;
    });
  }
  return out;
}

std::vector<PrRefPushed> pr_refs_pushed(const std::vector<RefUpdate>& updates) {
  std::vector<PrRefPushed> out;
  for (const auto& u : updates) {
    if (u.deletes() || u.old_id == u.new_id) continue;
    if (auto id = nostr::nip34::refs_nostr_id(u.ref)) out.push_back({*id, u.new_id});
  }
  return out;
}

}  // namespace graspd::git
