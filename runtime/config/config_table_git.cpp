// The option table's git hosting section: repositories, Smart HTTP bounds, fetches, maintenance,
// purgatory and pull requests.
#include "runtime/config/option_setters.hpp"

namespace graspd::runtime::option_setters {

/// Git hosting (docs/spec/git-hosting.md): where repositories live and what one git request may
/// cost.
std::vector<OptionSpec> git_options() {
  return {
      {"git_data_path", "NGIT_GIT_DATA_PATH", "--git-data-path", "path", "./data/git",
       "Directory of the bare git repositories (<npub>/<identifier>.git).",
       [](Config& config, std::string_view text) -> Expectation {
         if (text.empty()) return "expected a directory path";
         config.git_data_path = std::string(text);
         return std::nullopt;
       }},
      {"git_max_body_bytes", "NGIT_GIT_MAX_BODY_BYTES", "--git-max-body-bytes", "integer",
       "1073741824",
       "Largest git request body (a push's pack), as sent and after gzip decoding; larger ones "
       "get 413.",
       uint_option(&C::git_max_body_bytes, 65536, 1ull << 40)},
      {"git_recheck_interval_secs", "NGIT_GIT_RECHECK_INTERVAL_SECS", "--git-recheck-interval-secs",
       "seconds", "3600",
       "How often every repository's git data is looked at against its newest state, fetching what "
       "is missing from the other clone URLs at once (GRASP-02: at least hourly); a round hands "
       "the state applier 16 identifiers every 5 seconds. 0 = never.",
       uint_option(&C::git_recheck_interval_secs, 0, 604800)},
      {"git_timeout_secs", "NGIT_GIT_TIMEOUT_SECS", "--git-timeout-secs", "seconds", "600",
       "Wall-clock limit of one git request; its git process is killed after it.",
       uint_option(&C::git_timeout_secs, 1, 86400)},
      {"git_idle_timeout_secs", "NGIT_GIT_IDLE_TIMEOUT_SECS", "--git-idle-timeout-secs", "seconds",
       "60", "A git client that sends or takes nothing for this long is disconnected.",
       uint_option(&C::git_idle_timeout_secs, 1, 3600)},
      {"git_max_processes", "NGIT_GIT_MAX_PROCESSES", "--git-max-processes", "integer", "8",
       "Git processes serving clients at once; requests beyond wait in line for one "
       "(NGIT_GIT_QUEUE_SECS).",
       uint_option(&C::git_max_processes, 1, 1024)},
      {"git_queue_secs", "NGIT_GIT_QUEUE_SECS", "--git-queue-secs", "seconds", "30",
       "How long a git request waits for a free git process (oldest first, at most 1024 "
       "waiting) before it gets 503 with Retry-After; 0 = 503 at once.",
       uint_option(&C::git_queue_secs, 0, 3600)},
      {"git_max_processes_per_ip", "NGIT_GIT_MAX_PROCESSES_PER_IP", "--git-max-processes-per-ip",
       "integer", "2",
       "Git processes serving one client address at once; its requests beyond wait in line "
       "while other addresses are served; 0 = no share.",
       uint_option(&C::git_max_processes_per_ip, 0, 1024)},
      {"git_max_connections", "NGIT_GIT_MAX_CONNECTIONS", "--git-max-connections", "integer", "512",
       "Git HTTP connections open at once; beyond, 503 at once; 0 = unlimited.",
       uint_option(&C::git_max_connections, 0, 1000000)},
      {"git_max_connections_per_ip", "NGIT_GIT_MAX_CONNECTIONS_PER_IP",
       "--git-max-connections-per-ip", "integer", "16",
       "Git HTTP connections open at once from one client address; beyond, 503 at once; 0 = "
       "unlimited.",
       uint_option(&C::git_max_connections_per_ip, 0, 1000000)},
      {"git_min_body_rate", "NGIT_GIT_MIN_BODY_RATE", "--git-min-body-rate", "integer", "1024",
       "A git request body must average this many bytes a second once NGIT_GIT_IDLE_TIMEOUT_SECS "
       "of waiting for it have passed, or the connection is closed; 0 = no minimum.",
       uint_option(&C::git_min_body_rate, 0, 1ull << 30)},
      {"git_maintenance_interval_secs", "NGIT_GIT_MAINTENANCE_INTERVAL_SECS",
       "--git-maintenance-interval-secs", "seconds", "600",
       "A repository written to (a push, a fetch) gets git gc --auto this long after the write, "
       "and "
       "at most once per this long, one repository at a time under NGIT_GIT_MAX_PROCESSES; 0 = "
       "never.",
       uint_option(&C::git_maintenance_interval_secs, 0, 7 * 86400)},
      {"git_maintenance_timeout_secs", "NGIT_GIT_MAINTENANCE_TIMEOUT_SECS",
       "--git-maintenance-timeout-secs", "seconds", "1800",
       "Wall-clock limit of one repository's maintenance; git is killed after it.",
       uint_option(&C::git_maintenance_timeout_secs, 1, 86400)},
      {"git_maintenance_max_memory_bytes", "NGIT_GIT_MAINTENANCE_MAX_MEMORY_BYTES",
       "--git-maintenance-max-memory-bytes", "integer", "1073741824",
       "Address space of a maintenance run (git and what it starts); git's pack window and caches "
       "are sized within it; 0 = unlimited.",
       uint_option(&C::git_maintenance_max_memory_bytes, 0, 1ull << 40)},
      {"git_max_nostr_refs", "NGIT_GIT_MAX_NOSTR_REFS", "--git-max-nostr-refs", "integer", "10000",
       "refs/nostr/<id> refs one repository may have (anyone may push them); a push that would "
       "pass it is refused, each of its refs answered `[remote rejected]` with the reason; 0 = "
       "unlimited.",
       uint_option(&C::git_max_nostr_refs, 0, 10'000'000)},
      {"git_max_nostr_ref_bytes", "NGIT_GIT_MAX_NOSTR_REF_BYTES", "--git-max-nostr-ref-bytes",
       "integer", "2097152",
       "Bytes the refs/nostr refs of one repository may take in its ref listing (`<id> <name>` "
       "lines), so the listing every clone and push reads stays far below its 16 MiB cap; a push "
       "that would pass it is refused as for NGIT_GIT_MAX_NOSTR_REFS; 0 = unlimited.",
       uint_option(&C::git_max_nostr_ref_bytes, 0, 1ull << 30)},
      {"git_pushes_per_minute_per_ip", "NGIT_GIT_PUSHES_PER_MINUTE_PER_IP",
       "--git-pushes-per-minute-per-ip", "integer", "60",
       "Pushes one client address may make a minute (bursts up to as many); past it each ref is "
       "answered `[remote rejected] (rate-limited: …)` and counted in graspd_git_refused_total "
       "{reason=\"push_rate\"}; 0 = unlimited.",
       uint_option(&C::git_pushes_per_minute_per_ip, 0, 1'000'000)},
      {"git_fetch_enabled", "NGIT_GIT_FETCH_ENABLED", "--git-fetch-enabled", "bool", "true",
       "Fetch the objects a stored state event names but no repository here has, by id, from "
       "the repository's other clone URLs.",
       bool_option(&C::git_fetch_enabled)},
      {"git_fetch_delay_secs", "NGIT_GIT_FETCH_DELAY_SECS", "--git-fetch-delay-secs", "seconds",
       "60",
       "A client's state event waits at most this long for a push to this server before what it "
       "misses is fetched (see NGIT_GIT_FETCH_PUSH_WINDOW_SECS).",
       uint_option(&C::git_fetch_delay_secs, 0, 86400)},
      {"git_fetch_timeout_secs", "NGIT_GIT_FETCH_TIMEOUT_SECS", "--git-fetch-timeout-secs",
       "seconds", "300", "Wall-clock limit of one fetch from another clone URL.",
       uint_option(&C::git_fetch_timeout_secs, 1, 86400)},
      {"git_fetch_max_running", "NGIT_GIT_FETCH_MAX_RUNNING", "--git-fetch-max-running", "integer",
       "4", "Fetches from other clone URLs running at once, over the whole daemon.",
       uint_option(&C::git_fetch_max_running, 1, 256)},
      {"git_fetch_max_per_host", "NGIT_GIT_FETCH_MAX_PER_HOST", "--git-fetch-max-per-host",
       "integer", "2", "Fetches running at once from one host (host:port).",
       uint_option(&C::git_fetch_max_per_host, 1, 256)},
      {"git_fetch_per_host_per_minute", "NGIT_GIT_FETCH_PER_HOST_PER_MINUTE",
       "--git-fetch-per-host-per-minute", "integer", "60",
       "Fetches started from one host in any 60 s; more wait.",
       uint_option(&C::git_fetch_per_host_per_minute, 1, 100000)},
      {"git_fetch_host_skip_secs", "NGIT_GIT_FETCH_HOST_SKIP_SECS", "--git-fetch-host-skip-secs",
       "seconds", "3600",
       "A host that failed DNS, connect or TLS is not fetched from for this long; 0 = never "
       "skipped.",
       uint_option(&C::git_fetch_host_skip_secs, 0, 7 * 86400)},
      {"git_fetch_max_requests_per_author", "NGIT_GIT_FETCH_MAX_REQUESTS_PER_AUTHOR",
       "--git-fetch-max-requests-per-author", "integer", "16",
       "Fetch requests kept at once for one author (of the state, whose repository's owner "
       "counts, or of the pull request); beyond, its new ones are not fetched; 0 = no share.",
       uint_option(&C::git_fetch_max_requests_per_author, 0, 100000)},
      {"git_fetch_max_running_per_author", "NGIT_GIT_FETCH_MAX_RUNNING_PER_AUTHOR",
       "--git-fetch-max-running-per-author", "integer", "2",
       "Fetches running at once for one author (half the default NGIT_GIT_FETCH_MAX_RUNNING: one "
       "stalled source of theirs leaves them another); its other requests wait while other "
       "authors' start; 0 = no share.",
       uint_option(&C::git_fetch_max_running_per_author, 0, 256)},
      {"git_fetch_max_requests_per_repository", "NGIT_GIT_FETCH_MAX_REQUESTS_PER_REPOSITORY",
       "--git-fetch-max-requests-per-repository", "integer", "8",
       "Fetch requests kept at once for pull requests' commits into one repository; beyond, new "
       "ones are not fetched (the repository's own state always has its request); 0 = no share.",
       uint_option(&C::git_fetch_max_requests_per_repository, 0, 100000)},
      {"git_fetch_max_running_per_repository", "NGIT_GIT_FETCH_MAX_RUNNING_PER_REPOSITORY",
       "--git-fetch-max-running-per-repository", "integer", "1",
       "Fetches running at once into one repository; 0 = no share.",
       uint_option(&C::git_fetch_max_running_per_repository, 0, 256)},
      {"git_fetch_push_window_secs", "NGIT_GIT_FETCH_PUSH_WINDOW_SECS",
       "--git-fetch-push-window-secs", "seconds", "10",
       "A client's state waits this long for its push to begin before what it misses is fetched; "
       "while a push to the repository is under way then, the wait goes on, by as much again each "
       "time, up to NGIT_GIT_FETCH_DELAY_SECS. A state that came by sync is fetched at once.",
       uint_option(&C::git_fetch_push_window_secs, 0, 86400)},
      {"git_fetch_urls_per_other_owner", "NGIT_GIT_FETCH_URLS_PER_OTHER_OWNER",
       "--git-fetch-urls-per-other-owner", "integer", "2",
       "Clone URLs a fetch takes from each announcement of the identifier by another owner than "
       "the repository's owner and maintainers (whose URLs are tried first, all of them); 0 = "
       "none.",
       uint_option(&C::git_fetch_urls_per_other_owner, 0, 64)},
      {"git_state_max_siblings", "NGIT_GIT_STATE_MAX_SIBLINGS", "--git-state-max-siblings",
       "integer", "4",
       "Other repositories here with the identifier that a state's missing objects are copied "
       "from before they are fetched, at most (the one just pushed first, then those whose state "
       "names them).",
       uint_option(&C::git_state_max_siblings, 0, 1024)},
      {"purgatory_enabled", "NGIT_PURGATORY_ENABLED", "--purgatory-enabled", "bool", "true",
       "Hold new announcements, state events whose git objects are missing and pull requests "
       "(kinds 1618/1619) whose commit is missing in purgatory (not stored, not served) until the "
       "git data arrives, and delete refs/nostr/<id> refs pushed for a PR event that does not "
       "arrive in time; false stores them at once.",
       bool_option(&C::purgatory_enabled)},
      {"purgatory_hold_secs", "NGIT_PURGATORY_HOLD_SECS", "--purgatory-hold-secs", "seconds",
       "1800",
       "How long an event waits in purgatory for its git data before it is dropped (and an "
       "announcement's repository with it), and how long a refs/nostr/<id> ref pushed before its "
       "PR event is kept; expiry is checked every quarter of it (at most every 30 s).",
       uint_option(&C::purgatory_hold_secs, 4, 7 * 86400)},
      {"purgatory_max_events", "NGIT_PURGATORY_MAX_EVENTS", "--purgatory-max-events", "integer",
       "10000",
       "Events held in purgatory at most; beyond it new ones are refused (`OK false \"error: too "
       "many events are waiting for git data here\"`).",
       uint_option(&C::purgatory_max_events, 1, 10'000'000)},
      {"purgatory_max_bytes", "NGIT_PURGATORY_MAX_BYTES", "--purgatory-max-bytes", "integer",
       "67108864", "Approximate bytes of the events held in purgatory at most (its memory).",
       uint_option(&C::purgatory_max_bytes, 65536, 1ull << 40)},
      {"purgatory_max_repositories", "NGIT_PURGATORY_MAX_REPOSITORIES",
       "--purgatory-max-repositories", "integer", "1000",
       "Held announcements at most: each has a repository directory on disk, so this bounds the "
       "disk purgatory takes.",
       uint_option(&C::purgatory_max_repositories, 1, 10'000'000)},
      {"purgatory_author_share_percent", "NGIT_PURGATORY_AUTHOR_SHARE_PERCENT",
       "--purgatory-author-share-percent", "integer", "1",
       "The part of each purgatory bound (events, bytes, repositories) one author may hold; "
       "beyond it their new events get `OK false \"rate-limited: …\"` while others are still "
       "held.",
       uint_option(&C::purgatory_author_share_percent, 1, 100)},
      {"purgatory_address_share_percent", "NGIT_PURGATORY_ADDRESS_SHARE_PERCENT",
       "--purgatory-address-share-percent", "integer", "5",
       "The part of each purgatory bound the events sent from one client address (IPv6: one /64) "
       "may hold, and each sync peer alone; beyond it `OK false \"rate-limited: …\"`.",
       uint_option(&C::purgatory_address_share_percent, 1, 100)},
      {"purgatory_sync_share_percent", "NGIT_PURGATORY_SYNC_SHARE_PERCENT",
       "--purgatory-sync-share-percent", "integer", "50",
       "The part of each purgatory bound the events that arrived by sync (they have no client "
       "address) may hold together, so clients always find room.",
       uint_option(&C::purgatory_sync_share_percent, 1, 100)},
      {"purgatory_remembered_ids", "NGIT_PURGATORY_REMEMBERED_IDS", "--purgatory-remembered-ids",
       "integer", "100000",
       "Ids of expired held events remembered at most (for 7 days: sync does not bring them back); "
       "beyond it the one due to be forgotten soonest goes.",
       uint_option(&C::purgatory_remembered_ids, 0, 10'000'000)},
      {"pr_max_repositories", "NGIT_PR_MAX_REPOSITORIES", "--pr-max-repositories", "integer", "16",
       "A pull request's (kind 1618/1619) repository `a` tags considered at most: its first this "
       "many repositories are those it is held for, looked for and fetched into; later tags stay "
       "in the event but do nothing here.",
       uint_option(&C::pr_max_repositories, 1, 1000)},
  };
}

}  // namespace graspd::runtime::option_setters
