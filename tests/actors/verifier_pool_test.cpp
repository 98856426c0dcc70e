// Deterministic tests of VerifierPool inside a small owner actor: the verifiers are taken in turn,
// no more than the cap is ever out, waiting checks go out as answers come back, checks run inline
// without verifiers, and a verifier that is gone answers "failed" without stalling the rest.
#include "actors/relay/verifier_pool.hpp"

#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <string>
#include <utility>
#include <vector>

#include "actors/relay/verifier.hpp"
#include "tests/messages/nostr_test_util.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/holding_verifier.hpp"

namespace graspd {
namespace {

using nostr::EventCheck;

struct OwnerState {
  VerifierPool pool;
  /// (content of the checked event, answer) in the order the answers reached the owner.
  std::vector<std::pair<std::string, VerifierPool::Answer>> answers;
  static inline const char* name = "verifier_pool_owner";
};

using Owner = caf::stateful_actor<OwnerState>;

caf::behavior pool_owner(Owner* self, std::vector<verifier_actor> verifiers, std::size_t max_out) {
  self->state.pool = VerifierPool(std::move(verifiers), max_out);
  return {
      [self](const VerifyEvent& request) {
        self->state.pool.check(self, request,
                               [self, content = request.event->content](VerifierPool::Answer a) {
                                 self->state.answers.emplace_back(content, a);
                               });
      },
  };
}

nostr::EventPtr event(const std::string& content) {
  return std::make_shared<const nostr::Event>(nostr::testing::signed_note(content));
}

class VerifierPoolTest : public test::ActorTest {
 protected:
  caf::actor owner(std::vector<verifier_actor> verifiers, std::size_t max_out) {
    auto handle = spawn(pool_owner, std::move(verifiers), max_out);
    run();
    return handle;
  }
  OwnerState& owner_state(const caf::actor& handle) { return state<OwnerState>(handle); }

  void ask(const caf::actor& handle, const std::string& content) {
    caf::anon_send(handle, VerifyEvent{event(content)});
  }

  /// Contents of the checks `verifier` holds, oldest first.
  std::vector<std::string> held(const verifier_actor& verifier) {
    std::vector<std::string> out;
    for (auto& [promise, ev] :
         state<test::HoldingVerifierState, verifier_actor::base>(verifier).held)
      out.push_back(ev->content);
    return out;
  }

  /// The held checks are answered, newest first.
  void release(const verifier_actor& verifier) {
    caf::anon_send(verifier, VerifyEvent{nullptr});
    run();
  }

  std::vector<std::string> answered(const caf::actor& handle) {
    std::vector<std::string> out;
    for (auto& [content, answer] : owner_state(handle).answers) {
      EXPECT_EQ(answer, EventCheck::ok) << content;
      out.push_back(content);
    }
    return out;
  }

