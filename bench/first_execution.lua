-- SPDX-License-Identifier: Apache-2.0
-- A new Idempotency-Key on every request: every request is a first execution.
-- Keys are BENCH_PREFIX-<thread>-<n>; BENCH_PREFIX must differ between runs.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "common.lua")

local head
local counter = 0

function init(args)
    head = bench.head .. (os.getenv("BENCH_PREFIX") or "bench-first") .. "-" .. bench_thread_id .. "-"
end

function request()
    counter = counter + 1
    return head .. counter .. bench.tail
end
