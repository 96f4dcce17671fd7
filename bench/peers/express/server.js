// SPDX-License-Identifier: Apache-2.0
'use strict';
// bench/run.sh's Express peer: what a Node team would put in front of an upstream instead of
// idemgate. Express with express-idempotency (records in Redis through
// express-idempotency-redis-adapter) and express-http-proxy as the route handler.
//
//   node server.js --port N --upstream-port N --redis-port N [--redis-db N] [--workers N]
//                  [--no-idempotency]
//
// --workers 0 (the default): one Node process. --workers N: a node:cluster primary with N
// workers sharing the listening port. Prints "listening on 127.0.0.1:N" once every process
// serves (the Redis connection open).
//
// express-idempotency records an answer by hooking res.send(). express-http-proxy streams the
// upstream answer past it unless a userResDecorator is set (so is http-proxy-middleware's
// default): without one no record would ever complete. The middleware calls next() on a replay
// too: the handler must ask isHit() and stop there, as its README shows.
const cluster = require('node:cluster');

function arg(name, fallback) {
    const i = process.argv.indexOf(`--${name}`);
    if (i > 0 && i + 1 < process.argv.length) return Number(process.argv[i + 1]);
    if (fallback === undefined) {
        console.error(`express peer: --${name} is required`);
        process.exit(2);
    }
    return fallback;
}
const port = arg('port');
const upstreamPort = arg('upstream-port');
const redisPort = arg('redis-port');
const redisDb = arg('redis-db', 1);
const workers = arg('workers', 0);
const plain = process.argv.includes('--no-idempotency'); // the same app without the middleware

if (workers > 0 && cluster.isPrimary) {
    let ready = 0;
    for (let i = 0; i < workers; i++) {
        cluster.fork().on('message', (m) => {
            if (m === 'ready' && ++ready === workers) console.log(`listening on 127.0.0.1:${port} (${workers} workers)`);
        });
    }
    cluster.on('exit', (w, code, signal) => {
        console.error(`express peer: worker ${w.process.pid} exited (${signal || code})`);
        process.exit(1);
    });
    for (const s of ['SIGTERM', 'SIGINT']) {
        process.on(s, () => {
            for (const id in cluster.workers) cluster.workers[id].kill('SIGTERM');
            process.exit(0);
        });
    }
} else {
    serve();
}

function serve() {
    const http = require('node:http');
    const express = require('express');
    const proxy = require('express-http-proxy');
    const { idempotency, getSharedIdempotencyService } = require('express-idempotency');
    const RedisAdapter = require('express-idempotency-redis-adapter').default;

    // Its own database of the bench's redis-server, so its bare keys meet nobody else's.
    const adapter = new RedisAdapter({ connectionConfig: { url: `redis://127.0.0.1:${redisPort}/${redisDb}` } });
    const app = express();
    app.use(express.json());
    // The middleware marks a replay by setting X-Hit on the request, the header isHit() reads:
    // one sent by the client would make the handler skip a first execution and never answer.
    app.use((req, _res, next) => {
        delete req.headers['x-hit'];
        next();
    });
    if (!plain) app.use(idempotency({ dataAdapter: adapter }));
    const service = plain ? { isHit: () => false } : getSharedIdempotencyService();
    // express-http-proxy's defaults send "Connection: close" upstream (a new upstream connection
    // per request) and copy the upstream's hop-by-hop headers into the answer, "Connection: close"
    // among them, which makes Node close the client's connection too. A pooled keep-alive agent
    // and the hop-by-hop headers dropped give it the keep-alive the other bench targets have.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
    const hopByHop = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade'];
    // No "timeout" option: it adds a listener to the socket on every request, and on pooled
    // sockets those pile up (MaxListenersExceededWarning within seconds under load).
    const upstream = proxy(`127.0.0.1:${upstreamPort}`, {
        proxyReqOptDecorator: (opts) => {
            opts.headers.connection = 'keep-alive';
            opts.agent = agent;
            return opts;
        },
        userResHeaderDecorator: (headers) => {
            for (const h of hopByHop) delete headers[h];
            return headers;
        },
        // A decorator turns off streaming, so the answer reaches res.send() (as a Buffer).
        userResDecorator: (_proxyRes, data) => data,
    });
    app.use((req, res, next) => {
        if (service.isHit(req)) return;
        // The answer is recorded as the middleware's hook sees it, and the Redis adapter stores the
        // record as JSON: a Buffer would come back as {"type":"Buffer","data":[...]} in the
        // replay's body. Text survives.
        const recordingSend = res.send;
        res.send = (body) => recordingSend.call(res, Buffer.isBuffer(body) ? body.toString('utf8') : body);
        upstream(req, res, next);
    });
    // next(err) from the middleware (409 in progress, 417 key reused for another request) or the
    // proxy: its status and a one-line body.
    app.use((err, _req, res, _next) => {
        const status = res.statusCode >= 400 ? res.statusCode : 502;
        res.status(status).type('text/plain').send(String(err && err.message ? err.message : err));
    });

    adapter
        .connect()
        .then(() => {
            const server = app.listen(port, '127.0.0.1', () => {
                if (cluster.isWorker) process.send('ready');
                else console.log(`listening on 127.0.0.1:${port}`);
            });
            server.keepAliveTimeout = 65000;
            process.on('SIGTERM', () => server.close(() => process.exit(0)));
        })
        .catch((e) => {
            console.error(`express peer: Redis on ${redisPort}: ${e.message}`);
            process.exit(1);
        });
}
