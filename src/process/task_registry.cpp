// The process task registry (task_registry.hpp) and register_process_task.
#include "process/task_registry.hpp"

#include <stdexcept>
#include <utility>

namespace knit::detail {

task_registry& task_registry::instance() {
  // Never destroyed: a worker thread that a pool detached past its stop_timeout may still
  // be inside a process call (looking a task up) while the process exits and runs static
  // destructors (TSan: process_limits under load).
  static task_registry* registry = new task_registry();
  return *registry;
}

void task_registry::add(std::string name, process_task fn) {
  std::lock_guard lock(mutex_);
  if (frozen_.load(std::memory_order_relaxed)) {
    throw std::logic_error("knit::register_process_task('" + name +
                           "'): too late, a process worker has started (register every task "
                           "before the first call and before worker_main)");
  }
  if (!fn) throw std::invalid_argument("knit::register_process_task('" + name + "'): empty");
  if (index_.contains(name)) {
    throw std::logic_error("knit::register_process_task: '" + name + "' is registered already");
  }
  index_.emplace(name, static_cast<std::uint32_t>(tasks_.size()));
  tasks_.push_back({std::move(name), std::move(fn)});
}

void task_registry::freeze() {
  if (frozen_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mutex_);
  if (frozen_.load(std::memory_order_relaxed)) return;
  std::vector<std::string> names;
  names.reserve(tasks_.size());
  for (const entry& e : tasks_) names.push_back(e.name);
  hash_ = registry_hash(names);
  frozen_.store(true, std::memory_order_release);
}

std::optional<std::uint32_t> task_registry::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

bool task_registry::contains(std::string_view name) const {
  if (frozen_.load(std::memory_order_acquire)) return find(name).has_value();
  std::lock_guard lock(mutex_);
  return index_.contains(std::string(name));
}

std::uint64_t registry_hash(const std::vector<std::string>& names) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 0x100000001b3ULL;
  };
  for (const std::string& n : names) {
    for (char c : n) mix(static_cast<unsigned char>(c));
    mix(0);
  }
  return h;
}

}  // namespace knit::detail

namespace knit {

void register_process_task(std::string name, process_task fn) {
  detail::task_registry::instance().add(std::move(name), std::move(fn));
}

bool has_process_task(std::string_view name) {
  return detail::task_registry::instance().contains(name);
}

}  // namespace knit
