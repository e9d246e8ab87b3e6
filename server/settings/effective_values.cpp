// Each setting's effective value, and --print-config (effective_values.hpp).
#include "settings/effective_values.hpp"

#include "limits/memory_budget.hpp"
#include "settings/text_layout.hpp"

namespace knit_server {
namespace {

std::string num(std::uint64_t n) { return std::to_string(n); }
std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()); }
std::string on_off(bool b) { return b ? "1" : "0"; }

// A duration in ms as KNIT_MAX_QUEUE_WAIT_MS would spell it, with a fraction where the
// 1.4 x rule leaves one (1.4 x 1 ms).
std::string ms_of_us(std::chrono::microseconds d) {
  std::string text = std::to_string(d.count() / 1000);
  if (const auto rest = d.count() % 1000; rest != 0) {
    std::string fraction = std::to_string(1000 + rest).substr(1);
    while (fraction.back() == '0') fraction.pop_back();
    text += "." + fraction;
  }
  return text;
}

std::string sched_name(knit::sched_class c) {
  switch (c) {
    case knit::sched_class::other: return "other";
    case knit::sched_class::batch: return "batch";
    case knit::sched_class::idle: return "idle";
  }
  return "?";
}

std::string cpus(const std::vector<int>& list) {
  std::string text;
  for (int cpu : list) {
    if (!text.empty()) text += ',';
    text += std::to_string(cpu);
  }
  return text;
}

std::string server_value(std::string_view env, const server_config& c) {
  if (env == "HOST") return c.host;
  if (env == "PORT") return num(c.port);
  if (env == "KNIT_MODE") return std::string(to_string(c.mode));
  if (env == "KNIT_HOSTS") return num(c.hosts);
  if (env == "KNIT_IO") return std::string(to_string(c.io));
  if (env == "KNIT_ISOLATION") return std::string(to_string(c.worker_isolation));
  if (env == "KNIT_MAX_CONNECTIONS") return num(c.max_connections);
  if (env == "KNIT_IDLE_TIMEOUT_MS") return ms(c.idle_timeout);
  if (env == "KNIT_MEMORY_BUDGET_MB") {
    const memory_budget budget = resolve_memory_budget(
        c.memory_budget_mb, c.memory_budget_mb ? std::nullopt : process_memory_max());
    return num(budget.bytes >> 20);
  }
  if (env == "KNIT_SNDBUF_KB") return num(c.sndbuf_kb);
  if (env == "KNIT_MAX_QUEUE_MS") return ms(c.max_queue_delay);
  if (env == "KNIT_MAX_QUEUED") return num(c.max_queued);
  if (env == "KNIT_MAX_QUEUE_WAIT_MS") return ms_of_us(c.max_queue_wait());
  if (env == "KNIT_DRAIN_DELAY_MS") return ms(c.drain_delay);
  if (env == "KNIT_COST_PROFILE") return c.cost_profile;
  if (env == "KNIT_SSR_COST_US") return num(c.ssr_cost_us);
  if (env == "KNIT_JWT_COST_US") return num(c.jwt_cost_us);
  return "";
}

std::string pool_value(std::string_view env, const knit::pool_options& p) {
  if (env == "KNIT_THREADS") return num(p.threads);
  if (env == "KNIT_SPIN") return num(p.effective_spin_us());
  if (env == "KNIT_SPIN_GATE") return p.effective_spin_gate() ? "auto" : "off";
  if (env == "KNIT_PARK") return num(p.park_ms);
  if (env == "KNIT_DOORBELL") return on_off(p.doorbell);
  if (env == "KNIT_STEAL") return on_off(p.steal);
  if (env == "KNIT_MAX_SPINNERS") return num(p.max_spinners);
  if (env == "KNIT_WAKE_COST") return num(p.wake_cost_us);
  if (env == "KNIT_QUEUE_CAPACITY") return num(p.queue_capacity);
  if (env == "KNIT_WORKER_CPUS") return cpus(p.worker_cpus);
  if (env == "KNIT_WORKER_NICE") return num(static_cast<std::uint64_t>(p.worker_nice));
  if (env == "KNIT_WORKER_SCHED") return sched_name(p.worker_sched);
  if (env == "KNIT_HEAVY_SHARE") return num(p.heavy_share);
  if (env == "KNIT_MAX_PENDING") return num(p.max_pending);
  if (env == "KNIT_STUCK_MS") return ms(p.stuck_after);
  if (env == "KNIT_LEND_WORKERS") return num(p.effective_lent_limit());
  if (env == "KNIT_STOP_TIMEOUT_MS") return ms(p.stop_timeout);
  return "";
}

std::string process_value(std::string_view env, const knit::process_options& o) {
  if (env == "KNIT_WORKER_SANDBOX") {
    return o.sandbox == knit::process_sandbox::strict ? "strict" : "off";
  }
  if (env == "KNIT_PROCESS_LANES") return num(o.lanes);
  if (env == "KNIT_WORKER_MEMORY_MB") return num(o.memory_limit >> 20);
  if (env == "KNIT_WORKER_SPARE") return on_off(o.spare_child);
  return "";
}

}  // namespace

std::string effective_value(const setting& row, const server_settings& s) {
  switch (row.group) {
    case setting_group::hidden: return "";
    case setting_group::pool: return pool_value(row.env, s.pool);
    case setting_group::process_workers:
      return row.env == "KNIT_ISOLATION" ? server_value(row.env, s.cfg)
                                         : process_value(row.env, s.process);
    default: break;
  }
  if (row.env == "KNIT_AUTO_INLINE_US") return num(s.offload.inline_below_us);
  if (row.env == "JWT_SECRET") return "";
  const std::string value = server_value(row.env, s.cfg);
  return value.empty() ? pool_value(row.env, s.pool) : value;  // the pool's rows under Limits
}

std::string print_config_text(const setting_values& values, const server_settings& s) {
  std::string out =
      "# knit-server's effective configuration: each setting's value, then where it came from\n"
      "# (default, env or flag). The lines are in the environment file's form.\n";
  std::optional<setting_group> group;
  for (const setting& row : settings_table()) {
    if (row.group == setting_group::hidden) continue;
    if (row.group != group) {
      group = row.group;
      out += cat("\n# --- ", group_title(row.group), "\n");
    }
    const given_value& given = values.get(row.env);
    std::string line;
    if (row.kind == setting_kind::text) {  // JWT_SECRET: whether it is given, not what it is
      line = '#';
      line += row.env;
      line += s.cfg.jwt_secret_generated ? "=(random, this run only)" : "=(given, not shown)";
    } else {
      line = cat(row.env, "=", effective_value(row, s));
    }
    line.resize(std::max<std::size_t>(line.size() + 1, 40), ' ');
    line += "# ";
    line += to_string(given.origin);
    if (given.origin == setting_origin::flag) (line += ' ') += row.flag;
    if (given.origin == setting_origin::default_value && row.default_value.empty()) {
      (line += ": ") += row.default_note;
    }
    out += line += '\n';
  }
  return out;
}

}  // namespace knit_server
