#pragma once
// Errors that carry where they were raised. A user-facing failure is one line of
// text (what was wrong, with the file, key or column and what was expected); the
// source location is kept for the log of internal errors.
// Included by C++17 (casacore) and C++20 sources alike.
#include <stdexcept>
#include <string>

namespace spip {

// Process exit codes shared by every entry point.
enum class ExitCode : int {
  ok = 0,
  failure = 1,     // internal error or failed operation
  bad_config = 2,  // unknown key, malformed or out-of-range value
  bad_input = 3,   // unreadable or unusable Measurement Set or other input file, or unusable output
  // Stopped on SIGTERM or SIGUSR1 with every finished channel recorded: the same
  // command resumes the run. 75 is EX_TEMPFAIL of sysexits.h ("try again later").
  interrupted = 75,
};

class Error : public std::runtime_error {
 public:
  Error(const std::string& what, const char* file, int line, ExitCode code = ExitCode::failure)
      : std::runtime_error(what), file_(file), line_(line), code_(code) {}
  const char* file() const noexcept { return file_; }
  int line() const noexcept { return line_; }
  ExitCode code() const noexcept { return code_; }

 private:
  const char* file_;
  int line_;
  ExitCode code_;
};

class ConfigError : public Error {
 public:
  ConfigError(const std::string& what, const char* file, int line)
      : Error(what, file, line, ExitCode::bad_config) {}
};

class InputError : public Error {
 public:
  InputError(const std::string& what, const char* file, int line)
      : Error(what, file, line, ExitCode::bad_input) {}
};

}  // namespace spip

#define SPIP_THROW(ErrorType, message) throw ErrorType((message), __FILE__, __LINE__)
#define SPIP_ASSERT(cond, message)                                              \
  do {                                                                          \
    if (!(cond))                                                                \
      throw ::spip::Error(std::string("internal error: ") + (message), __FILE__, \
                          __LINE__);                                            \
  } while (0)
