#include "runtime/boot/wire_admin.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <chrono>
#include <utility>

#include "messages/nostr/nip86.hpp"
#include "runtime/ops/log.hpp"
#include "runtime/ops/metrics.hpp"

namespace graspd::boot {

namespace {

/// NIP-86 names "the relay URL" without a scheme: the https:// and wss:// forms of NGIT_DOMAIN.
std::vector<std::string> accepted_urls(const runtime::Config& config) {
  return {"https://" + config.domain.text + "/", "wss://" + config.domain.text + "/"};
}

std::set<nostr::Pubkey> npub_entries(const std::vector<policy::RepositoryRule>& rules) {
  std::set<nostr::Pubkey> out;
  for (const auto& rule : rules)
    if (rule.owner && !rule.identifier) out.insert(*rule.owner);
  return out;
}

runtime::HttpResponse http_answer(ManagementAnswer answer) {
  runtime::HttpResponse response{answer.status, std::string(nostr::nip86::content_type),
                                 std::move(answer.body)};
  if (answer.status == 401) response.headers.emplace_back("WWW-Authenticate", "Nostr");
  return response;
}

}  // namespace

actors::ManagementConfig management_config(const runtime::Config& config) {
  actors::ManagementConfig out;
  out.auth.urls = accepted_urls(config);
  out.admins = config.admin_npubs;
  if (config.owner_npub) out.admins.insert(*config.owner_npub);
  out.lists.banned_pubkeys = config.event_blacklist;
  out.lists.allowed_pubkeys = npub_entries(config.repository_whitelist);
  out.lists.bans_available = config.acceptance_policy != runtime::AcceptanceMode::open;
  return out;
}

WiredAdmin wire_admin(const Services& services, const WiredStore& store,
                      const WiredPolicy& policy) {
  auto config = management_config(services.config);
  store.store->for_each_moderation(
      [&config](const ModerationEntry& entry) { config.stored.push_back(entry); });
  if (config.admins.empty())
    log::info("management",
              "NIP-86 management API: nobody may call it (set NGIT_OWNER_NPUB or "
              "NGIT_ADMIN_NPUBS)");
  auto handle = services.system.spawn(actors::management, std::move(config), policy.acceptance,
                                      store.writer, services.metrics.shared_registry());
  return {handle};
}

std::function<void(std::string, std::string, runtime::HttpRespond)> management_entry(
    caf::actor_system& system, const WiredAdmin& wired) {
  return [&system, management = wired.management](std::string authorization, std::string body,
                                                  runtime::HttpRespond respond) {
    system.spawn([management, call = ManagementCall{std::move(authorization), std::move(body)},
                  respond = std::move(respond)](caf::event_based_actor* self) {
      self->request(management, std::chrono::seconds(30), call)
          .then(
              [self, respond](ManagementAnswer& answer) {
                respond(http_answer(std::move(answer)));
                self->quit();
              },
              [self, respond](caf::error&) {
                respond(http_answer({503, nostr::nip86::error_answer("error: try again later")}));
                self->quit();
              });
      return caf::behavior{[](atom::shutdown) {}};
    });
  };
}

void stop(const WiredAdmin& wired) {
  caf::anon_send_exit(wired.management, caf::exit_reason::user_shutdown);
}

}  // namespace graspd::boot
