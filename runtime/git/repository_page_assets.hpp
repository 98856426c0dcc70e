// The repository page's files (runtime/git/repository_page/), compiled in by
// cmake/EmbedFiles.cmake.
#pragma once

#include <string_view>

namespace graspd::runtime::git::repository_assets {

extern const std::string_view repository_page_css;
extern const std::string_view replication_js;

}  // namespace graspd::runtime::git::repository_assets
