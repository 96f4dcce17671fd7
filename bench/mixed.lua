-- SPDX-License-Identifier: Apache-2.0
-- 90 % replays of BENCH_KEYS warm keys (BENCH_WARM_PREFIX-i), 10 % new keys (BENCH_PREFIX-...).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "common.lua")

local replays = {}
local count = 0
local index = 0
local new_head
local counter = 0

function init(args)
    local warm_prefix = os.getenv("BENCH_WARM_PREFIX") or "bench-warm"
    count = tonumber(os.getenv("BENCH_KEYS") or "10000")
    for i = 0, count - 1 do
        replays[i + 1] = bench.request_for(warm_prefix .. "-" .. i)
    end
    index = (bench_thread_id * 7919) % count
    new_head = bench.head .. (os.getenv("BENCH_PREFIX") or "bench-mixed") .. "-" .. bench_thread_id .. "-"
end

function request()
    counter = counter + 1
    if counter % 10 == 0 then
        return new_head .. counter .. bench.tail
    end
    index = index % count + 1
    return replays[index]
end
