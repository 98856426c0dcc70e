// The NIP-86 management API: the method engine over the lists (actors/ops/engine/management_lists)
// and the management actor between the HTTP transport, the acceptance actor and the store writer
// (actors/ops/management), under the deterministic test coordinator.
#include "actors/ops/management.hpp"

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include <algorithm>

#include "actors/ops/engine/management_lists.hpp"
#include "actors/policy/acceptance.hpp"
#include "actors/store/store_writer.hpp"
#include "messages/nostr/nip19.hpp"
#include "tests/store/store_test_util.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/nip98_token.hpp"

namespace graspd {
namespace {

using nostr::nip86::Method;
using ops::ManagementLists;

nostr::Pubkey pubkey_of(std::uint8_t key) {
  return *nostr::pubkey_from_secret(test::secret_key(key));
}

// ------------------------------------------------------------------ the method engine

ops::ConfiguredLists configured(bool allow_list = true) {
  ops::ConfiguredLists lists;
  lists.banned_pubkeys = {pubkey_of(0x31)};
  if (allow_list) lists.allowed_pubkeys = {pubkey_of(0x32)};
  return lists;
}

TEST(ManagementLists, ConfiguredEntriesAreListedAsConfigAndCannotBeRemoved) {
  ManagementLists lists(configured());
  auto hex = nostr::to_hex(pubkey_of(0x31));
  auto listed = lists.plan(Method::listbannedpubkeys, {});
  EXPECT_EQ(listed.result_json, "[{\"pubkey\":\"" + hex + "\",\"reason\":\"config\"}]");
  auto unban = lists.plan(Method::unbanpubkey, {hex});
  EXPECT_EQ(unban.error, "configured in NGIT_EVENT_BLACKLIST: remove it there");
  // Banning it again changes nothing.
  auto ban = lists.plan(Method::banpubkey, {hex});
  EXPECT_TRUE(ban.error.empty());
  EXPECT_FALSE(ban.changes_something());
}

TEST(ManagementLists, ABanIsPlannedThenCommittedWithItsReason) {
  ManagementLists lists(configured());
  auto hex = nostr::to_hex(pubkey_of(0x33));
  auto ban = lists.plan(Method::banpubkey, {hex, "spam"});
  ASSERT_TRUE(ban.changes_something());
  EXPECT_EQ(ban.result_json, "true");
  EXPECT_FALSE(lists.contains(ModerationList::banned_pubkeys, pubkey_of(0x33)));
  lists.commit(ban.changes);
  EXPECT_NE(
      lists.plan(Method::listbannedpubkeys, {}).result_json.find(hex + "\",\"reason\":\"spam"),
      std::string::npos);
  auto unban = lists.plan(Method::unbanpubkey, {hex});
  ASSERT_EQ(unban.changes.erases.size(), 1u);
  lists.commit(unban.changes);
  EXPECT_FALSE(lists.contains(ModerationList::banned_pubkeys, pubkey_of(0x33)));
  // Unbanning what is not banned is answered true, with nothing to change.
  EXPECT_FALSE(lists.plan(Method::unbanpubkey, {hex}).changes_something());
}

TEST(ManagementLists, BanningAnEventDeletesIt) {
  ManagementLists lists(configured());
  auto id = nostr::to_hex(pubkey_of(0x34));
  auto ban = lists.plan(Method::banevent, {id, "illegal"});
  ASSERT_EQ(ban.changes.delete_events.size(), 1u);
  lists.commit(ban.changes);
  EXPECT_EQ(lists.plan(Method::listbannedevents, {}).result_json,
            "[{\"id\":\"" + id + "\",\"reason\":\"illegal\"}]");
}

TEST(ManagementLists, ParamsAreCheckedAndUnknownMethodsRefused) {
  ManagementLists lists(configured());
  for (auto params : std::vector<std::vector<std::string>>{
           {}, {"zz"}, {"npub1xyz"}, {std::string(64, 'a'), "reason", "extra"}})
    EXPECT_NE(lists.plan(Method::banpubkey, params).error.rfind("invalid params", 0),
              std::string::npos);
  EXPECT_EQ(lists.plan(Method::unsupported, {}).error, "unsupported method");
}

TEST(ManagementLists, AllowMethodsNeedAnAllowListAndBansTheAcceptancePolicy) {
  ManagementLists without_allow_list(configured(false));
  EXPECT_EQ(without_allow_list.plan(Method::listallowedpubkeys, {}).error,
            "no allow list in use: NGIT_REPOSITORY_WHITELIST has no npub entry");
  auto methods = without_allow_list.available_methods();
  EXPECT_EQ(std::count(methods.begin(), methods.end(), "allowpubkey"), 0);
  EXPECT_EQ(std::count(methods.begin(), methods.end(), "banpubkey"), 1);
  auto open = configured();
  open.bans_available = false;
  ManagementLists open_relay(open);
  EXPECT_FALSE(open_relay.plan(Method::banpubkey, {std::string(64, 'a')}).error.empty());
  EXPECT_EQ(open_relay.plan(Method::supportedmethods, {}).result_json, "[\"supportedmethods\"]");
}

// ------------------------------------------------------------------ the actor

constexpr std::int64_t t0 = 1'700'000'000;
constexpr std::uint8_t operator_key = 0x21;
constexpr std::uint8_t admin_key = 0x22;
const std::string domain = "relay.example.com";

class ManagementTest : public test::ActorTest {
 protected:
  ManagementTest() : store_(std::make_shared<store::EventStore>(store::test::options_for(dir_))) {
    StoreWriterConfig writer_config;
    writer_config.sweep_interval = std::chrono::seconds(0);
    writer_ = spawn(store_writer, store_, writer_config);
    AcceptanceConfig config;
    config.policy.service = *parse_host_port(domain);
    config.unix_now = [] { return t0; };
    acceptance_ = spawn(acceptance, config, std::shared_ptr<const store::EventStore>(store_),
                        writer_, nullptr);
    run();
    management_ = spawn_management();
  }