  using Names = std::vector<std::string>;
};

TEST_F(VerifierPoolTest, VerifiersAreTakenInTurnAndTheCapHoldsTheRestBack) {
  std::vector<verifier_actor> verifiers{
      spawn(test::holding_verifier), spawn(test::holding_verifier), spawn(test::holding_verifier)};
  auto handle = owner(verifiers, 4);
  for (const char* name : {"e0", "e1", "e2", "e3", "e4", "e5"}) ask(handle, name);
  run();
  EXPECT_EQ(held(verifiers[0]), (Names{"e0", "e3"}));
  EXPECT_EQ(held(verifiers[1]), (Names{"e1"}));
  EXPECT_EQ(held(verifiers[2]), (Names{"e2"}));
  EXPECT_EQ(owner_state(handle).pool.out(), 4u);
  EXPECT_EQ(owner_state(handle).pool.waiting(), 2u);
  EXPECT_TRUE(owner_state(handle).answers.empty());

  // One answer frees one place: the next waiting check goes to the verifier whose turn it is.
  release(verifiers[1]);
  EXPECT_EQ(answered(handle), (Names{"e1"}));
  EXPECT_EQ(held(verifiers[1]), (Names{"e4"}));
  EXPECT_EQ(owner_state(handle).pool.waiting(), 1u);

  // Answers reach the owner in the order they come (newest first here), not in arrival order.
  release(verifiers[0]);
  EXPECT_EQ(answered(handle), (Names{"e1", "e3", "e0"}));
  EXPECT_EQ(held(verifiers[2]), (Names{"e2", "e5"}));
  EXPECT_EQ(owner_state(handle).pool.out(), 3u);
  EXPECT_EQ(owner_state(handle).pool.waiting(), 0u);

  release(verifiers[1]);
  release(verifiers[2]);
  EXPECT_EQ(answered(handle), (Names{"e1", "e3", "e0", "e4", "e5", "e2"}));
  EXPECT_EQ(owner_state(handle).pool.out(), 0u);
}

TEST_F(VerifierPoolTest, NoMoreThanTheCapIsEverOut) {
  std::vector<verifier_actor> verifiers{spawn(test::holding_verifier),
                                        spawn(test::holding_verifier)};
  auto handle = owner(verifiers, 3);
  const std::size_t total = 11;
  for (std::size_t i = 0; i < total; ++i) ask(handle, "e" + std::to_string(i));
  run();
  std::size_t turn = 0;
  while (owner_state(handle).answers.size() < total) {
    auto out = held(verifiers[0]).size() + held(verifiers[1]).size();
    auto left = total - owner_state(handle).answers.size();
    ASSERT_EQ(out, std::min<std::size_t>(3, left)) << "the cap is filled whenever checks wait";
    ASSERT_EQ(owner_state(handle).pool.out(), out);
    release(verifiers[turn++ % 2]);
  }
  EXPECT_EQ(owner_state(handle).pool.out(), 0u);
  EXPECT_EQ(owner_state(handle).pool.waiting(), 0u);
}

TEST_F(VerifierPoolTest, WithoutVerifiersTheCheckRunsInline) {
  auto handle = owner({}, 1);
  auto good = event("good");
  auto forged = std::make_shared<nostr::Event>(nostr::testing::signed_note("forged"));
  forged->sig[3] ^= 1;
  // The content changed, the id and signature did not: only a check of the id notices.
  auto edited = std::make_shared<nostr::Event>(nostr::testing::signed_note("edited"));
  edited->content = "edited later";
  caf::anon_send(handle, VerifyEvent{good});
  caf::anon_send(handle, VerifyEvent{forged});
  caf::anon_send(handle, VerifyEvent{edited});
  caf::anon_send(handle, VerifyEvent{edited, /*id_checked=*/true});
  run();
  auto& answers = owner_state(handle).answers;
  ASSERT_EQ(answers.size(), 4u);
  EXPECT_EQ(answers[0].second, EventCheck::ok);
  EXPECT_EQ(answers[1].second, EventCheck::bad_sig);
  EXPECT_EQ(answers[2].second, EventCheck::bad_id);
  EXPECT_EQ(answers[3].second, EventCheck::ok);
  EXPECT_EQ(owner_state(handle).pool.out(), 0u);
}

TEST_F(VerifierPoolTest, RealVerifiersAnswerWithTheCheck) {
  auto handle = owner({spawn(verifier), spawn(verifier)}, 8);
  auto forged = std::make_shared<nostr::Event>(nostr::testing::signed_note("forged"));
  forged->sig[3] ^= 1;
  caf::anon_send(handle, VerifyEvent{event("good")});
  caf::anon_send(handle, VerifyEvent{forged});
  run();
  auto& answers = owner_state(handle).answers;
  ASSERT_EQ(answers.size(), 2u);
  for (auto& [content, answer] : answers)
    EXPECT_EQ(answer, content == "good" ? EventCheck::ok : EventCheck::bad_sig) << content;
}

TEST_F(VerifierPoolTest, AVerifierThatIsGoneAnswersFailedAndFreesItsPlace) {
  auto gone = spawn(test::holding_verifier);
  caf::anon_send_exit(gone, caf::exit_reason::kill);
  run();
  auto handle = owner({gone}, 1);
  ask(handle, "first");
  ask(handle, "second");
  run();
  auto& answers = owner_state(handle).answers;
  ASSERT_EQ(answers.size(), 2u) << "the second check waited behind the first one's place";
  EXPECT_EQ(answers[0].second, std::nullopt);
  EXPECT_EQ(answers[1].second, std::nullopt);
  EXPECT_EQ(owner_state(handle).pool.out(), 0u);
}

}  // namespace
}  // namespace graspd
