// Payloads of git hosting's messages: what the acceptance actor tells the git hosting actor about
// events (announced, stored, held, withdrawn), the questions it asks it, and GitDataArrived, the
// one message by which git hosting announces git data. See messages/interfaces.hpp for who
// handles what, docs/git-hosting-design.md for the design and docs/spec/git-hosting.md for the
// rules.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/meta/type_name.hpp>

#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::nostr::nip34 {

// Found by argument-dependent lookup, so beside the type.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RepositoryRef& x) {
  return f(caf::meta::type_name("RepositoryRef"), x.owner, x.identifier, x.space);
}

}  // namespace graspd::nostr::nip34

namespace graspd {

using nostr::nip34::RepositoryRef;

/// An accepted announcement that lists this service, stored or held (§4.1): its repository is
/// created. Answered once the repository exists (an empty reply) or could not be created (a
/// git_errc error, logged), so that the announcement's OK comes after the repository is there.
struct RepoAnnounced {
  nostr::EventPtr announcement;
};

/// A held announcement's hold expired or a deletion withdrew it (§4.6, §4.7): its repository goes.
struct RepoWithdrawn {
  nostr::EventPtr announcement;
};

/// Is there a repository named `identifier` here, of any owner whose announcement is stored or
/// held? (A state for an identifier with none is stored at once: nothing could release it.)
struct RepoExists {
  std::string identifier;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RepoExists& x) {
  return f(caf::meta::type_name("RepoExists"), x.identifier);
}

/// Which of `repositories` exist here (in the order given)? Asked for the repositories a pull
/// request `a`-tags.
struct ReposHosted {
  std::vector<RepositoryRef> repositories;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ReposHosted& x) {
  return f(caf::meta::type_name("ReposHosted"), x.repositories);
}

/// GRASP-05 storage caps: may `repository` become a new archive here? Answered with the `blocked:`
/// refusal when the archive caps are reached, empty when it may (one already here always may).
struct ArchiveRoom {
  RepositoryRef repository;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ArchiveRoom& x) {
  return f(caf::meta::type_name("ArchiveRoom"), x.repository);
}

/// A state event (kind 30618) was stored or held: git hosting applies it to the repositories here,
/// fetching from the other clone URLs what it misses (§5.10, §8).
struct StateStored {
  nostr::EventPtr state;
  /// It came by sync from another relay: no push follows it here, so what it misses is fetched at
  /// once rather than after NGIT_GIT_FETCH_DELAY_SECS.
  bool by_sync = false;
};

/// A pull request event was held for its `c` commit: git hosting looks for it in `repositories`
/// (those here that the event `a`-tags) and fetches it by id when missing (§8.1).
struct PrHeld {
  nostr::EventPtr pull_request;
  std::vector<RepositoryRef> repositories;
};

/// Git data arrived for `repository`: look again for `commits` there (no fetch).
struct PrCommitsCheck {
  RepositoryRef repository;
  std::vector<std::string> commits;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PrCommitsCheck& x) {
  return f(caf::meta::type_name("PrCommitsCheck"), x.repository, x.commits);
}

/// A released pull request's `refs/nostr/<id>` ref in one repository: created at `commit` unless
/// it exists, so the PR stays fetchable (§7.4).
struct PrRefChange {
  RepositoryRef repository;
  nostr::EventId id{};
  std::string commit;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PrRefChange& x) {
  return f(caf::meta::type_name("PrRefChange"), x.repository, x.id, x.commit);
}

/// GRASP-06 (docs/policy.md "Pull request submissions"): a pull request whose commit is in
/// submission area `from` was released or stored; its commit is copied into each repository of
/// `to` (hosted here, `a`-tagged by it) and `refs/nostr/<id>` created there at it.
struct PrMirror {
  RepositoryRef from;
  nostr::EventId id{};
  std::string commit;
  std::vector<RepositoryRef> to;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PrMirror& x) {
  return f(caf::meta::type_name("PrMirror"), x.from, x.id, x.commit, x.to);
}

/// A pushed `refs/nostr/<id>` ref and the commit it now names.
struct PrRefPushed {
  nostr::EventId id{};
  std::string commit;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PrRefPushed& x) {
  return f(caf::meta::type_name("PrRefPushed"), x.id, x.commit);
}

/// Delete these `refs/nostr/<id>` refs of `repository`, each if it names its commit (placeholders
/// past their time or raced by their PR event, §7.3–7.4), in one git transaction. Answered with the
/// refs left there, each with the commit it names now (empty: unknown, try again later); every
/// other one is gone.
struct PrRefsDelete {
  RepositoryRef repository;
  std::vector<PrRefPushed> refs;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PrRefsDelete& x) {
  return f(caf::meta::type_name("PrRefsDelete"), x.repository, x.refs);
}

/// Git data arrived for `repository` (git hosting → its subscribers, the acceptance actor): a
/// push was applied (`states` and `commits` empty: its held events' holds restart, held pull
/// requests are checked again; `pr_refs` are its `refs/nostr/<id>` updates), every object of each
/// state in `states` is in that repository (they and the owner's held announcement leave
/// purgatory), or each commit in `commits` is there (the held pull requests naming it leave).
/// Alone, `awaiting` names states some of whose objects are in no repository here: no git data
/// arrived, they wait for a push or a fetch (the clients that sent them hear they are held).
struct GitDataArrived {
  RepositoryRef repository;
  std::vector<nostr::EventId> states;
  std::vector<PrRefPushed> pr_refs;
  std::vector<std::string> commits;
  std::vector<nostr::EventId> awaiting;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GitDataArrived& x) {
  return f(caf::meta::type_name("GitDataArrived"), x.repository, x.states, x.pr_refs, x.commits,
           x.awaiting);
}

}  // namespace graspd

// Events travel as shared pointers to immutable events (never serialized: every actor is local).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::RepoAnnounced)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::RepoWithdrawn)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::StateStored)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::PrHeld)
