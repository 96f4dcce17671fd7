#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Drives headless Chromium over the DevTools protocol, standard library only.

    cdp_driver.py CHROMIUM STEPS.json

The tests call it through run_in_chromium (include/idemgate/test/chromium.hpp): the admin
console's (tests/gateway/console_test.cpp) and the load tester's report page's
(tests/loadtest/loadtest_report_test.cpp). Chromium's flags are set here and nowhere else.

Chromium runs with --remote-debugging-pipe: it reads the protocol's JSON messages, each ended by
a NUL byte, on its fd 3 and writes its own on fd 4. STEPS.json is a list of steps, run in order
on one page; each prints one JSON line {"step": i, "op": ..., "ok": bool, "value" | "error": ...}.
The first step that fails ends the run (its line says why, stderr gets the page's DOM). The last
line is {"console": [...]}: every console message, exception and browser log entry (a CSP
violation among them) the page produced. Steps:

  {"op": "goto", "url": U}                       navigate and wait for the load event
  {"op": "wait", "js": EXPR, "timeout_ms": N}    until EXPR is truthy; value = EXPR's value
  {"op": "eval", "js": EXPR}                     value = EXPR's value (JSON)
  {"op": "type", "js": EXPR, "text": T}          focus the element EXPR returns, insert T as typed
  {"op": "click", "js": EXPR}                    a real mouse click in the middle of that element
  {"op": "screenshot", "path": P}                the whole page as PNG into P
"""
import base64
import fcntl
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time


class cdp_error(Exception):
    pass


class browser:
    def __init__(self, chromium, profile):
        # Both ends move above fd 9 first, so dup2 onto 3 and 4 never overwrites one another.
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        to_r = self._high(to_r)
        from_w = self._high(from_w)
        self.log_path = os.path.join(profile, 'chromium.log')
        args = [
            chromium, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
            '--disable-background-networking', '--disable-component-update', '--disable-sync',
            '--disable-dev-shm-usage', '--disable-extensions', '--hide-scrollbars', '--mute-audio',
            '--user-data-dir=' + os.path.join(profile, 'profile'), '--remote-debugging-pipe',
            '--window-size=1280,1000', 'about:blank',
        ]
        self.pid = os.posix_spawn(chromium, args, os.environ, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
            (os.POSIX_SPAWN_DUP2, 1, 2),
            (os.POSIX_SPAWN_DUP2, to_r, 3),
            (os.POSIX_SPAWN_DUP2, from_w, 4),
        ])
        os.close(to_r)
        os.close(from_w)
        self.out = to_w
        self.inp = from_r
        self.buffer = b''
        self.next_id = 0
        self.events = []
        self.session = None

    @staticmethod
    def _high(fd):
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(fd)
        return high

    def _read_message(self, deadline):
        while b'\0' not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise cdp_error('no message from chromium in time')
            ready, _, _ = select.select([self.inp], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.inp, 1 << 20)
            if not chunk:
                raise cdp_error('chromium closed the pipe (see its log)')
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b'\0', 1)
        return json.loads(message)

    def send(self, method, params=None, session=True, timeout=15.0):
        self.next_id += 1
        message = {'id': self.next_id, 'method': method, 'params': params or {}}
        if session and self.session:
            message['sessionId'] = self.session
        data = json.dumps(message).encode() + b'\0'
        while data:
            data = data[os.write(self.out, data):]
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get('id') == self.next_id:
                if 'error' in reply:
                    raise cdp_error('%s: %s' % (method, reply['error'].get('message')))
                return reply.get('result', {})
            if 'method' in reply:
                self.events.append(reply)

    def wait_event(self, name, timeout):
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get('method') == name:
                    return self.events.pop(i)
            reply = self._read_message(deadline)
            if 'method' in reply:
                self.events.append(reply)

    def attach(self):
        pages = [t for t in self.send('Target.getTargets', session=False)['targetInfos'] if t['type'] == 'page']
        if not pages:
            raise cdp_error('chromium opened no page')
        self.session = self.send('Target.attachToTarget', {'targetId': pages[0]['targetId'], 'flatten': True},
                                 session=False)['sessionId']
        for domain in ('Page', 'Runtime', 'Log'):
            self.send(domain + '.enable')

    def evaluate(self, expression, timeout=15.0):
        result = self.send('Runtime.evaluate', {'expression': expression, 'returnByValue': True,
                                                'awaitPromise': True, 'userGesture': True}, timeout=timeout)
        if 'exceptionDetails' in result:
            d = result['exceptionDetails']
            raise cdp_error('exception: %s' % (d.get('exception', {}).get('description') or d.get('text')))
        return result.get('result', {}).get('value')

    def console(self):
        out = []
        for e in self.events:
            p = e.get('params', {})
            if e.get('method') == 'Runtime.consoleAPICalled':
                out.append({'kind': 'console.' + p.get('type', ''),
                            'text': ' '.join(str(a.get('value', a.get('description', ''))) for a in p.get('args', []))})
            elif e.get('method') == 'Runtime.exceptionThrown':
                d = p.get('exceptionDetails', {})
                out.append({'kind': 'exception', 'text': d.get('exception', {}).get('description') or d.get('text')})
            elif e.get('method') == 'Log.entryAdded':
                entry = p.get('entry', {})
                out.append({'kind': 'log.' + entry.get('level', ''), 'source': entry.get('source'),
                            'text': entry.get('text'), 'url': entry.get('url', '')})
        return out

    def close(self):
        try:
            self.send('Browser.close', session=False, timeout=5.0)
        except (cdp_error, OSError):
            pass
        deadline = time.monotonic() + 10
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                break
            time.sleep(0.05)  # waiting for chromium to exit after Browser.close
        os.close(self.out)
        os.close(self.inp)


def element_center(b, js):
    return b.evaluate('(() => { const e = (%s); if (!e) throw new Error("no such element");'
                      ' e.scrollIntoView({block: "center"}); const r = e.getBoundingClientRect();'
                      ' return [r.x + r.width / 2, r.y + r.height / 2]; })()' % js)


def run_step(b, step):
    op = step['op']
    if op == 'goto':
        b.events = [e for e in b.events if e.get('method') != 'Page.loadEventFired']
        b.send('Page.navigate', {'url': step['url']})
        b.wait_event('Page.loadEventFired', 15.0)
        return None
    if op == 'eval':
        return b.evaluate(step['js'])
    if op == 'wait':
        deadline = time.monotonic() + step.get('timeout_ms', 10000) / 1000.0
        while True:
            # An element found counts as true (by value it would be an empty object).
            value = b.evaluate('(() => { try { const v = (%s); return v instanceof Node ? true : v; }'
                               ' catch (e) { return null; } })()' % step['js'])
            if value:
                return value
            if time.monotonic() > deadline:
                raise cdp_error('timed out waiting for: ' + step['js'])
            time.sleep(0.05)  # polling the page (the driver has no event for an arbitrary condition)
    if op == 'type':
        b.evaluate('(() => { const e = (%s); if (!e) throw new Error("no such element"); e.focus(); })()' % step['js'])
        b.send('Input.insertText', {'text': step['text']})
        return None
    if op == 'click':
        x, y = element_center(b, step['js'])
        for kind in ('mouseMoved', 'mousePressed', 'mouseReleased'):
            b.send('Input.dispatchMouseEvent', {'type': kind, 'x': x, 'y': y, 'button': 'left', 'clickCount': 1})
        return None
    if op == 'screenshot':
        size = b.send('Page.getLayoutMetrics')['cssContentSize']
        shot = b.send('Page.captureScreenshot', {'format': 'png', 'captureBeyondViewport': True,
                                                 'clip': {'x': 0, 'y': 0, 'width': size['width'],
                                                          'height': size['height'], 'scale': 1}}, timeout=30.0)
        with open(step['path'], 'wb') as f:
            f.write(base64.b64decode(shot['data']))
        return {'width': size['width'], 'height': size['height']}
    raise cdp_error('unknown op ' + op)


def main():
    chromium, steps_file = sys.argv[1], sys.argv[2]
    with open(steps_file) as f:
        steps = json.load(f)
    work = tempfile.mkdtemp(prefix='cdp-')
    b = browser(chromium, work)
    failed = False
    try:
        b.attach()
        for i, step in enumerate(steps):
            try:
                value = run_step(b, step)
                print(json.dumps({'step': i, 'op': step['op'], 'ok': True, 'value': value}), flush=True)
            except cdp_error as e:
                print(json.dumps({'step': i, 'op': step['op'], 'ok': False, 'error': str(e)}), flush=True)
                try:
                    sys.stderr.write('DOM: ' + str(b.evaluate('document.documentElement.outerHTML'))[:20000] + '\n')
                except cdp_error:
                    pass
                failed = True
                break
        print(json.dumps({'console': b.console()}), flush=True)
    except cdp_error as e:
        print(json.dumps({'error': str(e)}), flush=True)
        failed = True
    finally:
        b.close()
        if failed:
            with open(b.log_path, errors='replace') as log:
                sys.stderr.write('chromium log (tail):\n' + log.read()[-4000:] + '\n')
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
