#include "tests/integration/server_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

namespace ptoserve {

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::cerr << "ServerProcess: " << message << std::endl;
  std::abort();
}

// Reads one line from `fd`, waiting at most `timeout_ms` in total.
std::string ReadLine(int fd, int timeout_ms) {
  std::string line;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char c;
    if (read(fd, &c, 1) != 1) break;
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

}  // namespace

struct ServerProcess::Output {
  static constexpr size_t kLines = 50, kLineBytes = 4096;

  void Append(const char* bytes, size_t n) {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < n; ++i) {
      if (bytes[i] != '\n') {
        if (partial.size() < kLineBytes) partial += bytes[i];
        continue;
      }
      lines.push_back(std::move(partial));
      partial.clear();
      if (lines.size() > kLines) lines.pop_front();
    }
  }

  std::string Tail() {
    std::lock_guard<std::mutex> lock(mu);
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    return text + partial;
  }

  std::mutex mu;
  std::deque<std::string> lines;
  std::string partial;
};

ServerProcess::ServerProcess(const std::vector<std::string>& flags,
                             const ProcessLimits& limits) {
  int out[2];
  if (pipe(out) != 0) Die("pipe failed");
  // Port 0 for metrics too: tests run side by side. No HTTP API unless a
  // test asks for one (--http_address=127.0.0.1:0).
  std::vector<std::string> args = {"server/ptoserve", "--address=127.0.0.1:0",
                                   "--metrics_address=127.0.0.1:0",
                                   "--http_address="};
  args.insert(args.end(), flags.begin(), flags.end());
  // The last --metrics_address wins, as in the server.
  bool metrics = true;
  for (const std::string& a : args) {
    if (a.rfind("--metrics_address=", 0) == 0) {
      metrics = a != "--metrics_address=";
    }
  }
  pid_ = fork();
  if (pid_ < 0) Die("fork failed");
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    if (limits.open_files != 0) {
      const rlimit l{limits.open_files, limits.open_files};
      if (setrlimit(RLIMIT_NOFILE, &l) != 0) _exit(126);
    }
    if (limits.address_space != 0) {
      const rlimit l{limits.address_space, limits.address_space};
      if (setrlimit(RLIMIT_AS, &l) != 0) _exit(126);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  // "ptoserve 0.1.0 listening on 127.0.0.1:PORT (default target host)"
  const std::string line = ReadLine(out[0], 30000);
  const std::string marker = "listening on ";
  const size_t at = line.find(marker);
  if (at == std::string::npos) Die("no start-up line; got \"" + line + "\"");
  const size_t begin = at + marker.size();
  address_ = line.substr(begin, line.find(' ', begin) - begin);
  if (metrics) {
    // "ptoserve metrics on http://127.0.0.1:PORT/metrics"
    const std::string metrics_line = ReadLine(out[0], 30000);
    const std::string metrics_marker = "metrics on ";
    const size_t m = metrics_line.find(metrics_marker);
    if (m == std::string::npos) {
      Die("no metrics start-up line; got \"" + metrics_line + "\"");
    }
    metrics_url_ = metrics_line.substr(m + metrics_marker.size());
  }
  // Keep draining the server's output so it never blocks on a full pipe,
  // and keep its last lines for a failure to show.
  output_ = std::make_shared<Output>();
  std::thread([fd = out[0], output = output_] {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) output->Append(buf, n);
    close(fd);
  }).detach();
}

std::string ServerProcess::OutputTail() const {
  return output_ != nullptr ? output_->Tail() : "";
}

int ServerProcess::Terminate(int timeout_seconds) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::cerr << "ServerProcess: pid " << pid_ << " still running "
            << timeout_seconds << " s after SIGTERM; its last output:\n"
            << OutputTail() << std::endl;
  return -1;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && Terminate() == -1) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) {
    result.output.append(buf, n);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace ptoserve
