// From the table's values to the structs the server runs with (server_settings.hpp). Every
// default comes from the table (an unset setting reads its row's default), so the structs'
// own initializers never decide what the server runs with.
#include "settings/server_settings.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "placement/process_isolation.hpp"
#include "settings/text_layout.hpp"

namespace knit_server {
namespace {

// 32 bytes from OpenSSL's CSPRNG: a secret nobody can guess, and never a constant in the source.
std::string random_secret() {
  std::string secret(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()),
                 static_cast<int>(secret.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed: cannot generate a JWT secret; set JWT_SECRET");
  }
  return secret;
}

exec_mode mode_named(const std::string& name) {
  for (exec_mode m : {exec_mode::inline_host, exec_mode::pooled, exec_mode::asio_pool,
                      exec_mode::multi_thread, exec_mode::auto_offload}) {
    if (name == to_string(m)) return m;
  }
  return exec_mode::pooled;  // not reached: the table's choices are exactly the modes' names
}

knit::sched_class sched_named(const std::string& name) {
  if (name == "batch") return knit::sched_class::batch;
  if (name == "idle") return knit::sched_class::idle;
  return knit::sched_class::other;
}

template <class T>
T number_of(const setting_values& v, std::string_view env) {
  return static_cast<T>(*v.number(env));  // a row with a fixed default: never nullopt
}

std::chrono::milliseconds ms_of(const setting_values& v, std::string_view env) {
  return std::chrono::milliseconds(*v.number(env));
}

void build_server(const setting_values& v, server_config& cfg) {
  cfg.host = *v.word("HOST");
  cfg.port = number_of<std::uint16_t>(v, "PORT");
  cfg.mode = mode_named(*v.word("KNIT_MODE"));
  const std::string mode_said = cat(v.label("KNIT_MODE"), "=", to_string(cfg.mode));

  if (*v.word("KNIT_ISOLATION") == "process") cfg.worker_isolation = isolation::process;
  if (cfg.worker_isolation == isolation::process && cfg.mode != exec_mode::pooled) {
    v.reject("KNIT_ISOLATION", "it only with KNIT_MODE=pooled (" + mode_said +
                                   " runs /ssr and /jwt on threads that are not knit workers)");
  }

  cfg.hosts = number_of<unsigned>(v, "KNIT_HOSTS");
  if (cfg.hosts > 1 && cfg.mode == exec_mode::multi_thread) {
    v.reject("KNIT_HOSTS", "1 with " + mode_said +
                               " (one io_context run by KNIT_THREADS threads); KNIT_MODE=inline "
                               "with KNIT_HOSTS=N is one event loop per thread");
  }
  // A knit pool takes at most 64 hosts (knit::pool_options::max_hosts): the loops that
  // attach; the control thread that builds it never submits, so it takes none.
  if (cfg.hosts > server_config::kMaxPoolHosts && uses_knit_pool(cfg.mode)) {
    v.reject("KNIT_HOSTS", cat("at most ", std::to_string(server_config::kMaxPoolHosts), " with ") +
                               mode_said + " (one knit pool takes 64 hosts, each an event loop)");
  }

  const std::string io = *v.word("KNIT_IO");
  cfg.io = io == "uring"   ? io_backend::uring
           : io == "epoll" ? io_backend::epoll
                           : io_backend::auto_pick;
  if (cfg.io == io_backend::uring && cfg.mode == exec_mode::multi_thread) {
    v.reject("KNIT_IO", "auto or epoll with " + mode_said +
                            " (KNIT_THREADS threads run one io_context: Asio's own loop)");
  }

  cfg.cost_profile = *v.word("KNIT_COST_PROFILE");
  if (cfg.cost_profile == "bun") {
    // The reference server's Bun routes spend about this much CPU per call in each route.
    cfg.ssr_cost_us = 76;
    cfg.jwt_cost_us = 72;
  }
  if (auto us = v.number("KNIT_SSR_COST_US")) cfg.ssr_cost_us = static_cast<std::uint32_t>(*us);
  if (auto us = v.number("KNIT_JWT_COST_US")) cfg.jwt_cost_us = static_cast<std::uint32_t>(*us);

  cfg.max_connections = number_of<std::size_t>(v, "KNIT_MAX_CONNECTIONS");
  cfg.idle_timeout = ms_of(v, "KNIT_IDLE_TIMEOUT_MS");
  cfg.memory_budget_mb = v.number("KNIT_MEMORY_BUDGET_MB");  // unset: derived at start-up
  cfg.sndbuf_kb = number_of<std::size_t>(v, "KNIT_SNDBUF_KB");
  cfg.max_queue_delay = ms_of(v, "KNIT_MAX_QUEUE_MS");
  cfg.max_queued = number_of<std::size_t>(v, "KNIT_MAX_QUEUED");
  if (auto ms = v.number("KNIT_MAX_QUEUE_WAIT_MS")) {
    cfg.max_queue_wait_ms = std::chrono::milliseconds(*ms);
  }
  cfg.drain_delay = ms_of(v, "KNIT_DRAIN_DELAY_MS");

  if (auto secret = v.word("JWT_SECRET")) {
    cfg.jwt_secret = *secret;
  } else {
    cfg.jwt_secret = random_secret();
    cfg.jwt_secret_generated = true;
  }
}

void build_pool(const setting_values& v, knit::pool_options& p) {
  p.threads = number_of<unsigned>(v, "KNIT_THREADS");
  if (auto us = v.number("KNIT_SPIN")) p.spin_us = static_cast<unsigned>(*us);
  if (auto gate = v.word("KNIT_SPIN_GATE")) p.spin_gate = *gate == "auto";
  p.park_ms = number_of<unsigned>(v, "KNIT_PARK");
  p.doorbell = *v.on_off("KNIT_DOORBELL");
  if (!p.doorbell && p.park_ms == 0) {
    v.reject("KNIT_DOORBELL", cat("1 while ", v.label("KNIT_PARK")) +
                                  " is 0: with no doorbell and no park timeout a parked worker "
                                  "would never wake");
  }
  p.steal = *v.on_off("KNIT_STEAL");
  p.max_spinners = number_of<unsigned>(v, "KNIT_MAX_SPINNERS");
  p.wake_cost_us = number_of<unsigned>(v, "KNIT_WAKE_COST");
  p.queue_capacity = number_of<std::size_t>(v, "KNIT_QUEUE_CAPACITY");
  p.max_pending = number_of<std::size_t>(v, "KNIT_MAX_PENDING");
  p.stuck_after = ms_of(v, "KNIT_STUCK_MS");
  p.stop_timeout = ms_of(v, "KNIT_STOP_TIMEOUT_MS");
  if (auto cpus = v.cpu_list("KNIT_WORKER_CPUS")) p.worker_cpus = std::move(*cpus);
  p.worker_nice = number_of<int>(v, "KNIT_WORKER_NICE");
  p.worker_sched = sched_named(*v.word("KNIT_WORKER_SCHED"));
  p.heavy_share = number_of<unsigned>(v, "KNIT_HEAVY_SHARE");
}

void build_process(const setting_values& v, knit::process_options& o) {
  // Removed with the second process path: a setting for it is refused, not ignored, so a
  // configuration written for it says so at start-up.
  if (v.given("KNIT_PROCESS_HOST_RING")) {
    v.reject("KNIT_PROCESS_HOST_RING",
             cat("it unset (", find_setting("KNIT_PROCESS_HOST_RING")->help, ")"));
  }
  o = heavy_process_options();  // the arenas the heavy call needs
  o.sandbox = *v.word("KNIT_WORKER_SANDBOX") == "strict" ? knit::process_sandbox::strict
                                                         : knit::process_sandbox::off;
  o.lanes = number_of<unsigned>(v, "KNIT_PROCESS_LANES");
  o.memory_limit = number_of<std::size_t>(v, "KNIT_WORKER_MEMORY_MB") << 20;
  o.spare_child = *v.on_off("KNIT_WORKER_SPARE");
}

}  // namespace

server_settings build_settings(const setting_values& v) {
  server_settings s;
  build_server(v, s.cfg);
  s.offload.inline_below_us = number_of<std::uint32_t>(v, "KNIT_AUTO_INLINE_US");
  build_pool(v, s.pool);
  // Lending (pool_options::lend_after): a call waits at most half its queue-wait deadline
  // behind long calls before a lent worker takes it; with no deadline, half the default's.
  const auto wait = s.cfg.max_queue_wait().count() > 0 ? s.cfg.max_queue_wait()
                                                       : std::chrono::microseconds(350'000);
  s.pool.lend_after = std::max(std::chrono::milliseconds(1),
                               std::chrono::duration_cast<std::chrono::milliseconds>(wait / 2));
  if (auto n = v.number("KNIT_LEND_WORKERS")) s.pool.max_lent_workers = static_cast<unsigned>(*n);
  build_process(v, s.process);
  // A client that is slow to send or read while stopping gets no longer than the stop
  // itself may take.
  s.cfg.stop_grace = stop_grace_for(s.pool.stop_timeout);
  // On a knit pool the H loops attach to it; the thread that builds it takes no index.
  if (uses_knit_pool(s.cfg.mode)) s.pool.max_hosts = std::max(s.pool.max_hosts, s.cfg.hosts);
  // Every loop is a knit::asio_host, which rings held wakes once per turn: where the workers
  // share the loops' CPUs, a worker is woken at the end of a turn, not inside each submit.
  // Only with the heavy share off: the share's nice already keeps a woken worker from
  // preempting its loop, and the two together left heavy work less than either alone
  // (pooled /jwt at saturation on one CPU, share 25: 38-64k requests/s held against 61-78k
  // not held; share off: 61-75k held against 36-54k; docs/design.md, "held wakes").
  s.pool.wake_at_turn_end = s.pool.heavy_share == 0 || s.pool.heavy_share >= 100;
  // Every worker process is started before the server listens.
  if (s.cfg.worker_isolation == isolation::process) s.pool.process = s.process;
  // The library's own checks, behind the table's: a rule between its fields that the table
  // does not know yet still stops the server here, naming the field.
  s.pool.validate();
  return s;
}

server_config config_from_env(const env_lookup& getenv) {
  return build_settings(values_from_env(getenv)).cfg;
}

offload_options offload_options_from_env(const env_lookup& getenv) {
  return build_settings(values_from_env(getenv)).offload;
}

}  // namespace knit_server
