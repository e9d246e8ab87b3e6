-- wrk -s pipeline.lua URL -- DEPTH: each request() call sends DEPTH pipelined GETs of the
-- URL's path in one write (TechEmpower's plaintext style); wrk counts every response.
local depth = 16
local req

init = function(args)
  depth = tonumber(args[1]) or depth
  local one = wrk.format(nil, wrk.path)
  req = string.rep(one, depth)
end

request = function()
  return req
end
