// A stand-in for the git hosting actor in actor tests: it records what it is told (repositories
// announced and withdrawn, states, held pull requests, commit checks, refs/nostr changes) and
// answers the existence questions from a set of identifiers the test controls. Repositories
// announced to it exist from then on, as with the real one. It never sends GitDataArrived by
// itself: tests send that to the acceptance actor, as git hosting would.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "messages/interfaces.hpp"

namespace graspd::test {

struct GitHostRecord {
  /// Identifiers that have a repository here (any owner).
  std::set<std::string> repositories;
  std::vector<nostr::EventId> announced;
  std::vector<nostr::EventId> withdrawn;
  std::vector<nostr::EventId> states;
  /// Held pull requests and how many repositories each was to be looked for in.
  std::vector<std::pair<nostr::EventId, std::size_t>> held_pull_requests;
  std::vector<std::vector<std::string>> checks;
  std::vector<PrRefChange> ref_changes;
  std::vector<PrMirror> mirrors;
  /// refs/nostr refs asked to be deleted (PrRefsDelete), in order; each is answered gone unless
  /// named in `refs_left` (id → the commit it names now).
  std::vector<PrRefPushed> ref_deletions;
  std::map<nostr::EventId, std::string> refs_left;
  std::vector<git_data_feed_actor> subscribers;
};

struct RecordingGitHostState {
  static inline const char* name = "recording_git_host";
  GitHostRecord* record = nullptr;
};

inline git_host_actor::behavior_type recording_git_host(
    git_host_actor::stateful_pointer<RecordingGitHostState> self, GitHostRecord* record) {
  self->state.record = record;
  return {
      [=](RepoAnnounced& announced) {
        record->announced.push_back(announced.announcement->id);
        record->repositories.insert(std::string(announced.announcement->d_tag()));
      },
      [=](RepoWithdrawn& withdrawn) { record->withdrawn.push_back(withdrawn.announcement->id); },
      [=](RepoExists& question) { return record->repositories.count(question.identifier) > 0; },
      [=](ReposHosted& question) {
        std::vector<RepositoryRef> out;
        for (auto& repository : question.repositories)
          if (record->repositories.count(repository.identifier)) out.push_back(repository);
        return out;
      },
      [=](ArchiveRoom&) { return std::string{}; },
      [=](StateStored& stored) { record->states.push_back(stored.state->id); },
      [=](PrHeld& held) {
        record->held_pull_requests.push_back({held.pull_request->id, held.repositories.size()});
      },
      [=](PrCommitsCheck& check) { record->checks.push_back(check.commits); },
      [=](PrRefChange& change) { record->ref_changes.push_back(change); },
      [=](PrRefsDelete& request) {
        std::vector<PrRefPushed> left;
        for (const auto& ref : request.refs) {
          record->ref_deletions.push_back(ref);
          if (auto it = record->refs_left.find(ref.id); it != record->refs_left.end())
            left.push_back({ref.id, it->second});
        }
        return left;
      },
      [=](PrMirror& mirror) { record->mirrors.push_back(mirror); },
      [=](atom::git_deleted, std::uint64_t, std::vector<PrRefPushed>&) {},
      [=](atom::git_pushed, GitDataArrived&) {},
      [=](atom::git_found, GitDataArrived&) {},
      [=](atom::git_fetch, RepositoryRef&, std::string&, std::vector<std::string>&, std::string&) {
      },
      [=](atom::git_maintain) {},
      [=](atom::git_maintained, bool) {},
      [=](atom::git_recheck) {},
      [=](atom::feed_subscribe, git_data_feed_actor& subscriber) {
        record->subscribers.push_back(subscriber);
      },
      [=](atom::shutdown) { return true; },
  };
}

}  // namespace graspd::test
