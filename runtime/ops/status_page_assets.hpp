// The status page's files (runtime/status_page/), compiled in by cmake/EmbedFiles.cmake.
#pragma once

#include <string_view>

namespace graspd::runtime::status_assets {

extern const std::string_view index_html;
extern const std::string_view style_css;
extern const std::string_view app_js;

}  // namespace graspd::runtime::status_assets
