// The process task registry: name -> task, in registration order (a task's index is its id
// on the wire). Filled before any child starts, then frozen: after freeze() it is read
// without a lock from every worker thread, and its count and hash are what the start-up
// handshake compares between host and child.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "knit/process.hpp"

namespace knit::detail {

class task_registry {
 public:
  static task_registry& instance();

  // Throws std::logic_error when frozen or for a duplicate name.
  void add(std::string name, process_task fn);
  // Idempotent; after it add() throws.
  void freeze();

  // After freeze() only.
  std::optional<std::uint32_t> find(std::string_view name) const;
  std::uint32_t count() const noexcept { return static_cast<std::uint32_t>(tasks_.size()); }
  std::uint64_t hash() const noexcept { return hash_; }
  const process_task& task(std::uint32_t index) const { return tasks_[index].fn; }
  const std::string& name(std::uint32_t index) const { return tasks_[index].name; }

  // A lookup that works before or after freeze() (for submit_process's early check).
  bool contains(std::string_view name) const;

 private:
  struct entry {
    std::string name;
    process_task fn;
  };
  mutable std::mutex mutex_;
  std::atomic<bool> frozen_{false};
  std::vector<entry> tasks_;
  std::unordered_map<std::string, std::uint32_t> index_;
  std::uint64_t hash_ = 0;
};

// FNV-1a over every name and a 0 after each, in order: equal exactly when host and child
// registered the same names in the same order (up to a 64-bit collision).
std::uint64_t registry_hash(const std::vector<std::string>& names) noexcept;

}  // namespace knit::detail
