// SPDX-License-Identifier: Apache-2.0
'use strict';
// Concurrent duplicates, one pair at a time: N times, two POSTs with the same new Idempotency-Key
// sent in the same tick over two open keep-alive connections, to a target in front of
// idemgate-test-upstream (its /__count says how often the upstream executed; X-Test-Delay-Ms
// holds each execution so the two requests overlap). Prints the executions and the answers.
//
//   node pairs.js TARGET_PORT TEST_UPSTREAM_PORT [PAIRS=50] [DELAY_MS=200]
const http = require('node:http');

const [port, upstreamPort] = process.argv.slice(2, 4).map(Number);
const pairs = Number(process.argv[4] || 50);
const delay = String(process.argv[5] || 200);
if (!port || !upstreamPort) {
    console.error('usage: node pairs.js TARGET_PORT TEST_UPSTREAM_PORT [PAIRS] [DELAY_MS]');
    process.exit(2);
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
const body = '{"item":"book","qty":1}';

function post(key) {
    return new Promise((resolve) => {
        const req = http.request(
            {
                host: '127.0.0.1',
                port,
                method: 'POST',
                path: '/api/orders',
                agent,
                timeout: 10000,
                headers: {
                    'Content-Type': 'application/json',
                    'Content-Length': body.length,
                    'Idempotency-Key': key,
                    'X-Test-Delay-Ms': delay,
                },
            },
            (res) => {
                res.resume();
                res.on('end', () => resolve(String(res.statusCode)));
            },
        );
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', (e) => resolve(`error ${e.message}`));
        req.end(body);
    });
}

function executions() {
    return new Promise((resolve, reject) => {
        http.get({ host: '127.0.0.1', port: upstreamPort, path: '/__count', timeout: 5000 }, (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve(JSON.parse(text).executions));
        }).on('error', reject);
    });
}

(async () => {
    const run = `pairs-${process.pid}-${Date.now()}`;
    await Promise.all([post(`${run}-warm-a`), post(`${run}-warm-b`)]); // opens both connections
    const start = await executions();
    const answers = {};
    let twice = 0;
    for (let i = 0; i < pairs; i++) {
        const before = await executions();
        const codes = await Promise.all([post(`${run}-${i}`), post(`${run}-${i}`)]);
        if ((await executions()) - before > 1) twice++;
        const k = codes.sort().join('+');
        answers[k] = (answers[k] || 0) + 1;
    }
    const total = (await executions()) - start;
    console.log(JSON.stringify({ pairs, delay_ms: Number(delay), upstream_executions: total, pairs_executed_twice: twice, answers }));
    process.exit(0);
})().catch((e) => {
    console.error(`pairs: ${e.message}`);
    process.exit(1);
});
