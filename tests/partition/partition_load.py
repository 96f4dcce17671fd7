#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The partition test's load client, run inside the gateway's network namespace:
partition_load.py SECONDS WORKERS TAG. Each worker sends new keys (TAG-worker-n) to the gateway on
127.0.0.1:18080, retrying each until a 2xx and once more after it; then, once the run has settled,
every answered key once more. Prints every answer as JSON:
[time, key, status, X-Upstream-Execution, latency, first try of a new key(, "sweep")]."""
import http.client, json, sys, threading, time


def client_main(seconds, workers, tag):
    stop_at = time.time() + seconds
    answers = []  # (t, key, status, execution, latency, first_try)
    lock = threading.Lock()

    def worker(w):
        conn = None
        i = 0
        while time.time() < stop_at:
            key = f"{tag}-{w}-{i}"
            i += 1
            succeeded = 0
            tries = 0
            # Until it got a 2xx, then once more (a retry after success).
            while succeeded < 2 and time.time() < stop_at + 10:
                tries += 1
                t0 = time.time()
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", 18080, timeout=5)
                    conn.request("POST", "/api/orders", body="{}",
                                 headers={"Idempotency-Key": key, "Content-Type": "application/json"})
                    r = conn.getresponse()
                    r.read()
                    status, execution = r.status, r.getheader("X-Upstream-Execution")
                except Exception:
                    conn = None
                    status, execution = 0, None
                t1 = time.time()
                with lock:
                    answers.append((t1, key, status, execution, t1 - t0, tries == 1 and succeeded == 0))
                if 200 <= status < 300:
                    succeeded += 1
                else:
                    time.sleep(0.1)
            time.sleep(0.02)  # about 300 new keys a second over all workers, not a flood

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Once the cluster has settled and any orphaned lock (lock_ttl 4 s) has expired, every key that
    # got a 2xx is sent once more: a record the failover lost runs its key again here.
    time.sleep(5)
    done_keys = sorted({key for t, key, status, *_ in answers if 200 <= status < 300})

    def sweep(part):
        conn = None
        for key in part:
            for _ in range(30):
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", 18080, timeout=5)
                    conn.request("POST", "/api/orders", body="{}",
                                 headers={"Idempotency-Key": key, "Content-Type": "application/json"})
                    r = conn.getresponse()
                    r.read()
                    status, execution = r.status, r.getheader("X-Upstream-Execution")
                except Exception:
                    conn = None
                    status, execution = 0, None
                with lock:
                    answers.append((time.time(), key, status, execution, 0.0, False, "sweep"))
                if 200 <= status < 300:
                    break
                time.sleep(0.2)

    parts = [done_keys[i::workers] for i in range(workers)]
    threads = [threading.Thread(target=sweep, args=(p,)) for p in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    client_main(float(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
