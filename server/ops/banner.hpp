// What knit-server prints once it listens: the routes, the mode, the event loops, the costs,
// the admission rule, then the "listening on" line that scripts wait for.
#pragma once

#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>
#include <knit/knit.hpp>

#include "config.hpp"
#include "limits/memory_budget.hpp"
#include "limits/write_budget.hpp"
#include "placement/offload_policy.hpp"
#include "telemetry/log_writer.hpp"

namespace knit_server {

// The banner, one line each: the route list exactly as the reference server prints it, then
//   mode: ...          where /ssr and /jwt run (docs/server-modes.md)
//   hosts: H (...)     the event loops (KNIT_HOSTS, docs/server-hosts.md)
//   io: ...            `io_line`: what the loops wait in (KNIT_IO, docs/server-io.md)
//   cost profile: ..., admission: ...
//   memory budget: ...  the write budget, where it came from, what it admits (budget_line)
// `pool` is the knit pool (pooled and auto mode), else null; `threads` is KNIT_THREADS.
void print_banner(const server_config& cfg, const knit::pool* pool, unsigned threads,
                  const offload_options& auto_options, const write_budget& budget,
                  budget_origin origin, std::string_view io_line, log_writer& out);

// "memory budget: 1024 MB (fixed default; ...) for unfinished writes; kernel send queue
// <= 128 KiB per connection (SO_SNDBUF 64 KiB, doubled by Linux); sheds /ssr and /jwt with
// 503 after 1169 slow readers of the largest page (787 KB)".
std::string budget_line(const server_config& cfg, const write_budget& budget, budget_origin origin);

// "http://127.0.0.1:3000", an IPv6 address in brackets: the "listening on" line's URL.
std::string url_of(const boost::asio::ip::tcp::endpoint& ep);

}  // namespace knit_server
