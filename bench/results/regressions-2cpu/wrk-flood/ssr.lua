wrk.method = "POST"
wrk.body = '{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}'
wrk.headers["Content-Type"] = "application/json"
local counts = {}
function response(status, headers, body) counts[status] = (counts[status] or 0) + 1 end
function done(summary, latency, requests)
  io.write(string.format("requests %d, timeouts %d, latency p50 %.1f ms p99 %.1f ms max %.1f ms\n",
    summary.requests, summary.errors.timeout, latency:percentile(50)/1000, latency:percentile(99)/1000, latency.max/1000))
end
