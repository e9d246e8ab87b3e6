// worker_thread: a pool thread started on its CPUs (worker_thread.hpp says why).
#include "worker_thread.hpp"

#include <cerrno>
#include <exception>
#include <memory>
#include <system_error>
#include <utility>

#include "invariant.hpp"

namespace knit::detail {

cpu_set_t building_thread_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  // Fails only past CPU_SETSIZE (1024) CPUs: then every CPU of the set, and the kernel
  // keeps the thread inside what it may use.
  if (::pthread_getaffinity_np(::pthread_self(), sizeof set, &set) != 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &set);
  }
  return set;
}

cpu_set_t worker_cpu_set(const pool_options& options, unsigned self, const cpu_set_t& unpinned) {
  if (options.worker_cpus.empty()) return unpinned;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(options.worker_cpus[self % options.worker_cpus.size()], &set);
  return set;
}

namespace {

void* run_body(void* arg) noexcept {
  const std::unique_ptr<std::function<void()>> body(static_cast<std::function<void()>*>(arg));
  (*body)();
  return nullptr;
}

// pthread_create with `cpus` as the attribute's mask, or none (nullptr). Returns its error.
int create(pthread_t& handle, const cpu_set_t* cpus, std::function<void()>* body) noexcept {
  pthread_attr_t attr;
  if (const int e = ::pthread_attr_init(&attr); e != 0) return e;
  int e = cpus ? ::pthread_attr_setaffinity_np(&attr, sizeof *cpus, cpus) : 0;
  if (e == 0) e = ::pthread_create(&handle, &attr, run_body, body);
  ::pthread_attr_destroy(&attr);
  return e;
}

}  // namespace

worker_thread::worker_thread(const cpu_set_t& cpus, std::function<void()> body,
                             bool& refused_cpus) {
  auto owned = std::make_unique<std::function<void()>>(std::move(body));
  pthread_t handle;
  int e = create(handle, &cpus, owned.get());
  refused_cpus = e == EINVAL;
  if (refused_cpus) e = create(handle, nullptr, owned.get());
  if (e != 0) throw std::system_error(e, std::generic_category(), "knit: worker thread");
  owned.release();  // the thread's now (run_body frees it)
  handle_ = handle;
}

worker_thread::worker_thread(worker_thread&& other) noexcept
    : handle_(std::exchange(other.handle_, std::nullopt)) {}

worker_thread& worker_thread::operator=(worker_thread&& other) noexcept {
  if (joinable()) std::terminate();  // as std::thread: a running thread is never dropped
  handle_ = std::exchange(other.handle_, std::nullopt);
  return *this;
}

worker_thread::~worker_thread() {
  if (joinable()) std::terminate();
}

void worker_thread::join() {
  KNIT_ASSERT(joinable());
  const int e = ::pthread_join(*handle_, nullptr);
  if (e != 0) throw std::system_error(e, std::generic_category(), "knit: joining a worker");
  handle_.reset();
}

void worker_thread::detach() {
  KNIT_ASSERT(joinable());
  const int e = ::pthread_detach(*handle_);
  if (e != 0) throw std::system_error(e, std::generic_category(), "knit: detaching a worker");
  handle_.reset();
}

}  // namespace knit::detail
