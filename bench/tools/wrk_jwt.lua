-- wrk -s jwt.lua URL: POST /jwt with the body the server tests use.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}'
