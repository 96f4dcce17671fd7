-- SPDX-License-Identifier: Apache-2.0
-- Replays spread over BENCH_KEYS warm keys BENCH_PREFIX-0 .. -(N-1) (pre-warmed by run.sh):
-- each thread walks the whole set from its own offset. Requests are built once in init().
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "common.lua")

local requests = {}
local count = 0
local index = 0

function init(args)
    local prefix = os.getenv("BENCH_WARM_PREFIX") or "bench-warm"
    count = tonumber(os.getenv("BENCH_KEYS") or "10000")
    for i = 0, count - 1 do
        requests[i + 1] = bench.request_for(prefix .. "-" .. i)
    end
    index = (bench_thread_id * 7919) % count
end

function request()
    index = index % count + 1
    return requests[index]
end
