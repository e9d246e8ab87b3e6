// What knit-server prints once it listens: the routes, the mode, the event loops, the costs,
// the admission rule, then the "listening on" line that scripts wait for.
#pragma once

#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <knit/knit.hpp>

#include "config.hpp"
#include "log_writer.hpp"
#include "offload_policy.hpp"

namespace knit_server {

// The banner, one line each: the route list exactly as the reference server prints it, then
//   mode: ...          where /ssr and /jwt run (docs/server-modes.md)
//   hosts: H (...)     the event loops (KNIT_HOSTS, docs/server-hosts.md)
//   cost profile: ..., admission: ...
// `pool` is the knit pool (pooled and auto mode), else null; `threads` is KNIT_THREADS.
void print_banner(const server_config& cfg, const knit::pool* pool, unsigned threads,
                  const offload_options& auto_options, log_writer& out);

// "http://127.0.0.1:3000", an IPv6 address in brackets: the "listening on" line's URL.
std::string url_of(const boost::asio::ip::tcp::endpoint& ep);

}  // namespace knit_server
