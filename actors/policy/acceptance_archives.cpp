// The acceptance actor and GRASP-05 archives (docs/policy.md "Archives"): a new archive is asked
// room of git hosting before it is held, and an archive whose hold ends is not remembered.
#include <caf/typed_event_based_actor.hpp>

#include "actors/policy/acceptance_steps.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::acceptance_steps {

void with_archive_room(Self self, Submission submission, policy::Decision decision,
                       void (*next)(Self, Submission, policy::Decision)) {
  auto& git = self->state.config.git;
  if (!git) return next(self, std::move(submission), std::move(decision));
  const auto& ev = *submission.event;
  RepositoryRef repository{ev.pubkey, std::string(ev.d_tag())};
  // Awaited, like every question to git hosting, to keep the decision order.
  auto go_on = [self, submission, decision, next](const std::string& refusal) mutable {
    if (!refusal.empty()) return submission.reply(AcceptanceVerdict{false, refusal, {}});
    next(self, std::move(submission), std::move(decision));
  };
  self->request(git, caf::infinite, ArchiveRoom{std::move(repository)})
      .await([go_on](std::string& refusal) mutable { go_on(refusal); },
             [go_on](caf::error&) mutable { go_on({}); });
}

std::set<std::string> expiring_archives(Self self, std::int64_t now) {
  auto& st = self->state;
  std::set<std::string> out;
  if (!st.config.policy.archive.any_source()) return out;
  nostr::Filter announcements;
  announcements.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_announcement};
  st.purgatory->scan({announcements}, [&](const nostr::Event& ev) {
    const auto* held = st.purgatory->find(ev.id);
    if (held && held->expires_at <= now && policy::is_archive(st.config.policy, ev))
      out.insert(std::string(ev.d_tag()));
    return true;
  });
  return out;
}

}  // namespace graspd::acceptance_steps
