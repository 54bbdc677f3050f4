// Runs the real ptoserve binary on an ephemeral loopback port for a test.
#ifndef PTOSERVE_TESTS_INTEGRATION_SERVER_PROCESS_H_
#define PTOSERVE_TESTS_INTEGRATION_SERVER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ptoserve {

// Resource limits for a server process (0: inherit the test's).
struct ProcessLimits {
  uint64_t open_files = 0;     // RLIMIT_NOFILE, soft and hard
  uint64_t address_space = 0;  // RLIMIT_AS, in bytes
};

class ServerProcess {
 public:
  // Starts server/ptoserve (a data dependency of the test) with
  // --address=127.0.0.1:0 --metrics_address=127.0.0.1:0 plus `flags`, and
  // waits for its start-up lines. Aborts the test binary if the server does
  // not come up in 30 s.
  explicit ServerProcess(const std::vector<std::string>& flags = {},
                         const ProcessLimits& limits = {});
  // Stops the server with SIGTERM (SIGKILL after Terminate's default wait)
  // if still running.
  ~ServerProcess();

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // "127.0.0.1:PORT".
  const std::string& address() const { return address_; }
  // "http://127.0.0.1:PORT/metrics"; empty if `flags` turned metrics off
  // (--metrics_address=).
  const std::string& metrics_url() const { return metrics_url_; }
  pid_t pid() const { return pid_; }

  // Sends SIGTERM and returns the exit status (as from waitpid), or -1 if
  // the server did not exit within `timeout_seconds` (then the end of its
  // output goes to stderr). The default is well past what the server itself
  // may take with its default flags: the drain, --lame_duck (250 ms) and
  // --shutdown_grace (10 s), which a connection whose client is slow to
  // answer the GOAWAY ping can use up in full.
  int Terminate(int timeout_seconds = 30);

  // The last lines the server wrote to stdout (at most 50).
  std::string OutputTail() const;

 private:
  struct Output;

  pid_t pid_ = -1;
  std::string address_;
  std::string metrics_url_;
  // Shared with the thread that drains the server's stdout, which may
  // outlive this object.
  std::shared_ptr<Output> output_;
};

// Runs `command` through /bin/sh, returning its exit code and what it wrote
// to stdout and stderr (merged).
struct CommandResult {
  int exit_code = -1;
  std::string output;
};
CommandResult RunCommand(const std::string& command);

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_INTEGRATION_SERVER_PROCESS_H_
