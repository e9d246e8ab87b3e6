// pool_options: validation, the KNIT_* environment, and the one-line description.
#include "knit/options.hpp"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string_view>

#include "heavy_share.hpp"

namespace knit {
namespace {

// Parses a whole decimal unsigned integer within [lo, hi]; anything else is an error that
// names the variable, the value and the accepted range.
unsigned long long parse_unsigned(std::string_view text, const char* what, unsigned long long lo,
                                  unsigned long long hi) {
  unsigned long long v = 0;
  const auto* first = text.data();
  const auto* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, v);
  if (text.empty() || ec != std::errc{} || ptr != last || v < lo || v > hi) {
    std::ostringstream msg;
    msg << what << "='" << text << "': expected a whole number from " << lo << " to " << hi;
    throw config_error(msg.str());
  }
  return v;
}

bool parse_flag(std::string_view text, const char* what) {
  if (text == "1") return true;
  if (text == "0") return false;
  throw config_error(std::string(what) + "='" + std::string(text) + "': expected 0 or 1");
}

bool parse_spin_gate(std::string_view text) {
  if (text == "auto") return true;
  if (text == "off") return false;
  throw config_error("KNIT_SPIN_GATE='" + std::string(text) + "': expected auto or off");
}

sched_class parse_sched(std::string_view text) {
  if (text == "other") return sched_class::other;
  if (text == "batch") return sched_class::batch;
  if (text == "idle") return sched_class::idle;
  throw config_error("KNIT_WORKER_SCHED='" + std::string(text) +
                     "': expected other, batch or idle");
}

const char* sched_name(sched_class c) {
  switch (c) {
    case sched_class::other: return "other";
    case sched_class::batch: return "batch";
    case sched_class::idle: return "idle";
  }
  return "?";
}

// Unset and empty both mean "library default" (the reference server's option parsing
// does the same).
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text, const char* what) {
  std::vector<int> cpus;
  std::string_view rest(text);
  auto bad = [&] {
    return config_error(std::string(what) + "='" + text + "': expected a CPU list like 0,2,4-7");
  };
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const auto dash = item.find('-');
    try {
      const auto a = parse_unsigned(item.substr(0, dash), what, 0, 4095);
      const auto b =
          dash == std::string_view::npos ? a : parse_unsigned(item.substr(dash + 1), what, 0, 4095);
      if (b < a) throw bad();
      for (auto c = a; c <= b; ++c) cpus.push_back(static_cast<int>(c));
    } catch (const config_error&) {
      throw bad();
    }
  }
  if (cpus.empty()) throw bad();
  return cpus;
}

void pool_options::validate() const {
  process.validate();
  if (threads < 1 || threads > 1024) {
    throw config_error("threads=" + std::to_string(threads) + ": expected 1 to 1024 workers");
  }
  if (spin_us && *spin_us > 1'000'000) {
    throw config_error("spin_us=" + std::to_string(*spin_us) + ": expected at most 1000000 (1 s)");
  }
  if (park_ms > 3'600'000)
    throw config_error("park_ms=" + std::to_string(park_ms) + ": expected at most 3600000");
  if (!doorbell && park_ms == 0) {
    throw config_error(
        "doorbell=off needs park_ms > 0: with no doorbell and no park timeout a parked worker "
        "would never "
        "wake (set KNIT_PARK, e.g. 1)");
  }
  if (queue_capacity < 1 || queue_capacity > (std::size_t{1} << 24)) {
    throw config_error("queue_capacity=" + std::to_string(queue_capacity) +
                       ": expected 1 to 16777216");
  }
  if (max_hosts < 1 || max_hosts > 64) {
    throw config_error("max_hosts=" + std::to_string(max_hosts) + ": expected 1 to 64");
  }
  if (stuck_after.count() < 0 || stuck_after > std::chrono::hours(24)) {
    throw config_error("stuck_after=" + std::to_string(stuck_after.count()) +
                       "ms: expected 0 to 86400000");
  }
  if (lend_after.count() < 0 || lend_after > std::chrono::hours(24)) {
    throw config_error("lend_after=" + std::to_string(lend_after.count()) +
                       "ms: expected 0 to 86400000");
  }
  if (max_lent_workers && *max_lent_workers > 1024) {
    throw config_error("max_lent_workers=" + std::to_string(*max_lent_workers) +
                       ": expected 0 to 1024");
  }
  if (stop_timeout.count() < 0 || stop_timeout > std::chrono::hours(24)) {
    throw config_error("stop_timeout=" + std::to_string(stop_timeout.count()) +
                       "ms: expected 0 to 86400000");
  }
  for (int cpu : worker_cpus) {
    if (cpu < 0 || cpu >= 4096)
      throw config_error("worker_cpus: CPU " + std::to_string(cpu) + " out of range");
  }
  if (worker_nice < 0 || worker_nice > 19) {
    throw config_error("worker_nice=" + std::to_string(worker_nice) +
                       " (KNIT_WORKER_NICE): expected 0 to 19");
  }
  if (heavy_share > 100) {
    throw config_error("heavy_share=" + std::to_string(heavy_share) +
                       " (KNIT_HEAVY_SHARE): expected 0 to 100 (percent)");
  }
  if (worker_sched != sched_class::other && worker_sched != sched_class::batch &&
      worker_sched != sched_class::idle) {
    throw config_error("worker_sched=" + std::to_string(static_cast<int>(worker_sched)) +
                       " (KNIT_WORKER_SCHED): expected other, batch or idle");
  }
}

