// The bytes of one heavy call (/ssr, /jwt) across the process boundary (KNIT_ISOLATION=process):
// the host encodes the job and the body, the worker process decodes them, runs the job and
// encodes its output, the host decodes that. Host and worker are the same binary (the server
// re-executed in worker mode), so the words are in the machine's own byte order.
//
//   request: 'K' 'H' route(u8: 0 ssr, 1 jwt) measure(u8) cost_us(u32) secret_len(u32)
//            secret[secret_len] body[...]                       (12-byte header)
//   answer:  'K' 'O' 0 0 status(u32) cpu_ns(u64) body[...]       (16-byte header)
//
// Decoding checks every length against what it got: a malformed request or answer is refused
// (nullopt), never read past. The worker only ever sees what its own host encoded, and the
// host only what a worker of the same binary wrote; the checks are for a worker that
// scribbled on its answer before dying, which the process transport would catch first.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "placement/heavy_job.hpp"

namespace knit_server {

inline constexpr std::size_t kHeavyRequestHeader = 12;
inline constexpr std::size_t kHeavyAnswerHeader = 16;

// The request bytes for `job` on `body`.
std::string encode_heavy_request(const heavy_job& job, std::string_view body);

// A decoded request: the job (its secret views `bytes`) and the body (a view into `bytes`).
struct heavy_request {
  heavy_job job;
  std::string_view body;
};
std::optional<heavy_request> decode_heavy_request(std::string_view bytes);

std::string encode_heavy_output(const heavy_output& out);
std::optional<heavy_output> decode_heavy_output(std::string_view bytes);

}  // namespace knit_server
