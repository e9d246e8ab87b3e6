// The heavy call's request and answer encodings (heavy_wire.hpp).
#include "placement/heavy_wire.hpp"

#include <cstdint>
#include <cstring>

namespace knit_server {
namespace {

template <class T>
void put(std::string& out, T v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  out.append(bytes, sizeof v);
}

template <class T>
T get(std::string_view bytes, std::size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

}  // namespace

std::string encode_heavy_request(const heavy_job& job, std::string_view body) {
  std::string out;
  out.reserve(kHeavyRequestHeader + job.jwt_secret.size() + body.size());
  out += 'K';
  out += 'H';
  out += static_cast<char>(job.which == route::jwt ? 1 : 0);
  out += static_cast<char>(job.measure ? 1 : 0);
  put<std::uint32_t>(out, job.cost_us);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(job.jwt_secret.size()));
  out += job.jwt_secret;
  out += body;
  return out;
}

std::optional<heavy_request> decode_heavy_request(std::string_view bytes) {
  if (bytes.size() < kHeavyRequestHeader || bytes[0] != 'K' || bytes[1] != 'H') return std::nullopt;
  const auto which = static_cast<unsigned char>(bytes[2]);
  const auto measure = static_cast<unsigned char>(bytes[3]);
  if (which > 1 || measure > 1) return std::nullopt;
  const auto secret_len = get<std::uint32_t>(bytes, 8);
  if (secret_len > bytes.size() - kHeavyRequestHeader) return std::nullopt;
  heavy_request r;
  r.job.which = which == 1 ? route::jwt : route::ssr;
  r.job.measure = measure == 1;
  r.job.cost_us = get<std::uint32_t>(bytes, 4);
  r.job.jwt_secret = bytes.substr(kHeavyRequestHeader, secret_len);
  r.body = bytes.substr(kHeavyRequestHeader + secret_len);
  return r;
}

std::string encode_heavy_output(const heavy_output& out) {
  std::string bytes;
  bytes.reserve(kHeavyAnswerHeader + out.body.size());
  bytes += "KO";
  bytes.append(2, '\0');
  put<std::uint32_t>(bytes, static_cast<std::uint32_t>(out.status));
  put<std::uint64_t>(bytes, out.cpu_ns);
  bytes += out.body;
  return bytes;
}

std::optional<heavy_output> decode_heavy_output(std::string_view bytes) {
  if (bytes.size() < kHeavyAnswerHeader || bytes.substr(0, 2) != "KO") return std::nullopt;
  const auto status = get<std::uint32_t>(bytes, 4);
  // Only what a heavy route answers: 200, the route's 400, a 5xx of the server's own.
  if (status < 100 || status > 599) return std::nullopt;
  heavy_output out;
  out.status = static_cast<boost::beast::http::status>(status);
  out.cpu_ns = get<std::uint64_t>(bytes, 8);
  out.body.assign(bytes.substr(kHeavyAnswerHeader));
  return out;
}

}  // namespace knit_server