pool_options pool_options::from_env() {
  pool_options o;
  if (const char* v = env("KNIT_THREADS"))
    o.threads = static_cast<unsigned>(parse_unsigned(v, "KNIT_THREADS", 1, 1024));
  if (const char* v = env("KNIT_SPIN"))
    o.spin_us = static_cast<unsigned>(parse_unsigned(v, "KNIT_SPIN", 0, 1'000'000));
  if (const char* v = env("KNIT_PARK"))
    o.park_ms = static_cast<unsigned>(parse_unsigned(v, "KNIT_PARK", 0, 3'600'000));
  if (const char* v = env("KNIT_DOORBELL")) o.doorbell = parse_flag(v, "KNIT_DOORBELL");
  if (const char* v = env("KNIT_STEAL")) o.steal = parse_flag(v, "KNIT_STEAL");
  if (const char* v = env("KNIT_MAX_SPINNERS"))
    o.max_spinners = static_cast<unsigned>(parse_unsigned(v, "KNIT_MAX_SPINNERS", 0, 1024));
  if (const char* v = env("KNIT_WAKE_COST"))
    o.wake_cost_us = static_cast<unsigned>(parse_unsigned(v, "KNIT_WAKE_COST", 0, 1'000'000));
  if (const char* v = env("KNIT_QUEUE_CAPACITY"))
    o.queue_capacity = parse_unsigned(v, "KNIT_QUEUE_CAPACITY", 1, std::size_t{1} << 24);
  if (const char* v = env("KNIT_MAX_PENDING"))
    o.max_pending =
        parse_unsigned(v, "KNIT_MAX_PENDING", 0, std::numeric_limits<std::uint32_t>::max());
  o.stuck_after = std::chrono::milliseconds(30'000);
  if (const char* v = env("KNIT_STUCK_MS"))
    o.stuck_after = std::chrono::milliseconds(parse_unsigned(v, "KNIT_STUCK_MS", 0, 86'400'000));
  if (const char* v = env("KNIT_LEND_AFTER_MS"))
    o.lend_after =
        std::chrono::milliseconds(parse_unsigned(v, "KNIT_LEND_AFTER_MS", 0, 86'400'000));
  if (const char* v = env("KNIT_LEND_WORKERS"))
    o.max_lent_workers = static_cast<unsigned>(parse_unsigned(v, "KNIT_LEND_WORKERS", 0, 1024));
  if (const char* v = env("KNIT_STOP_TIMEOUT_MS"))
    o.stop_timeout =
        std::chrono::milliseconds(parse_unsigned(v, "KNIT_STOP_TIMEOUT_MS", 0, 86'400'000));
  if (const char* v = env("KNIT_WORKER_CPUS"))
    o.worker_cpus = parse_cpu_list(v, "KNIT_WORKER_CPUS");
  if (const char* v = env("KNIT_SPIN_GATE")) o.spin_gate = parse_spin_gate(v);
  if (const char* v = env("KNIT_WORKER_NICE"))
    o.worker_nice = static_cast<int>(parse_unsigned(v, "KNIT_WORKER_NICE", 0, 19));
  if (const char* v = env("KNIT_WORKER_SCHED")) o.worker_sched = parse_sched(v);
  if (const char* v = env("KNIT_HEAVY_SHARE"))
    o.heavy_share = static_cast<unsigned>(parse_unsigned(v, "KNIT_HEAVY_SHARE", 0, 100));
  try {
    o.validate();
  } catch (const config_error& e) {
    throw config_error(std::string("KNIT_* environment: ") + e.what());
  }
  return o;
}

int pool_options::heavy_share_nice() const noexcept { return detail::nice_for_share(heavy_share); }

std::string pool_options::describe() const {
  std::ostringstream out;
  const char* gate_why = spin_gate ? "" : spin_us ? "(explicit spin)" : "(default)";
  out << "threads=" << threads << " spin_us=" << effective_spin_us()
      << (spin_us ? "" : "(default policy)")
      << " spin_gate=" << (effective_spin_gate() ? "auto" : "off") << gate_why
      << " park_ms=" << park_ms << (park_ms == 0 ? "(until woken)" : "")
      << " doorbell=" << (doorbell ? "on" : "off") << " steal=" << (steal ? "on" : "off")
      << " max_spinners=" << max_spinners << " wake_cost_us=" << wake_cost_us
      << " queue_capacity=" << queue_capacity << " max_pending=";
  if (max_pending == 0) out << "unlimited";
  else out << max_pending;
  out << " stuck_ms=" << stuck_after.count() << (stuck_after.count() == 0 ? "(never)" : "")
      << " lend_after_ms=" << lend_after.count() << (lend_after.count() == 0 ? "(never)" : "")
      << " lend_workers=" << effective_lent_limit() << " stop_timeout_ms=" << stop_timeout.count()
      << (stop_timeout.count() == 0 ? "(unbounded)" : "");
  if (!worker_cpus.empty()) {
    out << " worker_cpus=";
    for (std::size_t i = 0; i < worker_cpus.size(); ++i) out << (i ? "," : "") << worker_cpus[i];
  }
  out << " worker_nice=" << worker_nice << (worker_nice == 0 ? "(inherited)" : "")
      << " worker_sched=" << sched_name(worker_sched)
      << (worker_sched == sched_class::other ? "(inherited)" : "");
  if (wake_at_turn_end) out << " wake_at_turn_end=on";
  out << " heavy_share=" << heavy_share;
  if (heavy_share == 0 || heavy_share >= 100) out << "(off)";
  else if (worker_nice != 0) out << "%(worker_nice wins)";
  else out << "%(workers nice +" << heavy_share_nice() << ")";
  return out.str();
}

}  // namespace knit
