// Set-up errors are values with a message (errno-style code for verbs-shaped calls); apps/
// alone decide to exit. The per-packet path never builds one.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace roce {

struct Error {
  int code = EINVAL;  // errno value, as verbs would return it
  std::string message;
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}
  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

// For calls that return nothing on success.
class Status {
 public:
  Status() = default;
  Status(Error e) : err_(std::move(e)), failed_(true) {}
  static Status ok_status() { return {}; }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return err_; }
  int code() const { return failed_ ? err_.code : 0; }

 private:
  Error err_{0, {}};
  bool failed_ = false;
};

inline Error make_error(int code, std::string message) { return Error{code, std::move(message)}; }

}  // namespace roce
