-- SPDX-License-Identifier: Apache-2.0
-- Every request the same POST with the same Idempotency-Key: after the first, all replays.
-- No request() hook, so wrk sends one pre-built request at full speed.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "common.lua")

wrk.method = "POST"
wrk.path = bench.path
wrk.body = bench.body
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Idempotency-Key"] = os.getenv("BENCH_KEY") or "bench-replay-one"
if bench.close then
    wrk.headers["Connection"] = "close"
end
