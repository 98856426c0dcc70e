// Deterministic actor tests under GoogleTest over CAF's test_coordinator (docs/toolchain.md §3):
// nothing runs until the test says so, and time only moves when the test advances it.
//
//   class MyTest : public graspd::test::ActorTest {};
//   TEST_F(MyTest, Ticks) {
//     auto h = spawn(my_actor, options);   // recorded: killed in the fixture's destructor
//     run();                               // drain every mailbox (does not fire timers)
//     advance_time(std::chrono::seconds(5));  // fire due timers, then run()
//     EXPECT_EQ(state<MyState, my_actor_type::base>(h).count, 1);
//     auto reply = request<std::string>(h, atom::status::value);
//   }
#pragma once

#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "messages/errors.hpp"

namespace graspd::test {

/// actor_system_config with the deterministic test scheduler and CAF logging off.
struct TestActorSystemConfig : caf::actor_system_config {
  TestActorSystemConfig() {
    set("scheduler.policy", caf::atom("testing"));
    set("logger.file-verbosity", caf::atom("quiet"));
    set("logger.console-verbosity", caf::atom("quiet"));
    add_error_categories(*this);
  }
};

class ActorTest : public ::testing::Test {
 protected:
  ActorTest()
      : system_(config_),
        scheduler_(dynamic_cast<caf::scheduler::test_coordinator&>(system_.scheduler())) {
    // Starting far from the epoch lets actors compute "now - duration" without underflow.
    scheduler_.clock().current_time += std::chrono::hours(1);
  }

  /// Kills every actor spawned through spawn(): an actor with a pending delayed message would
  /// otherwise keep ~actor_system waiting forever (teardown hang).
  ~ActorTest() override {
    for (const auto& handle : spawned_) caf::anon_send_exit(handle, caf::exit_reason::kill);
    scheduler_.run();
  }

  /// Spawns like actor_system::spawn and records the handle for teardown.
  template <class... Ts>
  auto spawn(Ts&&... args) {
    auto handle = system_.spawn(std::forward<Ts>(args)...);
    spawned_.push_back(caf::actor_cast<caf::actor>(handle));
    return handle;
  }

  /// Runs until every mailbox is empty; returns the number of jobs run. Timers do not fire.
  std::size_t run() { return scheduler_.run(); }

  /// Moves the clock forward, fires the timers that became due and runs to idle.
  /// Returns the number of timeouts that fired.
  std::size_t advance_time(caf::timespan duration) {
    auto fired = scheduler_.advance_time(duration);
    run();
    return fired;
  }

  /// The current test clock time.
  caf::actor_clock::time_point now() { return scheduler_.clock().now(); }

  /// True when some timer (delayed message or request timeout) is pending.
  bool has_pending_timeout() { return scheduler_.has_pending_timeout(); }

  /// State of a stateful actor. `Base` is caf::event_based_actor for untyped actors and
  /// `Handle::base` (typed_event_based_actor<...>) for typed ones.
  template <class State, class Base = caf::event_based_actor, class Handle>
  State& state(const Handle& handle) {
    auto* actor = caf::actor_cast<caf::abstract_actor*>(handle);
    return dynamic_cast<caf::stateful_actor<State, Base>&>(*actor).state;
  }

  /// Sends `args` to `handle` from a scoped actor, runs to idle and returns the reply, or
  /// std::nullopt when no reply of type `Result` arrived (or an error did).
  template <class Result, class Handle, class... Ts>
  std::optional<Result> request(const Handle& handle, Ts&&... args) {
    caf::scoped_actor self{system_};
    self->send(handle, std::forward<Ts>(args)...);
    run();
    std::optional<Result> reply;
    // An error leaves `reply` empty: the caller's assertion on it reports the failure.
    self->receive([&](Result& value) { reply = std::move(value); }, [&](caf::error&) {},
                  caf::after(std::chrono::seconds(0)) >> [] {});
    return reply;
  }

  /// Like request() for a request answered with an empty reply: std::nullopt when it succeeded (or
  /// nothing arrived: see `answered`), the error it was refused with otherwise.
  template <class Handle, class... Ts>
  std::optional<caf::error> request_refusal(const Handle& handle, bool& answered, Ts&&... args) {
    caf::scoped_actor self{system_};
    // A request (not a send), so that its empty reply is told apart from any other message.
    auto pending = self->request(handle, std::chrono::seconds(10), std::forward<Ts>(args)...);
    run();
    std::optional<caf::error> refusal;
    answered = false;
    std::move(pending).receive([&]() { answered = true; },
                               [&](caf::error& error) {
                                 answered = error != caf::sec::request_timeout;
                                 refusal = std::move(error);
                               });
    return refusal;
  }

  caf::actor_system& system() { return system_; }
  caf::scheduler::test_coordinator& scheduler() { return scheduler_; }

 private:
  TestActorSystemConfig config_;
  caf::actor_system system_;
  caf::scheduler::test_coordinator& scheduler_;
  std::vector<caf::actor> spawned_;
};

}  // namespace graspd::test
