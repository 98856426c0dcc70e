# Every third-party library comes from a Debian 12 package (deploy/install-deps.sh).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(OpenSSL 3 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(RapidJSON REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)
pkg_check_modules(SECP256K1 REQUIRED IMPORTED_TARGET libsecp256k1)
pkg_check_modules(LMDB REQUIRED IMPORTED_TARGET lmdb)

# libcaf-dev ships neither a CMake config nor a .pc file.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIB caf_core REQUIRED)
find_library(CAF_IO_LIB caf_io REQUIRED)
add_library(caf::core INTERFACE IMPORTED)
target_include_directories(caf::core SYSTEM INTERFACE ${CAF_INCLUDE_DIR})
target_link_libraries(caf::core INTERFACE ${CAF_CORE_LIB} Threads::Threads)
add_library(caf::io INTERFACE IMPORTED)
target_link_libraries(caf::io INTERFACE ${CAF_IO_LIB} caf::core)

add_library(rapidjson INTERFACE IMPORTED)
target_include_directories(rapidjson SYSTEM INTERFACE ${RAPIDJSON_INCLUDE_DIRS})

# RapidJSON scans string contents and whitespace 16 bytes at a time with SSE2 (baseline on x86-64)
# when parsing a NUL-terminated buffer, as messages/nostr/json.cpp does. Defined for the whole
# project, not per target: every translation unit must see the same RapidJSON inline functions.
# Those aligned 16-byte reads may run up to 15 bytes past the terminating NUL, so parse a
# NUL-terminated buffer only with that much padding (json.cpp); everywhere else pass the length
# (`doc.Parse(text.c_str(), text.size())`), which reads byte by byte. The ASan build catches a miss.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
  add_compile_definitions(RAPIDJSON_SSE2)
endif()
