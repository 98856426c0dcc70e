// `graspd export` / `graspd import` (runtime/cli/store_commands) on in-memory
// streams: verification of every imported event, the summary, JSONL export
// with and without a filter, and clear usage errors.
#include "runtime/cli/store_commands.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <sstream>

#include "messages/nostr/json.hpp"
#include "tests/store/store_test_util.hpp"
#include "tests/support/nostr_builders.hpp"

namespace graspd::runtime {
namespace {

/// Event number `n`: created at 1000 + n, tagged odd or even.
nostr::Event numbered_event(int n, std::uint32_t kind = 1) {
  return test::signed_event(kind, {{"t", n % 2 ? "odd" : "even"}}, 1000 + n,
                            "note " + std::to_string(n), 7);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(StoreCommandsTest, ImportVerifiesEveryEventAndSummarizes) {
  store::test::TempDir dir;
  // Signing uses fresh auxiliary randomness: sign each event once.
  std::vector<std::string> json;
  for (int i = 0; i < 5; ++i) json.push_back(nostr::serialize_event(numbered_event(i)));
  std::ostringstream input;
  for (const auto& line : json) input << line << "\n";
  input << json[0] << "\n";  // duplicate
  input << "\n";             // blank: ignored
  input << "{not json\n";
  auto forged = numbered_event(9);
  forged.content = "tampered";  // id no longer matches
  input << nostr::serialize_event(forged) << "\n";
  auto bad_sig = numbered_event(10);
  bad_sig.sig[0] ^= 1;
  input << nostr::serialize_event(bad_sig) << "\n";
  std::istringstream in(input.str());
  std::ostringstream err;
  ImportOptions options;
  options.batch_size = 2;
  EXPECT_EQ(run_import(dir.path(), in, err, options), 0);
  auto report = lines_of(err.str());
  ASSERT_FALSE(report.empty());
  EXPECT_EQ(report.back(), "import: done: 10 lines, accepted 5, duplicate 1, rejected 3")
      << err.str();
  EXPECT_NE(err.str().find("import: committed 2 lines"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("line 8: invalid:"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("line 9: invalid:"), std::string::npos) << err.str();

  std::ostringstream out, export_err;
  EXPECT_EQ(run_export(dir.path(), std::nullopt, out, export_err), 0);
  auto exported = lines_of(out.str());
  ASSERT_EQ(exported.size(), 5u);
  EXPECT_EQ(exported, json) << "storage order, stored bytes";

  std::ostringstream filtered;
  EXPECT_EQ(run_export(dir.path(), std::string(R"({"#t":["odd"]})"), filtered, export_err), 0);
  EXPECT_EQ(lines_of(filtered.str()), (std::vector<std::string>{json[3], json[1]}));
}

/// One line of `size` bytes of 'x', then `tail`: produced in chunks, never
/// held whole, so the import alone decides what is buffered.
class LongLineThen : public std::streambuf {
 public:
  LongLineThen(std::size_t size, std::string tail) : left_(size), tail_(std::move(tail)) {
    chunk_.fill('x');
  }

 protected:
  int_type underflow() override {
    if (left_ > 0) {
      auto n = std::min(left_, chunk_.size());
      left_ -= n;
      setg(chunk_.data(), chunk_.data(), chunk_.data() + n);
      return traits_type::to_int_type(chunk_[0]);
    }
    if (tail_done_ || tail_.empty()) return traits_type::eof();
    tail_done_ = true;
    setg(tail_.data(), tail_.data(), tail_.data() + tail_.size());
    return traits_type::to_int_type(tail_[0]);
  }

 private:
  std::size_t left_;
  std::string tail_;
  bool tail_done_ = false;
  std::array<char, 4096> chunk_;
};

TEST(StoreCommandsTest, ImportSkipsOverlongLinesWithoutBufferingThem) {
  store::test::TempDir dir;
  LongLineThen source(64u << 20, "\n" + nostr::serialize_event(numbered_event(1)) + "\n");
  std::istream in(&source);
  std::ostringstream err;
  ImportOptions options;
  options.max_line_bytes = 1024;
  EXPECT_EQ(run_import(dir.path(), in, err, options), 0);
  auto report = lines_of(err.str());
  ASSERT_FALSE(report.empty());
  EXPECT_NE(err.str().find("line 1: line longer than 1024 bytes"), std::string::npos) << err.str();
  EXPECT_EQ(report.back(), "import: done: 2 lines, accepted 1, duplicate 0, rejected 1");
}

TEST(StoreCommandsTest, ExportErrors) {
  store::test::TempDir dir;
  std::ostringstream out, err;
  EXPECT_EQ(run_export(dir.path() / "missing", std::nullopt, out, err), 1);
  EXPECT_NE(err.str().find("no store at"), std::string::npos);
  EXPECT_EQ(run_export(dir.path(), std::string("{\"kinds\":\"x\"}"), out, err), 2);
  EXPECT_NE(err.str().find("bad --filter"), std::string::npos);
}

TEST(StoreCommandsTest, CommandLineParsing) {
  std::vector<std::string> args{"graspd", "export", "--bogus"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  EXPECT_TRUE(is_store_command(3, argv.data()));
  EXPECT_EQ(run_store_command(3, argv.data()), 2);
  args = {"graspd", "serve"};
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  EXPECT_FALSE(is_store_command(2, argv.data()));
  args = {"graspd", "import", "--data"};
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  EXPECT_EQ(run_store_command(3, argv.data()), 2);
}

}  // namespace
}  // namespace graspd::runtime
