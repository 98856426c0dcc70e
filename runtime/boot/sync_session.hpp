// One run of `graspd sync` on the network: a RelayClientHandler driving the NIP-77 client session,
// the download (REQ by ids, batches of at most 500, one in flight, the next after EOSE) into a
// SyncIngest, and the upload (EVENT, at most 100 unanswered, refilled at 50 like strfry sync).
// Everything runs on the one thread that runs the io_context: the handler, the timer, the store.
#pragma once

#include <utility>  // before Asio, see docs/toolchain.md §1

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <deque>
#include <iosfwd>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "messages/nostr/json.hpp"
#include "messages/nostr/negentropy_client.hpp"
#include "messages/nostr/relay_message.hpp"
#include "runtime/boot/sync_args.hpp"
#include "runtime/boot/sync_ingest.hpp"
#include "runtime/net/relay_client.hpp"
#include "store/lmdb/event_store.hpp"

namespace graspd::boot {

/// Where a run writes: `out` gets the --print-missing lines, `err` the progress and the log;
/// `terminal` = err is a terminal (a progress bar redrawn in place).
struct SyncOutput {
  std::ostream& out;
  std::ostream& err;
  bool terminal = false;
};

class SyncSession final : public runtime::RelayClientHandler,
                          public std::enable_shared_from_this<SyncSession> {
 public:
  /// `ingest` is null when nothing is downloaded.
  SyncSession(boost::asio::io_context& io, SyncArgs args,
              std::shared_ptr<const store::EventStore> store, std::unique_ptr<SyncIngest> ingest,
              nostr::negentropy::ClientSession negentropy, nostr::ParseLimits limits,
              SyncOutput output);

  /// Dials the relay; the io_context's run() returns once the run is over.
  void start(const ParsedUrl& url, runtime::RelayClientOptions options);

  void on_open(runtime::PeerLimits peer, bool compressed) override;
  void on_message(std::string&& text) override;
  void on_close(bool was_open, std::string reason) override;

  /// Why the run failed; nullopt after a complete sync.
  const std::optional<std::string>& failure() const { return failure_; }
  SyncFigures figures() const;

 private:
  using Clock = std::chrono::steady_clock;

  void dispatch(nostr::RelayMessage& message);
  void on_neg_msg(const nostr::RelayNegMsg& msg);
  void on_neg_err(const nostr::RelayNegErr& msg);
  void on_notice(const nostr::RelayNotice& msg);
  void on_event(nostr::RelayEvent& msg);
  void on_eose();
  void on_closed(const nostr::RelayClosed& msg);
  void on_ok(const nostr::RelayOk& msg);
  void take_round(const nostr::negentropy::ClientRound& round);
  void pump();
  void request_next_batch();
  void send_uploads();
  void fail(std::string why);
  void finish();
  void arm_timer();
  void on_tick();
  void draw_progress(bool force);
  void say(const std::string& line);

  boost::asio::io_context& io_;
  SyncArgs args_;
  std::shared_ptr<const store::EventStore> store_;
  std::unique_ptr<SyncIngest> ingest_;
  nostr::negentropy::ClientSession negentropy_;
  nostr::ParseLimits limits_;
  SyncOutput output_;
  std::shared_ptr<runtime::RelayClient> client_;
  boost::asio::steady_timer timer_;

  std::deque<nostr::EventId> to_fetch_;
  /// Ids of the REQ in flight not received yet.
  std::set<nostr::EventId> asked_;
  bool request_open_ = false;
  std::deque<nostr::EventId> to_send_;
  std::set<nostr::EventId> unanswered_;

  SyncFigures figures_;
  bool first_neg_msg_seen_ = false;
  bool finished_ = false;
  std::optional<std::string> failure_;
  std::uint64_t logged_refusals_ = 0;
  Clock::time_point started_ = Clock::now();
  Clock::time_point last_activity_ = Clock::now();
  ProgressThrottle throttle_;
  bool bar_drawn_ = false;
};

}  // namespace graspd::boot
