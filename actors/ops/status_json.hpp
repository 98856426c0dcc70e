// Writing the JSON status documents (/api/sync and its Sync+ section) with RapidJSON.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>

namespace graspd {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

inline void write_count(JsonWriter& w, const char* key, std::uint64_t value) {
  w.Key(key);
  w.Uint64(value);
}

}  // namespace graspd