  management_actor spawn_management() {
    actors::ManagementConfig config;
    config.auth.urls = {"https://" + domain + "/", "wss://" + domain + "/"};
    config.admins = {pubkey_of(operator_key), pubkey_of(admin_key)};
    store_->for_each_moderation([&](const ModerationEntry& e) { config.stored.push_back(e); });
    config.unix_now = [this] { return unix_now_; };
    auto handle = spawn(actors::management, config, acceptance_, writer_, nullptr);
    run();
    return handle;
  }

  static std::string body_of(const std::string& method, std::vector<std::string> params = {}) {
    std::string body = "{\"method\":\"" + method + "\",\"params\":[";
    for (std::size_t i = 0; i < params.size(); ++i) body += (i ? ",\"" : "\"") + params[i] + "\"";
    return body + "]}";
  }

  test::HttpAuthToken token_for(const std::string& body, std::uint8_t key = operator_key) {
    test::HttpAuthToken token;
    token.url = "wss://" + domain;
    token.payload_of = body;
    token.created_at = unix_now_;
    token.key = key;
    return token;
  }

  ManagementAnswer post(const std::string& authorization, const std::string& body) {
    auto answer = request<ManagementAnswer>(management_, ManagementCall{authorization, body});
    EXPECT_TRUE(answer);
    return answer.value_or(ManagementAnswer{0, {}});
  }

  ManagementAnswer call(const std::string& method, std::vector<std::string> params = {}) {
    auto body = body_of(method, std::move(params));
    return post(test::http_auth_header(token_for(body)), body);
  }

  AcceptanceVerdict submit(const nostr::Event& ev) {
    auto verdict = request<AcceptanceVerdict>(
        acceptance_, AcceptanceQuery{std::make_shared<const nostr::Event>(ev), "ip:127.0.0.1"});
    EXPECT_TRUE(verdict);
    return verdict.value_or(AcceptanceVerdict{});
  }

  actors::ManagementState& state() {
    return ActorTest::state<actors::ManagementState, management_actor::base>(management_);
  }

  std::uint64_t calls(Method method, actors::CallOutcome outcome) {
    return state().calls[static_cast<std::size_t>(method)][static_cast<std::size_t>(outcome)];
  }

