// docs/configuration.md and deploy/graspd.conf.example must list exactly the options of the table.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "runtime/config/config.hpp"

namespace graspd::runtime {
namespace {

std::string source_file(const std::string& relative) {
  const char* root = std::getenv("GRASPD_SOURCE_DIR");
  EXPECT_NE(root, nullptr) << "GRASPD_SOURCE_DIR is not set";
  std::ifstream file(std::string(root ? root : ".") + "/" + relative);
  EXPECT_TRUE(file.good()) << "cannot read " << relative;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::set<std::string> table(std::string_view OptionSpec::*field) {
  std::set<std::string> names;
  for (const auto& spec : option_table()) names.emplace(spec.*field);
  return names;
}

std::set<std::string> matches(const std::string& text, const std::regex& pattern) {
  std::set<std::string> found;
  for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) {
    found.insert((*it)[1].str());
  }
  return found;
}

TEST(ConfigDocs, ConfigurationMarkdownListsEveryOptionAndNoOther) {
  auto text = source_file("docs/configuration.md");
  // Every environment variable mentioned anywhere in the document.
  EXPECT_EQ(matches(text, std::regex(R"(\b(NGIT_[A-Z0-9_]+))")), table(&OptionSpec::env));
  // Every flag and file key mentioned in a table row.
  EXPECT_EQ(matches(text, std::regex(R"(`(--[a-z0-9-]+)`)")), [] {
    auto flags = table(&OptionSpec::flag);
    flags.erase("");  // secrets have no flag
    flags.insert("--config");
    flags.insert("--help");
    flags.insert("--version");
    return flags;
  }());
}

TEST(ConfigDocs, ExampleConfigListsEveryKeyAndNoOther) {
  auto text = source_file("deploy/graspd.conf.example");
  // Lines like "# key = default" or "key = value".
  EXPECT_EQ(matches(text, std::regex(R"((?:^|\n)#?\s*([a-z][a-z0-9_]*)\s*=)")),
            table(&OptionSpec::key));
}

TEST(ConfigDocs, ExampleConfigDefaultsMatchTheTable) {
  auto text = source_file("deploy/graspd.conf.example");
  std::regex line_pattern(R"((?:^|\n)#\s*([a-z][a-z0-9_]*)\s*=[ \t]*([^\n]*))");
  for (std::sregex_iterator it(text.begin(), text.end(), line_pattern), end; it != end; ++it) {
    auto key = (*it)[1].str();
    auto value = (*it)[2].str();
    for (const auto& spec : option_table()) {
      if (spec.key == key) {
        EXPECT_EQ(value, spec.default_value) << key;
      }
    }
  }
}

TEST(ConfigDocs, OptionsWithoutEffectAreMarkedAsSuch) {
  auto markdown = source_file("docs/configuration.md");
  auto example = source_file("deploy/graspd.conf.example");
  auto line_with = [](const std::string& text, const std::string& needle) {
    auto at = text.find(needle);
    if (at == std::string::npos) return std::string{};
    auto start = text.rfind('\n', at) + 1;  // npos + 1 == 0 on the first line
    return text.substr(start, text.find('\n', at) - start);
  };
  for (const auto& spec : option_table()) {
    const std::string env(spec.env);
    const std::string note = "No effect yet: " + std::string(spec.no_effect_yet) + ".";
    bool inert = !spec.no_effect_yet.empty();
    auto row = line_with(markdown, "| `" + env + "` |");
    auto comment = line_with(example, "; env " + env + ")");
    ASSERT_FALSE(row.empty()) << env;
    ASSERT_FALSE(comment.empty()) << env;
    EXPECT_EQ(row.find("No effect yet") != std::string::npos, inert) << row;
    EXPECT_EQ(comment.find("No effect yet") != std::string::npos, inert) << comment;
    if (inert) {
      EXPECT_NE(row.find(note), std::string::npos) << row;
      EXPECT_NE(comment.find(note), std::string::npos) << comment;
    }
  }
}

}  // namespace
}  // namespace graspd::runtime
