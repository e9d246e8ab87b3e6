// Parses the server's environment variables; every bad value becomes a server_config_error naming
// it.
#include "config.hpp"

#include <openssl/rand.h>

#include <charconv>
#include <cstdlib>
#include <limits>

#include <boost/asio/ip/address.hpp>

namespace knit_server {
namespace {

// The error text shape every check uses: NAME="value": what was expected.
[[noreturn]] void fail(const char* name, std::string_view value, std::string_view expected) {
  std::string message = name;
  message += "=\"";
  message += value;
  message += "\": ";
  message += expected;
  throw server_config_error(message);
}

// Unset and empty both mean "use the default".
std::optional<std::string> lookup(const env_lookup& getenv, const char* name) {
  std::optional<std::string> value = getenv(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

// A plain decimal integer in [lo, hi]: no sign, no spaces, no trailing text, no hex.
std::uint64_t parse_uint(const char* name, const std::string& text, std::uint64_t lo,
                         std::uint64_t hi) {
  const std::string expected =
      "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  std::uint64_t value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc{} || end != last) fail(name, text, expected);  // also rejects '-' and '+'
  if (value < lo || value > hi) fail(name, text, expected);
  return value;
}

template <class T>
void read_uint(const env_lookup& getenv, const char* name, T& out, std::uint64_t lo,
               std::uint64_t hi) {
  if (auto text = lookup(getenv, name)) out = static_cast<T>(parse_uint(name, *text, lo, hi));
}

// 32 bytes from OpenSSL's CSPRNG: a secret nobody can guess, and never a constant in the source.
std::string random_secret() {
  std::string secret(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()),
                 static_cast<int>(secret.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed: cannot generate a JWT secret; set JWT_SECRET");
  }
  return secret;
}

// The cost ceiling for one emulated route: 10 s is far beyond anything a benchmark wants,
// and low enough that a typo (an extra zero or two) is still caught.
constexpr std::uint64_t kMaxCostUs = 10'000'000;

}  // namespace

std::string_view to_string(exec_mode mode) noexcept {
  switch (mode) {
    case exec_mode::inline_host: return "inline";
    case exec_mode::pooled: return "pooled";
    case exec_mode::asio_pool: return "asio";
    case exec_mode::multi_thread: return "multi";
    case exec_mode::auto_offload: return "auto";
  }
  return "?";
}

std::string_view to_string(isolation i) noexcept {
  return i == isolation::process ? "process" : "thread";
}

server_config config_from_env(const env_lookup& getenv) {
  server_config cfg;

  if (auto host = lookup(getenv, "HOST")) {
    // Only literals (and "localhost"): resolving names would make the bind address depend on
    // DNS, and the benchmark must know exactly which interface it measures.
    boost::system::error_code ec;
    if (*host != "localhost") boost::asio::ip::make_address(*host, ec);
    if (ec) fail("HOST", *host, "must be an IP address such as 127.0.0.1, 0.0.0.0 or ::1");
    cfg.host = *host;
  }
  read_uint(getenv, "PORT", cfg.port, 0, 65535);

  if (auto mode = lookup(getenv, "KNIT_MODE")) {
    bool known = false;
    for (exec_mode m : {exec_mode::inline_host, exec_mode::pooled, exec_mode::asio_pool,
                        exec_mode::multi_thread, exec_mode::auto_offload}) {
      if (*mode == to_string(m)) {
        cfg.mode = m;
        known = true;
      }
    }
    if (!known) fail("KNIT_MODE", *mode, "must be inline, pooled, asio, multi or auto");
  }

  if (auto text = lookup(getenv, "KNIT_ISOLATION")) {
    if (*text == "process") {
      cfg.worker_isolation = isolation::process;
    } else if (*text != "thread") {
      fail("KNIT_ISOLATION", *text, "must be thread or process");
    }
    if (cfg.worker_isolation == isolation::process && cfg.mode != exec_mode::pooled) {
      fail("KNIT_ISOLATION", *text,
           "needs KNIT_MODE=pooled (KNIT_MODE=" + std::string(to_string(cfg.mode)) +
               " runs /ssr and /jwt on threads that are not knit workers)");
    }
  }

  read_uint(getenv, "KNIT_HOSTS", cfg.hosts, 1, server_config::kMaxHosts);
  if (cfg.hosts > 1 && cfg.mode == exec_mode::multi_thread) {
    fail("KNIT_HOSTS", *lookup(getenv, "KNIT_HOSTS"),
         "must be 1 with KNIT_MODE=multi (one io_context run by KNIT_THREADS threads); "
         "KNIT_MODE=inline with KNIT_HOSTS=N is one event loop per thread");
  }
  // A knit pool takes at most 64 hosts: the thread that builds it (the control thread) and
  // the loops that attach (knit::pool_options::max_hosts).
  if (cfg.hosts > server_config::kMaxPoolHosts && uses_knit_pool(cfg.mode)) {
    fail("KNIT_HOSTS", *lookup(getenv, "KNIT_HOSTS"),
         "must be at most " + std::to_string(server_config::kMaxPoolHosts) +
             " with KNIT_MODE=" + std::string(to_string(cfg.mode)) +
             " (one knit pool takes 64 hosts: the control thread and 63 event loops)");
  }

  if (auto profile = lookup(getenv, "KNIT_COST_PROFILE")) {
    if (*profile == "bun") {
      // The reference server's Bun routes spend about this much CPU per call in each route.
      cfg.ssr_cost_us = 76;
      cfg.jwt_cost_us = 72;
    } else if (*profile != "native") {
      fail("KNIT_COST_PROFILE", *profile, "must be bun or native");
    }
    cfg.cost_profile = *profile;
  }
  read_uint(getenv, "KNIT_SSR_COST_US", cfg.ssr_cost_us, 0, kMaxCostUs);
  read_uint(getenv, "KNIT_JWT_COST_US", cfg.jwt_cost_us, 0, kMaxCostUs);

  read_uint(getenv, "KNIT_MAX_CONNECTIONS", cfg.max_connections, 1, 1'000'000);
  std::uint64_t idle_ms = static_cast<std::uint64_t>(cfg.idle_timeout.count());
  read_uint(getenv, "KNIT_IDLE_TIMEOUT_MS", idle_ms, 1, 3'600'000);
  cfg.idle_timeout = std::chrono::milliseconds(idle_ms);

  std::uint64_t budget_mb = 0;
  if (lookup(getenv, "KNIT_MEMORY_BUDGET_MB")) {
    read_uint(getenv, "KNIT_MEMORY_BUDGET_MB", budget_mb, 1, server_config::kMaxMemoryBudgetMb);
    cfg.memory_budget_mb = budget_mb;
  }
  if (auto text = lookup(getenv, "KNIT_SNDBUF_KB")) {
    // 0 (autotuning) or at least 4 KiB: Linux would round a smaller value up to about 4.6 KiB
    // anyway, and the kernel cap the budget counts must be the one in force.
    const std::uint64_t kb = parse_uint("KNIT_SNDBUF_KB", *text, 0, server_config::kMaxSndbufKb);
    if (kb != 0 && kb < 4) {
      fail("KNIT_SNDBUF_KB", *text,
           "must be 0 (the kernel's autotuning) or an integer from 4 to " +
               std::to_string(server_config::kMaxSndbufKb));
    }
    cfg.sndbuf_kb = static_cast<std::size_t>(kb);
  }

  std::uint64_t queue_ms = static_cast<std::uint64_t>(cfg.max_queue_delay.count());
  read_uint(getenv, "KNIT_MAX_QUEUE_MS", queue_ms, 0, 3'600'000);
  cfg.max_queue_delay = std::chrono::milliseconds(queue_ms);
  read_uint(getenv, "KNIT_MAX_QUEUED", cfg.max_queued, 0, 1'000'000);
  if (auto text = lookup(getenv, "KNIT_MAX_QUEUE_WAIT_MS")) {
    cfg.max_queue_wait_ms =
        std::chrono::milliseconds(parse_uint("KNIT_MAX_QUEUE_WAIT_MS", *text, 0, 3'600'000));
  }

  std::uint64_t drain_ms = static_cast<std::uint64_t>(cfg.drain_delay.count());
  read_uint(getenv, "KNIT_DRAIN_DELAY_MS", drain_ms, 0,
            static_cast<std::uint64_t>(server_config::kMaxDrainDelay.count()));
  cfg.drain_delay = std::chrono::milliseconds(drain_ms);

  if (auto secret = lookup(getenv, "JWT_SECRET")) {
    cfg.jwt_secret = *secret;
  } else {
    cfg.jwt_secret = random_secret();
    cfg.jwt_secret_generated = true;
  }
  return cfg;
}

server_config config_from_process_env() {
  return config_from_env([](const char* name) -> std::optional<std::string> {
    if (const char* value = std::getenv(name)) return std::string(value);
    return std::nullopt;
  });
}

}  // namespace knit_server