  test::TempDir dir_;
  std::shared_ptr<store::EventStore> store_;
  store_writer_actor writer_;
  acceptance_actor acceptance_;
  management_actor management_;
  std::int64_t unix_now_ = t0;
};

TEST_F(ManagementTest, EveryAuthenticationFailureIsTheSame401) {
  auto body = body_of("supportedmethods");
  const std::string unauthorized = R"({"error":"unauthorized"})";
  auto expect_refused = [&](const std::string& header) {
    auto answer = post(header, body);
    EXPECT_EQ(answer.status, 401u);
    EXPECT_EQ(answer.body, unauthorized);
  };
  expect_refused("");
  auto stranger = token_for(body, 0x44);
  expect_refused(test::http_auth_header(stranger));
  auto old = token_for(body);
  old.created_at = t0 - 120;
  expect_refused(test::http_auth_header(old));
  auto elsewhere = token_for(body);
  elsewhere.url = "wss://other.example.com/";
  expect_refused(test::http_auth_header(elsewhere));
  auto other_body = token_for("{}");
  expect_refused(test::http_auth_header(other_body));
  EXPECT_EQ(calls(Method::supportedmethods, actors::CallOutcome::unauthorized), 5u);
}

TEST_F(ManagementTest, ATokenIsGoodOnce) {
  auto body = body_of("supportedmethods");
  auto header = test::http_auth_header(token_for(body, admin_key));
  auto first = post(header, body);
  EXPECT_EQ(first.status, 200u);
  EXPECT_NE(first.body.find("\"banpubkey\""), std::string::npos);
  EXPECT_EQ(post(header, body).status, 401u);
}

TEST_F(ManagementTest, ABanAppliesAtOnceAndIsPersisted) {
  auto spammer = pubkey_of(0x55);
  auto note = test::signed_event(1, {}, t0, "spam", 0x55);
  EXPECT_EQ(call("banpubkey", {nostr::to_hex(spammer), "spam"}).body,
            R"({"result":true,"error":null})");
  auto verdict = submit(note);
  EXPECT_FALSE(verdict.accepted);
  EXPECT_EQ(verdict.message, "blocked: events of this author are not accepted here");
  bool stored = false;
  store_->for_each_moderation([&](const ModerationEntry& entry) {
    stored = entry.list == ModerationList::banned_pubkeys && entry.key == spammer &&
             entry.reason == "spam";
  });
  EXPECT_TRUE(stored);
  EXPECT_EQ(calls(Method::banpubkey, actors::CallOutcome::ok), 1u);

  // A restarted actor lists it from the store.
  auto restarted = spawn_management();
  auto body = body_of("listbannedpubkeys");
  auto answer = request<ManagementAnswer>(
      restarted, ManagementCall{test::http_auth_header(token_for(body)), body});
  ASSERT_TRUE(answer);
  EXPECT_NE(answer->body.find(nostr::to_hex(spammer)), std::string::npos);
}

TEST_F(ManagementTest, ABannedEventIsDeletedAndRefusedAfterwards) {
  auto event = test::signed_event(1, {}, t0, "x", 0x56);
  auto ptr = std::make_shared<const nostr::Event>(event);
  std::vector<nostr::EventPtr> batch{ptr};
  store_->write_batch(batch);
  ASSERT_TRUE(store_->contains(event.id));
  EXPECT_EQ(call("banevent", {nostr::to_hex(event.id)}).status, 200u);
  EXPECT_FALSE(store_->contains(event.id));
  auto verdict = submit(event);
  EXPECT_FALSE(verdict.accepted);
  EXPECT_EQ(verdict.message, "blocked: this event is banned here");
  EXPECT_EQ(call("listbannedevents").body,
            R"({"result":[{"id":")" + nostr::to_hex(event.id) + R"(","reason":""}],"error":null})");
}

TEST_F(ManagementTest, UnknownMethodsAndMalformedRequestsAreAnswered) {
  EXPECT_EQ(call("blockip", {"1.2.3.4"}).body, R"({"result":null,"error":"unsupported method"})");
  EXPECT_EQ(calls(Method::unsupported, actors::CallOutcome::error), 1u);
  std::string bad = R"({"method":"banpubkey"})";
  auto answer = post(test::http_auth_header(token_for(bad)), bad);
  EXPECT_EQ(answer.status, 400u);
  // A malformed body names no method: counted as `unsupported`.
  EXPECT_EQ(calls(Method::unsupported, actors::CallOutcome::invalid), 1u);
}

}  // namespace
}  // namespace graspd
