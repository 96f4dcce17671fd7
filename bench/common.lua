-- SPDX-License-Identifier: Apache-2.0
-- Shared by the bench's wrk scripts: the request every target receives and the result line
-- bench/run.sh parses. Loaded with dofile() from the script's own directory.
bench = {}
bench.path = os.getenv("BENCH_PATH") or "/api/orders"
bench.body = '{"item":"book","qty":1}'
-- BENCH_BODY_BYTES=N (the _1k rows: 1024): the same object padded to exactly N bytes.
local body_bytes = tonumber(os.getenv("BENCH_BODY_BYTES") or "0")
if body_bytes > #bench.body then
    local open = '{"item":"book","qty":1,"note":"'
    bench.body = open .. string.rep("x", body_bytes - #open - 2) .. '"}'
end
-- BENCH_CONNECTION_CLOSE=1: every request says "Connection: close", so the server closes after its
-- answer and wrk opens (and, over https, handshakes) a new connection for the next request.
bench.close = os.getenv("BENCH_CONNECTION_CLOSE") == "1"
-- Hand-built requests: wrk.format() per request costs far more than a concatenation.
bench.head = "POST " .. bench.path .. " HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
    .. (bench.close and "Connection: close\r\n" or "")
    .. "Content-Length: " .. #bench.body .. "\r\nIdempotency-Key: "
bench.tail = "\r\n\r\n" .. bench.body

function bench.request_for(key)
    return bench.head .. key .. bench.tail
end

-- thread:set() values arrive as globals in each thread's Lua state; never shadow them with a
-- local of the same name.
local next_thread_id = 0
function setup(thread)
    thread:set("bench_thread_id", next_thread_id)
    next_thread_id = next_thread_id + 1
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format(
        'BENCH_RESULT {"requests":%d,"duration_us":%d,"rps":%.1f,"p50_us":%d,"p99_us":%d,'
        .. '"max_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
        summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
        latency:percentile(50), latency:percentile(99), latency.max,
        e.connect, e.read, e.write, e.status, e.timeout))
end

return bench
