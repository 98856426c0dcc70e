// The relay key's sources, in order (systemd credential, NGIT_RELAY_OWNER_NSEC, key file), the
// generated file and the errors naming their source (docs/identity.md).
#include "runtime/config/relay_key.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "messages/nostr/nip19.hpp"
#include "tests/support/config_loading.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd::runtime {
namespace {

using test::Env;
using test::load_ok;
using test::lookup;

constexpr const char* test_nsec = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
constexpr const char* test_nsec_hex =
    "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa";
// A second valid key, for the file.
constexpr const char* test_other_hex =
    "0000000000000000000000000000000000000000000000000000000000000003";

/// Hands out `secret` each time and counts the calls.
struct FixedKeyGenerator {
  nostr::SecretKey secret{};
  int calls = 0;
  SecretKeyGenerator get() {
    return [this]() -> std::optional<nostr::SecretKey> {
      ++calls;
      return secret;
    };
  }
};

std::string key_file_text(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

unsigned key_file_mode(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 0777;
}

void write_key_file(const std::string& path, const std::string& text, unsigned mode) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

class RelayKeyTest : public ::testing::Test {
 protected:
  Config config_with_file(const Env& env = {}) {
    auto config = load_ok({"--relay-owner-nsec-file", key_file_}, env);
    return config;
  }
  test::TempDir dir_{"graspd-relay-key"};
  std::string key_file_ = dir_.file("relay-owner.nsec");
  FixedKeyGenerator generator_;
};

TEST_F(RelayKeyTest, NoSourceGeneratesAKeyIntoANew0600File) {
  generator_.secret[31] = 9;
  auto loaded = load_relay_key(config_with_file(), lookup({}), generator_.get());
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->source, RelayKeySource::generated);
  EXPECT_EQ(loaded->key.secret, generator_.secret);
  EXPECT_EQ(loaded->key.pubkey, *nostr::pubkey_from_secret(generator_.secret));
  EXPECT_EQ(key_file_mode(key_file_), 0600u);
  EXPECT_EQ(key_file_text(key_file_), nostr::encode_nsec(generator_.secret) + "\n");
  auto line = describe(*loaded);
  EXPECT_NE(line.find(nostr::encode_npub(loaded->key.pubkey)), std::string::npos) << line;
  EXPECT_EQ(line.find("nsec1"), std::string::npos) << "the secret is never logged";
  // Next start: the same key, read back, nothing generated.
  auto again = load_relay_key(config_with_file(), lookup({}), generator_.get());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->source, RelayKeySource::file);
  EXPECT_EQ(again->key.pubkey, loaded->key.pubkey);
  EXPECT_EQ(generator_.calls, 1);
  // Only the key file is left in the directory (the temporary one is gone).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.path()), {}), 1);
}

TEST_F(RelayKeyTest, AnExistingFileIsReadInEitherFormAndForcedTo0600) {
  write_key_file(key_file_, std::string(test_nsec) + "\n", 0644);
  auto loaded = load_relay_key(config_with_file(), lookup({}), generator_.get());
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->source, RelayKeySource::file);
  EXPECT_EQ(nostr::to_hex(loaded->key.secret), test_nsec_hex);
  EXPECT_EQ(key_file_mode(key_file_), 0600u);
  EXPECT_EQ(generator_.calls, 0);
  std::filesystem::remove(key_file_);
  write_key_file(key_file_, test_nsec_hex, 0600);
  auto hex = load_relay_key(config_with_file(), lookup({}), generator_.get());
  ASSERT_TRUE(hex);
  EXPECT_EQ(nostr::to_hex(hex->key.secret), test_nsec_hex);
}

TEST_F(RelayKeyTest, AnInvalidFileIsAnErrorNamingTheOptionNotTheKey) {
  for (const std::string& text : {std::string(""), std::string("npub1abc"),
                                  std::string(test_nsec_hex).substr(2), std::string(64, '0')}) {
    write_key_file(key_file_, text, 0600);
    auto loaded = load_relay_key(config_with_file(), lookup({}), generator_.get());
    ASSERT_FALSE(loaded) << text;
    EXPECT_EQ(loaded.error().message.rfind("invalid NGIT_RELAY_OWNER_NSEC_FILE \"" + key_file_, 0),
              0u)
        << loaded.error().message;
    if (!text.empty()) {
      EXPECT_EQ(loaded.error().message.find(text), std::string::npos);
    }
  }
  EXPECT_EQ(generator_.calls, 0) << "a broken key file is never replaced";
}

TEST_F(RelayKeyTest, TheOptionBeatsTheFile) {
  write_key_file(key_file_, test_other_hex, 0600);
  auto loaded = load_relay_key(config_with_file({{"NGIT_RELAY_OWNER_NSEC", test_nsec}}), lookup({}),
                               generator_.get());
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->source, RelayKeySource::option);
  EXPECT_EQ(nostr::to_hex(loaded->key.secret), test_nsec_hex);
  EXPECT_EQ(describe(*loaded).find("nsec1"), std::string::npos);
}

TEST_F(RelayKeyTest, TheSystemdCredentialBeatsTheOption) {
  test::TempDir credentials{"graspd-credentials"};
  write_key_file(credentials.file("relay_owner_nsec"), test_other_hex, 0400);
  Env environment{{"CREDENTIALS_DIRECTORY", credentials.path().string()}};
  auto loaded = load_relay_key(config_with_file({{"NGIT_RELAY_OWNER_NSEC", test_nsec}}),
                               lookup(environment), generator_.get());
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->source, RelayKeySource::credential);
  EXPECT_EQ(nostr::to_hex(loaded->key.secret), test_other_hex);
  // A credential directory without the key: the next source.
  std::filesystem::remove(credentials.file("relay_owner_nsec"));
  auto next = load_relay_key(config_with_file({{"NGIT_RELAY_OWNER_NSEC", test_nsec}}),
                             lookup(environment), generator_.get());
  ASSERT_TRUE(next);
  EXPECT_EQ(next->source, RelayKeySource::option);
  // An invalid credential stops the start, naming it.
  write_key_file(credentials.file("relay_owner_nsec"), "nonsense", 0400);
  auto invalid = load_relay_key(config_with_file(), lookup(environment), generator_.get());
  ASSERT_FALSE(invalid);
  EXPECT_NE(invalid.error().message.find("systemd credential relay_owner_nsec"), std::string::npos)
      << invalid.error().message;
}

TEST_F(RelayKeyTest, AFileThatCannotBeCreatedIsAnError) {
  generator_.secret[31] = 1;
  auto config = load_ok({"--relay-owner-nsec-file", dir_.file("missing/dir/key")});
  auto loaded = load_relay_key(config, lookup({}), generator_.get());
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("cannot create the key file"), std::string::npos)
      << loaded.error().message;
}

TEST_F(RelayKeyTest, TheSystemGeneratorGivesDistinctKeys) {
  auto generate = system_key_generator();
  auto one = generate();
  auto two = generate();
  ASSERT_TRUE(one && two);
  EXPECT_NE(*one, *two);
}

}  // namespace
}  // namespace graspd::runtime
