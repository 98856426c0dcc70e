#include "runtime/boot/wire_policy.hpp"

#include <algorithm>
#include <chrono>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "runtime/ops/log.hpp"
#include "runtime/ops/metrics.hpp"

namespace graspd::boot {

policy::PolicyConfig policy_config(const runtime::Config& config) {
  policy::PolicyConfig out;
  out.service = config.domain.address;
  out.event_blacklist = config.event_blacklist;
  out.repository_whitelist = config.repository_whitelist;
  out.repository_blacklist = config.repository_blacklist;
  out.archive.all = config.archive_all;
  out.archive.whitelist = config.archive_whitelist;
  out.archive.grasp_services = config.archive_grasp_services;
  out.archive.read_only = config.archive_read_only;
  out.pr_submissions = config.grasp06_enable;
  return out;
}

namespace {

/// Purgatory's bounds and shares from the configuration.
policy::PurgatoryLimits purgatory_limits(const runtime::Config& c) {
  policy::PurgatoryLimits limits;
  limits.hold_seconds = static_cast<std::int64_t>(c.purgatory_hold_secs);
  limits.max_held = c.purgatory_max_events;
  limits.max_bytes = c.purgatory_max_bytes;
  limits.max_repositories = c.purgatory_max_repositories;
  limits.author_share = static_cast<double>(c.purgatory_author_share_percent) / 100.0;
  limits.address_share = static_cast<double>(c.purgatory_address_share_percent) / 100.0;
  limits.sync_share = static_cast<double>(c.purgatory_sync_share_percent) / 100.0;
  limits.max_remembered = c.purgatory_remembered_ids;
  limits.max_pr_repositories = c.pr_max_repositories;
  return limits;
}

}  // namespace

AcceptanceConfig acceptance_config(const runtime::Config& config) {
  AcceptanceConfig out;
  out.policy = policy_config(config);
  if (!config.purgatory_enabled) return out;
  out.purgatory_enabled = true;
  out.purgatory = purgatory_limits(config);
  // Holds and placeholders end within a quarter of their length (short holds, in tests, too).
  out.expiry_interval = std::clamp(std::chrono::seconds(config.purgatory_hold_secs / 4),
                                   std::chrono::seconds(1), std::chrono::seconds(30));
  // Git hosting checks a state's objects within milliseconds when idle; a client waits at most
  // this long for the answer (a held state is answered as held then).
  out.state_answer_wait = std::chrono::milliseconds(2000);
  return out;
}

WiredPolicy wire_policy(const Services& services, const WiredStore& store, git_host_actor git) {
  if (services.config.acceptance_policy == runtime::AcceptanceMode::open) {
    log::warn("relay", "NGIT_ACCEPTANCE_POLICY=open: every valid event is stored (no GRASP-01)");
    return {};
  }
  auto config = acceptance_config(services.config);
  config.git = std::move(git);
  std::shared_ptr<policy::PurgatoryFigures> figures;
  if (config.purgatory_enabled) {
    figures = std::make_shared<policy::PurgatoryFigures>();
    config.purgatory_figures = figures;
  }
  auto handle = services.system.spawn(acceptance, std::move(config),
                                      std::shared_ptr<const store::EventStore>(store.store),
                                      store.writer, services.metrics.shared_registry());
  caf::anon_send(store.writer, atom::feed_subscribe::value,
                 caf::actor_cast<store_feed_actor>(handle));
  log::info("acceptance", "GRASP-01 acceptance policy for ", services.config.domain.text,
            figures ? " (purgatory on)" : " (purgatory off)");
  return {handle, figures};
}

void stop(const WiredPolicy& wired) {
  caf::anon_send_exit(wired.acceptance, caf::exit_reason::user_shutdown);
}

}  // namespace graspd::boot
