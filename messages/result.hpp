// The one result type: a value, or the failure that stopped it. Every fallible call of the daemon
// returns a Result; its error is a Failure of the subsystem's code enum (messages/errors.hpp), or,
// for the NIP-01 parsers, the machine-readable message itself ("invalid: bad pubkey").
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace graspd {

/// Why something failed: the subsystem's code (what a caller branches on) and the sentence an
/// operator or a client reads (it names the option, the path or the peer).
template <class Code>
struct Failure {
  Code code{};
  std::string message;
};

/// A value of T, or an error E.
template <class T, class E>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  static Result failure(E error) { return Result(std::move(error), 0); }
  /// Implicit from a Failure (never from a bare E such as a string, which a T might also take), so
  /// `return ConfigError{code, message};` reads as it means.
  template <class Code>
  Result(Failure<Code> error)  // NOLINT: implicit on purpose
      requires std::is_same_v<E, Failure<Code>> : error_(std::move(error)) {}

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  /// Meaningful only when !ok().
  const E& error() const { return error_; }

 private:
  Result(E error, int) : error_(std::move(error)) {}
  std::optional<T> value_;
  E error_{};
};

/// Success with nothing to return, or an error E.
template <class E>
class Result<void, E> {
 public:
  Result() = default;
  Result(E error) : error_(std::move(error)) {}  // NOLINT: implicit on purpose
  static Result failure(E error) { return Result(std::move(error)); }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  /// Meaningful only when !ok().
  const E& error() const { return *error_; }

 private:
  std::optional<E> error_;
};

}  // namespace graspd
