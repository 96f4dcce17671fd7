// SPDX-License-Identifier: Apache-2.0
// The admin console's script. Every URL is relative (the console works wherever the admin
// listener is reachable, a private address included); every data call sends the token, read from
// this tab's session storage, as a bearer header, never in a URL; every action is a POST. Keys,
// tenants, routes and problems are client input: they reach the page as text nodes
// (textContent, createElement), never as markup.
'use strict';

(() => {
  const storage_name = 'idemgate.admin.token';
  const refresh_ms = 3000;
  const held_page = 50;
  const byId = (id) => document.getElementById(id);

  let timer = null;
  let previous = null; // the last counters read: {at, outcomes, routes}
  let held_cursor = null;
  let last_reload = ''; // the newest reload seen: the configuration is read again when it changes

  // ---- small DOM helpers (text only) ----
  function text(tag, value, cls) {
    const e = document.createElement(tag);
    if (value !== undefined && value !== null) e.textContent = String(value);
    if (cls) e.className = cls;
    return e;
  }
  function row(cells) {
    const tr = document.createElement('tr');
    for (const c of cells) {
      if (c instanceof Node) {
        const td = document.createElement('td');
        td.append(c);
        tr.append(td);
      } else if (c && typeof c === 'object') {
        tr.append(text('td', c.value, c.cls));
      } else {
        tr.append(text('td', c));
      }
    }
    return tr;
  }
  const num = (v) => ({value: v, cls: 'n'});
  function tbody(tableId) {
    return byId(tableId).tBodies[0];
  }
  function empty_row(body, columns, message) {
    const td = text('td', message, 'empty');
    td.colSpan = columns;
    const tr = document.createElement('tr');
    tr.append(td);
    body.replaceChildren(tr);
  }
  function banner(message, kind) {
    const b = byId('banner');
    b.textContent = message || '';
    b.className = kind || '';
  }
  function age(ms) {
    if (typeof ms !== 'number') return '';
    const s = Math.floor(ms / 1000);
    if (s < 120) return s + ' s';
    if (s < 7200) return Math.floor(s / 60) + ' min';
    return Math.floor(s / 3600) + ' h';
  }
  // The shadow window's length (whole minutes, admin.shadow_window): "45 min", "1 h", "1 h 30 min".
  function window_text(seconds) {
    const m = Math.round(Number(seconds) / 60);
    if (!(m > 0)) return '';
    if (m < 60) return m + ' min';
    return Math.floor(m / 60) + ' h' + (m % 60 ? ' ' + (m % 60) + ' min' : '');
  }

  // ---- the token and the calls ----
  function token() {
    return sessionStorage.getItem(storage_name);
  }
  class unauthorized extends Error {}

  async function call(path, method, body) {
    const headers = {Authorization: 'Bearer ' + token()};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, {
      method: method || 'GET',
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      redirect: 'error',
    });
    if (res.status === 401) {
      sign_out('The admin token was refused: sign in again.');
      throw new unauthorized('unauthorized');
    }
    return res;
  }
  // The detail of a problem answer (RFC 9457), or the status line.
  async function problem_text(res) {
    try {
      const p = await res.json();
      return res.status + ' ' + (p.detail || p.title || '');
    } catch (e) {
      return res.status + ' ' + res.statusText;
    }
  }

  // ---- traffic: /metrics, parsed here ----
  function parse_metrics(textBody) {
    const out = {outcomes: {}, routes: {}};
    const line_re = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
    const label_re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    for (const line of textBody.split('\n')) {
      if (line.startsWith('#')) continue;
      const m = line_re.exec(line);
      if (!m) continue;
      const name = m[1];
      if (name !== 'idemgate_requests_total' && name !== 'idemgate_route_requests_total') continue;
      const labels = {};
      for (const l of (m[2] || '').matchAll(label_re)) labels[l[1]] = l[2].replace(/\\(.)/g, '$1');
      const value = Number(m[3]);
      if (name === 'idemgate_requests_total') {
        out.outcomes[labels.outcome || '?'] = value;
      } else {
        const r = (out.routes[labels.route || '?'] ||= {total: 0});
        r.total += value;
        r[labels.code] = (r[labels.code] || 0) + value;
      }
    }
    return out;
  }
  function rate(now, before, seconds) {
    if (before === undefined || seconds <= 0) return '';
    return ((now - before) / seconds).toFixed(1);
  }
  async function refresh_traffic() {
    const res = await call('../metrics');
    if (!res.ok) throw new Error('/metrics: ' + res.status);
    const now = {at: Date.now(), ...parse_metrics(await res.text())};
    const seconds = previous ? (now.at - previous.at) / 1000 : 0;
    const outcomes = tbody('outcomes');
    const outcome_rows = [];
    for (const [name, v] of Object.entries(now.outcomes).sort((a, b) => b[1] - a[1]))
      if (v > 0) outcome_rows.push(row([name, num(v), num(rate(v, previous?.outcomes[name], seconds))]));
    if (outcome_rows.length) outcomes.replaceChildren(...outcome_rows);
    else empty_row(outcomes, 3, 'no requests yet');
    const routes = tbody('routes');
    const route_rows = [];
    for (const [name, r] of Object.entries(now.routes).sort((a, b) => b[1].total - a[1].total))
      route_rows.push(row([name, num(r['2xx'] || 0), num(r['4xx'] || 0), num(r['5xx'] || 0), num(r.total),
                           num(rate(r.total, previous?.routes[name]?.total, seconds))]));
    if (route_rows.length) routes.replaceChildren(...route_rows);
    else empty_row(routes, 6, 'no requests yet');
    byId('traffic-note').textContent = 'refreshed ' + new Date(now.at).toLocaleTimeString();
    previous = now;
  }

  // ---- held keys ----
  function decision_cell(entry) {
    const box = document.createElement('div');
    box.className = 'decision';
    let raw_key = null;
    if (entry.key === null || entry.key === undefined) {
      // store.hash_keys: the list shows record IDs; resolving takes the key as the client sent it.
      raw_key = document.createElement('input');
      raw_key.placeholder = 'key as sent';
      raw_key.className = 'raw-key';
      box.append(raw_key);
    }
    const reason = document.createElement('input');
    reason.placeholder = 'reason (required)';
    reason.maxLength = 200;
    reason.className = 'reason';
    const status = document.createElement('input');
    status.type = 'number';
    status.min = 100;
    status.max = 599;
    status.placeholder = 'status';
    status.className = 'status';
    const executed = text('button', 'Executed', 'resolve-executed');
    executed.type = 'button';
    const not_executed = text('button', 'Not executed', 'resolve-not-executed');
    not_executed.type = 'button';
    const note = text('span', '', 'note');
    box.append(reason, status, executed, not_executed, note);
    const resolve = async (resolution) => {
      // The scope as the list gave it: the tenant, the route (with its own key space), the
      // principal of a credential-scoped route; a field the list left null is left out.
      const body = {key: raw_key ? raw_key.value : entry.key, resolution, reason: reason.value.trim()};
      if (typeof entry.tenant === 'string') body.tenant = entry.tenant;
      if (typeof entry.route === 'string') body.route = entry.route;
      if (typeof entry.principal === 'string') body.principal = entry.principal;
      if (!body.reason) {
        note.textContent = 'a reason is required';
        reason.focus();
        return;
      }
      if (!body.key) {
        note.textContent = 'the key is required';
        return;
      }
      if (resolution === 'executed') {
        body.status = Number(status.value);
        if (!Number.isInteger(body.status) || body.status < 100 || body.status > 599) {
          note.textContent = 'executed needs the status the upstream answered (100-599)';
          status.focus();
          return;
        }
      }
      executed.disabled = not_executed.disabled = true;
      note.textContent = 'resolving…';
      try {
        const res = await call('v1/records/resolve', 'POST', body);
        if (res.ok) {
          const r = await res.json();
          banner('Resolved ' + body.key + ': ' + r.resolution + ' (' + r.state + ')', 'ok');
          await refresh_held(true);
        } else {
          note.textContent = await problem_text(res);
          executed.disabled = not_executed.disabled = false;
        }
      } catch (e) {
        if (!(e instanceof unauthorized)) note.textContent = String(e.message || e);
        executed.disabled = not_executed.disabled = false;
      }
    };
    executed.addEventListener('click', () => resolve('executed'));
    not_executed.addEventListener('click', () => resolve('not_executed'));
    return box;
  }
  // True while the operator is writing a decision: the periodic refresh leaves the list alone.
  function deciding() {
    const table = byId('held-keys');
    if (table.contains(document.activeElement) && document.activeElement.tagName === 'INPUT') return true;
    for (const input of table.querySelectorAll('input'))
      if (input.value) return true;
    return false;
  }
  async function refresh_held(force, more) {
    if (!force && deciding()) return;
    const params = new URLSearchParams({limit: String(held_page)});
    const tenant = byId('held-tenant').value.trim();
    if (tenant) params.set('tenant', tenant);
    if (more && held_cursor) params.set('cursor', held_cursor);
    const body = tbody('held-keys');
    const res = await call('v1/held?' + params.toString());
    if (!res.ok) {
      empty_row(body, 7, 'not available: ' + await problem_text(res));
      byId('held-more').hidden = true;
      return;
    }
    const data = await res.json();
    const rows = (data.held || []).map((h) => {
      const key = h.key === null || h.key === undefined ? text('span', 'record ' + h.record_id, 'record-id')
                                                       : text('code', h.key, 'key');
      const probe = h.probe ? (h.probe.last_seen || '') + (h.probe.last_at ? ' at ' + h.probe.last_at : '') : 'none';
      const tr = row([h.tenant || '', key, h.route || '', num(age(h.age_ms)), num(h.attempt ?? ''), probe,
                      decision_cell(h)]);
      tr.className = 'held-row';
      return tr;
    });
    if (more) body.append(...rows);
    else if (rows.length) body.replaceChildren(...rows);
    else empty_row(body, 7, 'no held keys');
    held_cursor = data.next_cursor || null;
    byId('held-more').hidden = !held_cursor;
    byId('held-note').textContent = body.querySelectorAll('tr.held-row').length + ' shown';
  }

  // ---- shadow report ----
  const shadow_figures = [
    ['duplicates_executed', 'duplicates executed'],
    ['duplicates_differing', 'answers differing'],
    ['reuse', 'reuse'],
    ['concurrent', 'concurrent'],
  ];
  function figure(v) {
    return v === undefined || v === null ? '' : v === 'not_measured' ? 'not measured' : v;
  }
  function svg(tag, attributes, content) {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attributes || {})) e.setAttribute(k, String(v));
    if (content !== undefined) e.textContent = String(content);
    return e;
  }
  // The width a text of the chart is drawn with; an estimate while it is not rendered.
  function text_width(text) {
    return text.getComputedTextLength() || text.textContent.length * 7;
  }
  // Horizontal bars: per route, the window's duplicates, differing answers, reuse and concurrent.
  // Drawn straight into `place` (in the page), so that each legend label is measured as it is
  // laid out: an item starts where the one before ends, on a new line past the chart's width.
  function shadow_chart(place, routes, window_seconds) {
    const bar = 12, gap = 4, label_width = 160, width = 640, spacing = 16, line = 16;
    const group = shadow_figures.length * (bar + gap) + 12;
    const chart = svg('svg', {width, role: 'img', 'aria-label': 'shadow report, last ' + window_text(window_seconds),
                             class: 'chart'});
    place.replaceChildren(chart);
    const caption = svg('text', {x: 0, y: 14, class: 'caption'}, 'over the last ' + window_text(window_seconds));
    chart.append(caption);
    const start = Math.max(label_width, Math.ceil(text_width(caption)) + spacing);
    let x = start, y = 4;
    shadow_figures.forEach(([, label], i) => {
      const item = svg('g', {class: 'legend-item'});
      const text = svg('text', {x: 14, y: 9, class: 'legend'}, label);
      item.append(svg('rect', {x: 0, y: 0, width: 10, height: 10, class: 'f' + i}), text);
      chart.append(item);
      const w = 14 + Math.ceil(text_width(text));
      if (x > start && x + w > width) {
        x = start;
        y += line;
      }
      item.setAttribute('transform', 'translate(' + x + ',' + y + ')');
      x += w + spacing;
    });
    const top = y + 20;
    let max = 1;
    for (const r of routes)
      for (const [f] of shadow_figures) max = Math.max(max, Number(r.window?.[f]) || 0);
    routes.forEach((r, ri) => {
      const y0 = top + ri * group;
      chart.append(svg('text', {x: 0, y: y0 + group / 2, class: 'route'}, r.route));
      shadow_figures.forEach(([f, label], i) => {
        const v = Number(r.window?.[f]) || 0;
        const w = Math.max(v > 0 ? 2 : 0, Math.round((width - label_width - 60) * v / max));
        const by = y0 + i * (bar + gap);
        const rect = svg('rect', {x: label_width, y: by, width: w, height: bar, class: 'f' + i});
        rect.append(svg('title', {}, r.route + ': ' + label + ' ' + v));
        chart.append(rect, svg('text', {x: label_width + w + 4, y: by + bar - 2, class: 'value'}, v));
      });
    });
    const height = top + routes.length * group + 8;
    chart.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    chart.setAttribute('height', height);
  }
  async function refresh_shadow() {
    const body = tbody('shadow-table');
    const res = await call('v1/shadow');
    if (!res.ok) {
      empty_row(body, 8, 'not available: ' + await problem_text(res));
      byId('shadow-chart').replaceChildren();
      return;
    }
    const data = await res.json();
    const routes = data.routes || [];
    const rows = [];
    for (const r of routes) {
      for (const [span, label] of [['since_start', 'since start'], ['window', 'last ' + window_text(data.window_seconds)]]) {
        const f = r[span] || {};
        rows.push(row([r.route, label, num(figure(f.keyed)), num(figure(f.duplicates_executed)),
                       num(figure(f.duplicates_differing)), num(figure(f.reuse)), num(figure(f.concurrent)),
                       num(figure(f.after_ttl))]));
      }
    }
    if (rows.length) body.replaceChildren(...rows);
    else empty_row(body, 8, 'no route in shadow mode');
    byId('shadow-note').textContent = data.scope === 'store' ? 'every gateway on this store' : 'this process';
    if (routes.length) shadow_chart(byId('shadow-chart'), routes, data.window_seconds);
    else byId('shadow-chart').replaceChildren();
  }

  // ---- upstreams, reloads, configuration ----
  async function refresh_upstreams() {
    const body = tbody('upstream-table');
    const res = await call('v1/upstreams');
    if (!res.ok) return empty_row(body, 6, 'not available: ' + await problem_text(res));
    const data = await res.json();
    const rows = [];
    for (const u of data.upstreams || []) {
      if (!(u.endpoints || []).length)
        rows.push(row([u.name, u.waiting_for ? 'waiting: ' + u.waiting_for : 'no address', '', '', '', '']));
      for (const e of u.endpoints || []) {
        const state = e.ejected ? 'ejected' + (e.ejected_for_ms ? ' (' + age(e.ejected_for_ms) + ' left)' : '')
                                : e.healthy ? 'healthy' : 'failing';
        const tr = row([u.name, e.address, {value: state, cls: 'state ' + (e.ejected ? 'bad' : e.healthy ? 'good' : 'warn')},
                        num(e.ejections), num(e.consecutive_failures ?? ''), num(e.in_flight ?? '')]);
        rows.push(tr);
      }
    }
    if (rows.length) body.replaceChildren(...rows);
    else empty_row(body, 6, 'no upstream');
  }
  async function refresh_reloads() {
    const body = tbody('reload-table');
    const res = await call('v1/reloads');
    if (!res.ok) return empty_row(body, 6, 'not available: ' + await problem_text(res));
    const data = await res.json();
    const list = data.reloads || [];
    const rows = list.map((r) => {
      const problems = document.createElement('ul');
      for (const p of r.problems || []) problems.append(text('li', p));
      return row([r.at, r.trigger || '', {value: r.result, cls: r.result === 'applied' ? 'good' : 'bad'},
                  num(r.generation), text('code', (r.sha256 || '').slice(0, 12)), problems]);
    });
    if (rows.length) body.replaceChildren(...rows);
    else empty_row(body, 6, 'no reload since start');
    const newest = list.length ? list[0].at + list[0].result : 'start';
    if (newest !== last_reload) {
      last_reload = newest;
      await refresh_config();
    }
  }
  async function refresh_config() {
    const res = await call('v1/config');
    if (!res.ok) {
      byId('config-text').textContent = 'not available: ' + await problem_text(res);
      return;
    }
    byId('config-text').textContent = await res.text();
    const generation = res.headers.get('Idemgate-Config-Generation');
    byId('config-note').textContent = generation ? 'generation ' + generation + ', secrets as their variables' : '';
  }

  // ---- the loop ----
  async function refresh_all() {
    const parts = [refresh_traffic, () => refresh_held(false), refresh_shadow, refresh_upstreams, refresh_reloads];
    const results = await Promise.allSettled(parts.map((f) => f()));
    if (!token()) return;
    const failed = results.filter((r) => r.status === 'rejected' && !(r.reason instanceof unauthorized));
    if (failed.length) banner('refresh failed: ' + (failed[0].reason?.message || failed[0].reason), 'bad');
    else if (byId('banner').className === 'bad') banner('');
  }
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      await refresh_all();
      if (token()) schedule();
    }, refresh_ms);
  }

  // ---- signing in and out ----
  function clear_data() {
    for (const id of ['outcomes', 'routes', 'held-keys', 'shadow-table', 'upstream-table', 'reload-table'])
      tbody(id).replaceChildren();
    for (const id of ['config-text', 'shadow-chart', 'traffic-note', 'held-note', 'shadow-note', 'config-note'])
      byId(id).replaceChildren();
    previous = null;
    held_cursor = null;
    last_reload = '';
  }
  function sign_out(message) {
    clearTimeout(timer);
    timer = null;
    sessionStorage.removeItem(storage_name);
    clear_data();
    byId('console').hidden = true;
    byId('sign-out').hidden = true;
    byId('sign-in').hidden = false;
    byId('sign-in-error').textContent = message || '';
    banner('');
  }
  async function open_console() {
    // The token is checked by a call that needs it before anything is shown.
    const res = await call('v1/reloads');
    if (!res.ok) throw new Error(await problem_text(res));
    byId('sign-in').hidden = true;
    byId('sign-in-error').textContent = '';
    byId('console').hidden = false;
    byId('sign-out').hidden = false;
    await refresh_all();
    if (token()) schedule();
  }

  function start() {
    byId('sign-in').addEventListener('submit', async (event) => {
      event.preventDefault(); // the token never goes into a URL or a form post
      const input = byId('token');
      const value = input.value.trim();
      input.value = '';
      if (!value) return;
      sessionStorage.setItem(storage_name, value);
      try {
        await open_console();
      } catch (e) {
        if (!(e instanceof unauthorized)) sign_out('Cannot reach the admin API: ' + (e.message || e));
      }
    });
    byId('sign-out').addEventListener('click', () => sign_out('Signed out.'));
    byId('held-filter').addEventListener('submit', (event) => {
      event.preventDefault();
      refresh_held(true).catch((e) => banner(String(e.message || e), 'bad'));
    });
    byId('held-more').addEventListener('click', () => {
      refresh_held(true, true).catch((e) => banner(String(e.message || e), 'bad'));
    });
    byId('reload-now').addEventListener('click', async () => {
      try {
        const res = await call('v1/reload', 'POST');
        if (res.ok) {
          const r = await res.json();
          banner('Reloaded: generation ' + r.generation, 'ok');
        } else {
          banner('Reload refused: ' + await problem_text(res), 'bad');
        }
        await refresh_reloads();
      } catch (e) {
        if (!(e instanceof unauthorized)) banner(String(e.message || e), 'bad');
      }
    });
    if (token()) {
      open_console().catch((e) => {
        if (!(e instanceof unauthorized)) sign_out('Cannot reach the admin API: ' + (e.message || e));
      });
    }
  }

  start();
})();
