// weir's web dashboard: plain JavaScript, no build step. It reads the
// JobManager's REST API (Flink's paths and shapes) and polls the page's
// data every second; the forms stay as they are while the data updates.
'use strict';

const POLL_MS = 1000;
const TOKEN_KEY = 'weir-token';

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  view: null,     // the mounted view: {update()}
  gen: 0,         // bumped on every navigation; stale polls stop
  timer: null,
  samples: {},    // records counters of the last look, by job/vertex
  missing: {},    // endpoints that answered 404 (not served), by path kind and job
};

// ---------- helpers ----------

class APIError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

async function api(path, opts = {}) {
  const headers = {};
  if (state.token) headers['Authorization'] = 'Bearer ' + state.token;
  let body = opts.body;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  }
  const resp = await fetch(path, { method: opts.method || 'GET', headers, body, cache: 'no-store' });
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = text; }
  if (resp.status === 401) {
    askToken(state.token ? 'The token was not accepted.' : '');
    throw new APIError(401, 'the cluster requires its token');
  }
  if (!resp.ok) {
    const msg = data && data.errors ? data.errors.join('; ') : resp.status + ' ' + resp.statusText;
    throw new APIError(resp.status, msg);
  }
  return data;
}

// optional fetches an endpoint that this JobManager may not serve: a 404
// is remembered per kind and job so that it is not asked every second.
async function optional(kind, key, path) {
  const k = kind + ' ' + key;
  if (state.missing[k] && Date.now() - state.missing[k] < 15000) return null;
  try {
    return await api(path);
  } catch (e) {
    if (e.status === 404) { state.missing[k] = Date.now(); return null; }
    throw e;
  }
}

function esc(s) {
  return String(s === undefined || s === null ? '' : s)
    .replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

function fmtNum(n) {
  if (n === undefined || n === null || n === '' || isNaN(n)) return '–';
  return Number(n).toLocaleString('en-US', { maximumFractionDigits: 1 });
}

function fmtRate(r) {
  if (r === undefined || r === null || isNaN(r)) return '–';
  if (r >= 1e6) return (r / 1e6).toFixed(2) + 'M/s';
  if (r >= 1e4) return (r / 1e3).toFixed(1) + 'K/s';
  return r.toFixed(r < 10 ? 1 : 0) + '/s';
}

function fmtBytes(b) {
  if (b === undefined || b === null || isNaN(b) || b < 0) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(1) : b) + ' ' + u[i];
}

function fmtTime(ms) {
  if (!ms || ms < 0) return '–';
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function fmtDuration(ms) {
  if (ms === undefined || ms === null || ms < 0) return '–';
  if (ms < 1000) return ms + 'ms';
  let s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  s %= 60;
  if (h) return `${h}h ${m}m ${s}s`;
  if (m) return `${m}m ${s}s`;
  return `${s}s`;
}

function badge(st) {
  return `<span class="badge st-${esc(st)}">${esc(st)}</span>`;
}

// table renders rows (objects) with columns [{title, cell(row) -> html, cls}].
function table(id, columns, rows, opts = {}) {
  let h = `<table id="${esc(id)}">`;
  if (columns.some((c) => c.title)) {
    h += '<thead><tr>';
    for (const c of columns) h += `<th class="${c.cls || ''}">${esc(c.title)}</th>`;
    h += '</tr></thead>';
  }
  h += '<tbody>';
  if (!rows.length) {
    h += `<tr><td class="empty" colspan="${columns.length}">${esc(opts.empty || 'None.')}</td></tr>`;
  }
  for (const r of rows) {
    const attrs = opts.rowAttrs ? opts.rowAttrs(r) : '';
    h += `<tr ${attrs}>`;
    for (const c of columns) h += `<td class="${c.cls || ''}">${c.cell(r)}</td>`;
    h += '</tr>';
    if (opts.after) h += opts.after(r);
  }
  return h + '</tbody></table>';
}

function setHTML(id, html) {
  const el = document.getElementById(id);
  if (el && el.innerHTML !== html) el.innerHTML = html;
}

function setText(id, text, attrs = {}) {
  const el = document.getElementById(id);
  if (!el) return;
  if (el.textContent !== String(text)) el.textContent = text;
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
}

function showError(e) {
  if (e instanceof APIError && e.status === 401) return;
  setText('view-error', e ? 'Could not load: ' + e.message : '');
}

// ---------- token ----------

function askToken(msg) {
  const o = document.getElementById('token-overlay');
  document.getElementById('token-error').textContent = msg || '';
  if (o.hidden) {
    o.hidden = false;
    document.getElementById('token-input').focus();
  }
}

document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  state.token = document.getElementById('token-input').value.trim();
  sessionStorage.setItem(TOKEN_KEY, state.token);
  document.getElementById('token-overlay').hidden = true;
  loadVersion();
  route();
});

// ---------- polling and routing ----------

function schedule(gen) {
  clearTimeout(state.timer);
  state.timer = setTimeout(() => poll(gen), POLL_MS);
}

async function poll(gen) {
  if (gen !== state.gen || !state.view) return;
  // Nothing to ask while the token is being asked for.
  if (!document.getElementById('token-overlay').hidden) {
    schedule(gen);
    return;
  }
  const ps = document.getElementById('poll-state');
  try {
    await state.view.update();
    if (gen !== state.gen) return;
    showError(null);
    ps.textContent = 'updated ' + new Date().toLocaleTimeString();
    ps.dataset.state = 'ok';
  } catch (e) {
    if (gen !== state.gen) return;
    showError(e);
    ps.textContent = 'update failed';
    ps.dataset.state = 'error';
  }
  schedule(gen);
}

// refresh updates the current view now, between two polls.
function refresh() {
  if (state.view) state.view.update().catch(showError);
}

const routes = [
  [/^#?\/?(overview)?$/, 'overview', () => overviewView()],
  [/^#\/jobs\/running$/, 'running', () => jobsView(true)],
  [/^#\/jobs\/completed$/, 'completed', () => jobsView(false)],
  [/^#\/job\/([0-9a-zA-Z]+)\/vertex\/([^/]+)$/, 'job', (m) => vertexView(m[1], decodeURIComponent(m[2]))],
  [/^#\/job\/([0-9a-zA-Z]+)(?:\/(overview|exceptions|checkpoints|config))?$/, 'job', (m) => jobView(m[1], m[2] || 'overview')],
  [/^#\/taskmanagers$/, 'taskmanagers', () => taskManagersView()],
  [/^#\/taskmanager\/([^/]+)$/, 'taskmanagers', (m) => taskManagerView(decodeURIComponent(m[1]))],
  [/^#\/submit$/, 'submit', () => submitView()],
];

function route() {
  const hash = location.hash || '#/overview';
  state.gen++;
  clearTimeout(state.timer);
  const view = document.getElementById('view');
  for (const [re, nav, make] of routes) {
    const m = hash.match(re);
    if (!m) continue;
    for (const a of document.querySelectorAll('#sidebar a[data-nav]')) {
      a.classList.toggle('active', a.dataset.nav === nav);
    }
    state.view = make(m);
    view.innerHTML = state.view.html + '<p id="view-error" class="error"></p>';
    view.dataset.view = state.view.name;
    if (state.view.mount) state.view.mount();
    poll(state.gen);
    return;
  }
  state.view = null;
  view.innerHTML = `<h1>Not found</h1><p>No page ${esc(hash)}. <a href="#/overview">Overview</a></p>`;
}

window.addEventListener('hashchange', route);

// ---------- overview and job lists ----------

function jobRows(jobs) {
  return table('', [
    { title: 'Job Name', cell: (j) => `<a href="#/job/${esc(j.jid)}">${esc(j.name || j.jid)}</a>` },
    { title: 'Start Time', cell: (j) => fmtTime(j['start-time']) },
    { title: 'Duration', cell: (j) => fmtDuration(j.duration) },
    { title: 'End Time', cell: (j) => (j['end-time'] > 0 ? fmtTime(j['end-time']) : '–') },
    { title: 'Tasks', cell: (j) => taskBadges(j.tasks) },
    { title: 'Status', cell: (j) => badge(j.state) },
  ], jobs, { empty: 'No jobs.', rowAttrs: (j) => `class="job-row" data-job-id="${esc(j.jid)}" data-job-name="${esc(j.name)}" data-state="${esc(j.state)}"` });
}

function taskBadges(tasks) {
  if (!tasks) return '';
  let h = '';
  for (const [k, v] of Object.entries(tasks)) {
    if (k !== 'total' && v > 0) h += `<span class="badge st-${esc(k)}" title="${esc(k)}">${esc(v)}</span>`;
  }
  return h || '<span class="muted">0</span>';
}

function isRunning(j) {
  return !['FINISHED', 'FAILED', 'CANCELED'].includes(j.state);
}

function overviewView() {
  const stats = [['taskmanagers', 'Task Managers'], ['slots-total', 'Total Slots'], ['slots-available', 'Available Slots'],
    ['jobs-running', 'Running Jobs'], ['jobs-finished', 'Finished'], ['jobs-cancelled', 'Canceled'], ['jobs-failed', 'Failed']];
  return {
    name: 'overview',
    html: `<h1>Cluster Overview</h1><div class="stats">${stats.map(([k, l]) =>
      `<div class="stat"><div class="label">${l}</div><div class="value" id="ov-${k}" data-value="">–</div></div>`).join('')}</div>
      <h2>Running Jobs</h2><div id="running-jobs"></div>
      <h2>Completed Jobs</h2><div id="completed-jobs"></div>`,
    async update() {
      const [ov, jobs] = await Promise.all([api('/overview'), api('/jobs/overview')]);
      for (const [k] of stats) setText('ov-' + k, fmtNum(ov[k]), { 'data-value': ov[k] });
      const banner = document.getElementById('banner');
      if (ov.leader === false) {
        banner.hidden = false;
        banner.innerHTML = 'This JobManager is a standby.' + (ov['leader-rest'] ?
          ` The leader's dashboard: <a href="${esc(ov['leader-rest'])}/">${esc(ov['leader-rest'])}</a>` : ' No leader is known yet.');
      } else {
        banner.hidden = true;
      }
      const list = jobs.jobs.slice().sort((a, b) => b['start-time'] - a['start-time']);
      setHTML('running-jobs', jobRows(list.filter(isRunning)));
      setHTML('completed-jobs', jobRows(list.filter((j) => !isRunning(j))));
    },
  };
}

function jobsView(running) {
  return {
    name: running ? 'running-jobs' : 'completed-jobs',
    html: `<h1>${running ? 'Running' : 'Completed'} Jobs</h1><div id="job-list"></div>`,
    async update() {
      const jobs = await api('/jobs/overview');
      const list = jobs.jobs.filter((j) => isRunning(j) === running).sort((a, b) => b['start-time'] - a['start-time']);
      setHTML('job-list', jobRows(list));
    },
  };
}

document.addEventListener('click', (ev) => {
  const row = ev.target.closest('tr[data-href]');
  if (row && !ev.target.closest('a, button, input')) location.hash = row.dataset.href;
});

// ---------- job page ----------

function jobHeader(id, tab) {
  const tabs = [['overview', 'Overview'], ['exceptions', 'Exceptions'], ['checkpoints', 'Checkpoints'], ['config', 'Configuration']];
  return `<div class="card">
    <div class="job-head">
      <h1 id="job-name">…</h1>
      <span id="job-state"></span>
      <span class="kv">ID <b class="mono" id="job-id">${esc(id)}</b></span>
      <span class="kv">Start <b id="job-start">–</b></span>
      <span class="kv">Duration <b id="job-duration">–</b></span>
      <span class="kv">Attempt <b id="job-attempt">–</b></span>
      <span class="kv">Checkpoints <b id="checkpoint-count" data-count="0">–</b></span>
    </div>
    <div class="actions" id="job-actions">
      <input type="text" id="savepoint-dir" placeholder="savepoint target directory, e.g. /tmp/savepoints">
      <button id="savepoint-btn" type="button">Trigger Savepoint</button>
      <button id="stop-btn" type="button" class="secondary">Stop with Savepoint</button>
      <button id="cancel-btn" type="button" class="danger">Cancel Job</button>
      <span id="action-status" class="status" data-state=""></span>
    </div>
    <div id="job-waiting" class="muted"></div>
  </div>
  <div class="tabs">${tabs.map(([t, l]) => `<a href="#/job/${esc(id)}/${t}" data-tab="${t}" class="${t === tab ? 'active' : ''}">${l}</a>`).join('')}</div>`;
}

// updateJobHeader shows GET /jobs/{id}, which every job tab reads.
function updateJobHeader(d) {
  setText('job-name', d.name || d.jid);
  setHTML('job-state', badge(d.state));
  document.getElementById('job-state').dataset.state = d.state;
  setText('job-start', fmtTime(d['start-time']));
  setText('job-duration', fmtDuration(d.duration));
  setText('job-attempt', d.attempt);
  const n = d.checkpoints ? d.checkpoints.completed : 0;
  setText('checkpoint-count', fmtNum(n), { 'data-count': n });
  setText('job-waiting', d.waiting || (d.error ? 'Error: ' + d.error : ''));
  const live = d.state === 'RUNNING';
  for (const b of ['savepoint-btn', 'stop-btn']) document.getElementById(b).disabled = !live;
  document.getElementById('cancel-btn').disabled = ['FINISHED', 'FAILED', 'CANCELED'].includes(d.state);
}

function mountJobActions(id) {
  const status = (text, st) => setText('action-status', text, { 'data-state': st });
  const dir = () => document.getElementById('savepoint-dir').value.trim();
  const savepoint = async (stop) => {
    if (!dir()) { status('Enter a target directory for the savepoint.', 'failed'); return; }
    status(stop ? 'Stopping with a savepoint…' : 'Savepoint in progress…', 'in-progress');
    try {
      const t = stop ? await api(`/jobs/${id}/stop`, { method: 'POST', json: { targetDirectory: dir(), drain: false } })
        : await api(`/jobs/${id}/savepoints`, { method: 'POST', json: { 'target-directory': dir(), 'cancel-job': false } });
      const trigger = t['request-id'];
      document.getElementById('action-status').dataset.trigger = trigger;
      for (;;) {
        await new Promise((r) => setTimeout(r, 300));
        const s = await api(`/jobs/${id}/savepoints/${trigger}`);
        if (s.status.id !== 'COMPLETED') continue;
        const op = s.operation || {};
        if (op['failure-cause']) {
          status('Savepoint failed: ' + (typeof op['failure-cause'] === 'string' ? op['failure-cause'] : JSON.stringify(op['failure-cause'])), 'failed');
        } else {
          status('Savepoint completed: ' + op.location, 'completed');
          document.getElementById('action-status').dataset.location = op.location || '';
        }
        return;
      }
    } catch (e) {
      status((stop ? 'Stop' : 'Savepoint') + ' failed: ' + e.message, 'failed');
    }
  };
  document.getElementById('savepoint-btn').addEventListener('click', () => savepoint(false));
  document.getElementById('stop-btn').addEventListener('click', () => savepoint(true));
  document.getElementById('cancel-btn').addEventListener('click', async () => {
    if (!window.weirNoConfirm && !confirm('Cancel job ' + id + '?')) return;
    try {
      await api(`/jobs/${id}?mode=cancel`, { method: 'PATCH' });
      status('Cancellation requested.', 'completed');
    } catch (e) {
      status('Cancel failed: ' + e.message, 'failed');
    }
  });
}

// rates turns the records counters of GET /jobs/{id} into records per
// second since the previous look.
function rates(jid, d) {
  const now = performance.now();
  const out = {};
  for (const v of d.vertices || []) {
    const m = v.metrics || {};
    const key = jid + '/' + v.id;
    const cur = { t: now, r: m['read-records'] || 0, w: m['write-records'] || 0, attempt: d.attempt };
    const prev = state.samples[key];
    if (prev && prev.attempt === cur.attempt && now - prev.t >= 200) {
      const dt = (now - prev.t) / 1000;
      out[v.id] = { in: Math.max(0, cur.r - prev.r) / dt, out: Math.max(0, cur.w - prev.w) / dt };
      state.samples[key] = cur;
      state.samples[key].rates = out[v.id];
    } else if (prev && now - prev.t < 200) {
      out[v.id] = prev.rates;
    } else {
      state.samples[key] = cur;
    }
  }
  return out;
}

// layout places the plan's nodes in layers: a node's layer is the
// longest path to it from a source.
function layout(nodes) {
  const byID = new Map(nodes.map((n) => [n.id, n]));
  const layer = new Map();
  const depth = (n, seen) => {
    if (layer.has(n.id)) return layer.get(n.id);
    if (seen.has(n.id)) return 0;
    seen.add(n.id);
    let l = 0;
    for (const i of n.inputs || []) {
      const src = byID.get(i.id);
      if (src) l = Math.max(l, depth(src, seen) + 1);
    }
    layer.set(n.id, l);
    return l;
  };
  for (const n of nodes) depth(n, new Set());
  const layers = [];
  for (const n of nodes) (layers[layer.get(n.id)] = layers[layer.get(n.id)] || []).push(n);
  const W = 250, H = 118, GX = 80, GY = 26, PAD = 20;
  const pos = new Map();
  const tallest = Math.max(...layers.map((l) => l.length));
  layers.forEach((l, x) => {
    const off = ((tallest - l.length) * (H + GY)) / 2;
    l.forEach((n, y) => pos.set(n.id, { x: PAD + x * (W + GX), y: PAD + off + y * (H + GY) }));
  });
  return { pos, W, H, width: PAD * 2 + layers.length * (W + GX) - GX, height: PAD * 2 + tallest * (H + GY) - GY };
}

const SVG = 'http://www.w3.org/2000/svg';

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function short(s, n) {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// drawDAG draws the job graph of GET /jobs/{id}/plan as SVG.
function drawDAG(container, jid, plan) {
  const nodes = plan.nodes || [];
  const L = layout(nodes);
  const svg = svgEl('svg', { class: 'dag', id: 'job-dag', width: L.width, height: L.height, 'data-vertices': nodes.length });
  for (const n of nodes) {
    const to = L.pos.get(n.id);
    for (const i of n.inputs || []) {
      const from = L.pos.get(i.id);
      if (!from) continue;
      const x1 = from.x + L.W, y1 = from.y + L.H / 2, x2 = to.x, y2 = to.y + L.H / 2, mx = (x1 + x2) / 2;
      svg.appendChild(svgEl('path', { class: 'edge', d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2 - 6},${y2}`, 'marker-end': 'url(#arrow)', 'data-from': i.id, 'data-to': n.id }));
      svg.appendChild(svgEl('text', { class: 'edge-label', x: mx, y: (y1 + y2) / 2 - 4, 'text-anchor': 'middle' }, i.ship_strategy || ''));
    }
  }
  const defs = svgEl('defs');
  const marker = svgEl('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 4, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' });
  marker.appendChild(svgEl('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#9aa5b1' }));
  defs.appendChild(marker);
  svg.prepend(defs);
  for (const n of nodes) {
    const p = L.pos.get(n.id);
    const name = n.operator || n.id;
    const g = svgEl('g', { class: 'dag-vertex', id: 'vertex-' + n.id, transform: `translate(${p.x},${p.y})`,
      'data-vertex-id': n.id, 'data-name': name, 'data-parallelism': n.parallelism, 'data-backpressure': 'unknown',
      'data-rate-in': '', 'data-rate-out': '', 'data-busy': '', 'data-backpressured': '' });
    g.appendChild(svgEl('title', {}, name + '\n' + (n.description || '').replace(/<br\/>/g, '\n').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')));
    g.appendChild(svgEl('rect', { class: 'box', width: L.W, height: L.H, rx: 4 }));
    g.appendChild(svgEl('rect', { class: 'bp', width: 6, height: L.H, rx: 2 }));
    g.appendChild(svgEl('text', { class: 'v-name', x: 14, y: 20 }, short(name, 34)));
    g.appendChild(svgEl('text', { class: 'v-small v-par', x: 14, y: 40 }, 'Parallelism: ' + n.parallelism));
    g.appendChild(svgEl('text', { class: 'v-small v-in', x: 14, y: 58 }, 'In: –'));
    g.appendChild(svgEl('text', { class: 'v-small v-out', x: 14, y: 75 }, 'Out: –'));
    g.appendChild(svgEl('text', { class: 'v-small v-bp', x: 14, y: 92 }, 'Backpressure: –'));
    g.appendChild(svgEl('text', { class: 'v-small v-busy', x: 14, y: 109 }, 'Busy (max): –'));
    g.addEventListener('click', () => { location.hash = `#/job/${jid}/vertex/${encodeURIComponent(n.id)}`; });
    svg.appendChild(g);
  }
  container.replaceChildren(svg);
}

function planKey(plan) {
  return (plan.nodes || []).map((n) => n.id + ':' + n.parallelism + ':' + (n.inputs || []).map((i) => i.id).join(',')).join(';');
}

// level is a backpressure answer's level: Flink 1.x writes it as
// backpressure-level, later versions as backpressureLevel.
function level(bp) {
  return bp.backpressureLevel || bp['backpressure-level'] || 'unknown';
}

// maxRatio is the highest of a ratio (ratio, busyRatio, idleRatio) over a
// backpressure answer's subtasks, as Flink's graph shows "Busy (max)"
// and "Backpressured (max)"; undefined where no subtask has it.
function maxRatio(bp, key) {
  const xs = ((bp && bp.subtasks) || []).map((s) => s[key]).filter((x) => typeof x === 'number');
  return xs.length ? Math.max(...xs) : undefined;
}

function pct(x) {
  return x === undefined || x === null ? '–' : Math.round(x * 100) + '%';
}

async function backpressure(jid, vertices) {
  const out = {};
  await Promise.all(vertices.map(async (v) => {
    const bp = await optional('backpressure', jid, `/jobs/${jid}/vertices/${encodeURIComponent(v.id)}/backpressure`).catch(() => null);
    if (bp) out[v.id] = bp;
  }));
  return out;
}

function jobView(id, tab) {
  const bodies = {
    overview: `<div class="dag-wrap"><div id="dag-container"></div>
      <div class="legend">Backpressure<span class="sw ok"></span>OK<span class="sw low"></span>low<span class="sw high"></span>high<span class="sw unknown"></span>not measured</div></div>
      <div id="vertex-list"></div>`,
    exceptions: `<h2>Root Exception</h2><div id="root-exception"></div><h2>Exception History</h2><div id="exception-history"></div>`,
    checkpoints: `<div class="stats" id="chk-counts"></div><div class="grid2"><div><h2>Latest</h2><div id="chk-latest"></div></div>
      <div><h2>Configuration</h2><div id="checkpoint-config"></div></div></div>
      <h2>History</h2><div id="checkpoint-history"></div><h2>Summary</h2><div id="checkpoint-summary"></div>`,
    config: `<h2>Execution Configuration</h2><div id="job-config"></div><h2>User Configuration</h2><div id="job-user-config"></div>`,
  };
  let planShown = '';
  let plan = null;
  let planAsked = 0;
  // Expanded checkpoint rows, by ID: the details of
  // GET /jobs/{id}/checkpoints/details/{cid} once fetched, else null.
  const expanded = new Map();
  return {
    name: 'job-' + tab,
    html: jobHeader(id, tab) + `<div id="job-tab" data-tab="${tab}">${bodies[tab]}</div>`,
    mount() {
      mountJobActions(id);
      if (tab === 'checkpoints') {
        document.getElementById('checkpoint-history').addEventListener('click', (ev) => {
          // A vertex row of an expanded checkpoint: its subtasks.
          const vrow = ev.target.closest('tr[data-task-vertex]');
          if (vrow) {
            const e = expanded.get(vrow.closest('[data-checkpoint-details]').dataset.checkpointDetails);
            if (e) toggleCheckpointVertex(id, e, vrow.dataset.taskVertex);
            return;
          }
          const row = ev.target.closest('tr.checkpoint-row[data-checkpoint-id]');
          if (!row) return;
          const c = row.dataset.checkpointId;
          if (expanded.has(c)) {
            expanded.delete(c);
          } else {
            const e = { cid: c, det: undefined, vertex: null, subtasks: {} };
            expanded.set(c, e);
            checkpointFetch(`/jobs/${id}/checkpoints/details/${encodeURIComponent(c)}`)
              .then((det) => { e.det = det; refresh(); });
          }
          refresh();
        });
      }
    },
    async update() {
      const d = await api('/jobs/' + id);
      updateJobHeader(d);
      if (tab === 'overview') {
        if (!plan || Date.now() - planAsked > 10000 || (d.vertices || []).some((v) => !(plan.nodes || []).find((n) => n.id === v.id && n.parallelism === v.parallelism))) {
          plan = (await api(`/jobs/${id}/plan`)).plan;
          planAsked = Date.now();
        }
        const key = planKey(plan);
        if (key !== planShown) {
          drawDAG(document.getElementById('dag-container'), id, plan);
          planShown = key;
        }
        const r = rates(id, d);
        const running = d.state === 'RUNNING';
        const bp = running ? await backpressure(id, d.vertices || []) : {};
        for (const v of d.vertices || []) {
          const g = document.getElementById('vertex-' + v.id);
          if (!g) continue;
          const rv = r[v.id];
          if (rv) {
            g.dataset.rateIn = rv.in.toFixed(2);
            g.dataset.rateOut = rv.out.toFixed(2);
            g.querySelector('.v-in').textContent = 'In: ' + fmtRate(rv.in) + '  (' + fmtNum((v.metrics || {})['read-records']) + ')';
            g.querySelector('.v-out').textContent = 'Out: ' + fmtRate(rv.out) + '  (' + fmtNum((v.metrics || {})['write-records']) + ')';
          }
          const lv = bp[v.id] ? level(bp[v.id]) : 'unknown';
          const busy = maxRatio(bp[v.id], 'busyRatio'), bpr = maxRatio(bp[v.id], 'ratio');
          g.dataset.backpressure = lv;
          g.dataset.busy = busy === undefined ? '' : Math.round(busy * 100);
          g.dataset.backpressured = bpr === undefined ? '' : Math.round(bpr * 100);
          g.querySelector('.v-bp').textContent = 'Backpressure: ' + (bp[v.id] ? lv.toUpperCase() + (bpr === undefined ? '' : ` (max ${pct(bpr)})`) : '–');
          g.querySelector('.v-busy').textContent = 'Busy (max): ' + pct(busy);
        }
        setHTML('vertex-list', table('vertex-table', [
          { title: 'Name', cell: (v) => `<a href="#/job/${esc(id)}/vertex/${encodeURIComponent(v.id)}">${esc(v.name)}</a>` },
          { title: 'Status', cell: (v) => (v.status ? badge(v.status) : '') },
          { title: 'Parallelism', cls: 'num', cell: (v) => esc(v.parallelism) },
          { title: 'Records In', cls: 'num', cell: (v) => fmtNum((v.metrics || {})['read-records']) },
          { title: 'In/s', cls: 'num', cell: (v) => (r[v.id] ? fmtRate(r[v.id].in) : '–') },
          { title: 'Records Out', cls: 'num', cell: (v) => fmtNum((v.metrics || {})['write-records']) },
          { title: 'Out/s', cls: 'num', cell: (v) => (r[v.id] ? fmtRate(r[v.id].out) : '–') },
          { title: 'Bytes In', cls: 'num', cell: (v) => fmtBytes((v.metrics || {})['read-bytes']) },
          { title: 'Bytes Out', cls: 'num', cell: (v) => fmtBytes((v.metrics || {})['write-bytes']) },
          { title: 'Backpressure', cell: (v) => (bp[v.id] ? `<span class="bp-${esc(level(bp[v.id]))}">${esc(level(bp[v.id]))}</span>` : '–') },
          { title: 'Backpressured (max)', cls: 'num', cell: (v) => pct(maxRatio(bp[v.id], 'ratio')) },
          { title: 'Busy (max)', cls: 'num', cell: (v) => pct(maxRatio(bp[v.id], 'busyRatio')) },
          { title: 'Tasks', cell: (v) => taskBadges(v.tasks) },
        ], d.vertices || [], { rowAttrs: (v) => `class="clickable" data-vertex-id="${esc(v.id)}" data-href="#/job/${esc(id)}/vertex/${encodeURIComponent(v.id)}"` }));
      } else if (tab === 'exceptions') {
        const ex = await api(`/jobs/${id}/exceptions`);
        setHTML('root-exception', ex['root-exception'] ? `<pre id="root-exception-text">${esc(ex['root-exception'])}</pre>` : '<p class="muted">No failure.</p>');
        const entries = (ex.exceptionHistory && ex.exceptionHistory.entries) || [];
        setHTML('exception-history', table('exception-table', [
          { title: 'Time', cell: (e) => fmtTime(e.timestamp) },
          { title: 'Exception', cell: (e) => esc(e.exceptionName) },
          { title: 'Task', cell: (e) => esc(e.taskName || '') },
          { title: 'Location', cell: (e) => esc(e.location || '') },
          { title: 'Message', cell: (e) => `<pre>${esc(e.stacktrace)}</pre>` },
        ], entries, { empty: 'No exceptions.', rowAttrs: () => 'class="exception-row"' }) +
          (ex.exceptionHistory && ex.exceptionHistory.truncated ? '<p class="muted">Older exceptions were dropped.</p>' : ''));
      } else if (tab === 'checkpoints') {
        const [c, cfg] = await Promise.all([api(`/jobs/${id}/checkpoints`),
          api(`/jobs/${id}/checkpoints/config`).catch((e) => ({ error: e.message }))]);
        const counts = c.counts || {};
        setHTML('chk-counts', ['completed', 'in_progress', 'failed', 'restored', 'total'].filter((k) => k in counts).map((k) =>
          `<div class="stat"><div class="label">${esc(k.replace('_', ' '))}</div><div class="value" id="chk-${k}" data-value="${esc(counts[k])}">${fmtNum(counts[k])}</div></div>`).join(''));
        const latest = c.latest || {};
        const lrows = [];
        const ref = (c, text) => (c.id !== undefined ? `#${esc(c.id)} ` : '') + `<span class="mono">${esc(text || '')}</span>`;
        if (latest.completed) lrows.push(['Completed', ref(latest.completed, latest.completed.external_path)]);
        if (latest.savepoint) lrows.push(['Savepoint', ref(latest.savepoint, latest.savepoint.external_path)]);
        if (latest.failed) lrows.push(['Failed', ref(latest.failed, latest.failed.failure_message)]);
        if (latest.restored) lrows.push(['Restored', ref(latest.restored, latest.restored.external_path)]);
        setHTML('chk-latest', table('checkpoint-latest', [{ title: '', cell: (r) => r[0] }, { title: '', cell: (r) => r[1] }], lrows, { empty: 'No checkpoint yet.' }));
        if (cfg.error) {
          setHTML('checkpoint-config', `<p class="muted">${esc(cfg.error)}</p>`);
        } else {
          setHTML('checkpoint-config', table('checkpoint-config-table', [{ title: 'Option', cell: (r) => esc(r[1]) }, { title: 'Value', cell: (r) => esc(r[2]) }],
            checkpointConfigRows(cfg), { rowAttrs: (r) => `class="checkpoint-config-row" data-option="${esc(r[0])}"` }));
        }
        const hist = c.history || [];
        setHTML('checkpoint-history', hist.length || !('history' in c) && !counts.completed ? table('checkpoint-history-table', [
          { title: 'ID', cell: (h) => esc(h.id) },
          { title: 'Status', cell: (h) => badge(h.status) + (h.failure_message ? `<div class="chk-failure error">${esc(h.failure_message)}</div>` : '') },
          { title: 'Type', cell: (h) => (h.is_savepoint || h.checkpoint_type === 'SAVEPOINT' ? '<span class="badge chk-savepoint">SAVEPOINT</span>' : esc((h.checkpoint_type || 'checkpoint').toLowerCase())) },
          { title: 'Trigger Time', cell: (h) => fmtTime(h.trigger_timestamp) },
          { title: 'Latest Ack', cell: (h) => fmtTime(h.latest_ack_timestamp) },
          { title: 'End to End', cls: 'num', cell: (h) => fmtDuration(h.end_to_end_duration) },
          { title: 'Checkpointed Size', cls: 'num', cell: (h) => fmtBytes(h.checkpointed_size) },
          { title: 'Full Size', cls: 'num', cell: (h) => fmtBytes(h.state_size) },
          { title: 'Acknowledged', cls: 'num', cell: (h) => `${esc(h.num_acknowledged_subtasks ?? '–')}/${esc(h.num_subtasks ?? '–')}` },
        ], hist, {
          empty: 'No checkpoint yet.',
          rowAttrs: (h) => `class="clickable checkpoint-row" data-checkpoint-id="${esc(h.id)}" data-status="${esc(h.status)}" data-savepoint="${h.is_savepoint ? 'true' : 'false'}"`,
          after: (h) => expanded.has(String(h.id)) ? `<tr class="checkpoint-details" data-checkpoint-details="${esc(h.id)}"><td colspan="9">${checkpointDetailsHTML(h, expanded.get(String(h.id)), d.vertices || [])}</td></tr>` : '',
        }) : `<p class="muted">${esc(fmtNum(counts.completed))} completed; this JobManager keeps no per-checkpoint history.</p>`);
        const sum = c.summary || {};
        const srows = Object.entries(sum).filter(([, v]) => v && typeof v === 'object');
        setHTML('checkpoint-summary', table('checkpoint-summary-table', [
          { title: '', cell: (r) => esc(r[0].replace(/_/g, ' ')) },
          { title: 'Min', cls: 'num', cell: (r) => summaryCell(r[0], r[1].min) },
          { title: 'Avg', cls: 'num', cell: (r) => summaryCell(r[0], r[1].avg) },
          { title: 'Max', cls: 'num', cell: (r) => summaryCell(r[0], r[1].max) },
        ], srows, { empty: 'No summary.' }));
      } else if (tab === 'config') {
        const c = await api(`/jobs/${id}/config`);
        const ec = c['execution-config'] || {};
        const rows = Object.entries(ec).filter(([k]) => k !== 'user-config');
        setHTML('job-config', table('job-config-table', [{ title: 'Option', cell: (r) => esc(r[0]) }, { title: 'Value', cell: (r) => esc(r[1]) }], rows));
        setHTML('job-user-config', table('job-user-config-table', [{ title: 'Key', cell: (r) => esc(r[0]) }, { title: 'Value', cell: (r) => esc(r[1]) }],
          Object.entries(ec['user-config'] || {}).sort(), { empty: 'The job sets no options.' }));
      }
    },
  };
}

// checkpointConfigRows lists a job's checkpoint configuration (Flink's
// CheckpointConfigInfo) as Flink's dashboard labels it: [field, label,
// value]; fields it does not know come last under their own names.
function checkpointConfigRows(cfg) {
  const onOff = (v) => (v ? 'Enabled' : 'Disabled');
  const ext = (e) => (!e || !e.enabled ? 'Disabled' : `Enabled (${e.delete_on_cancellation ? 'delete' : 'retain'} on cancellation)`);
  const known = [
    ['mode', 'Checkpointing Mode', (v) => (v === 'exactly_once' ? 'Exactly Once' : 'At Least Once')],
    ['checkpoint_storage', 'Checkpoint Storage', String],
    ['state_backend', 'State Backend', String],
    ['interval', 'Interval', fmtDuration],
    ['timeout', 'Timeout', fmtDuration],
    ['min_pause', 'Minimum Pause Between Checkpoints', fmtDuration],
    ['max_concurrent', 'Maximum Concurrent Checkpoints', String],
    ['unaligned_checkpoints', 'Unaligned Checkpoints', onOff],
    ['aligned_checkpoint_timeout', 'Aligned Checkpoint Timeout', fmtDuration],
    ['externalization', 'Persist Checkpoints Externally', ext],
    ['tolerable_failed_checkpoints', 'Tolerable Failed Checkpoints', String],
    ['checkpoints_after_tasks_finish', 'Checkpoints With Finished Tasks', onOff],
    ['state_changelog_enabled', 'Changelog State Backend', onOff],
    ['changelog_storage', 'Changelog Storage', String],
    ['changelog_periodic_materialization_interval', 'Changelog Periodic Materialization Interval', fmtDuration],
  ];
  const rows = known.filter(([k]) => k in cfg).map(([k, label, f]) => [k, label, f(cfg[k])]);
  for (const [k, v] of Object.entries(cfg)) {
    if (!known.some(([n]) => n === k)) rows.push([k, k, typeof v === 'object' ? JSON.stringify(v) : String(v)]);
  }
  return rows;
}

// checkpointFetch asks for a checkpoint's or a vertex's details: a 404
// (not in the history, or reported without subtask details) answers
// {missing: message}, any other failure {error: message}.
async function checkpointFetch(path) {
  try {
    return await api(path);
  } catch (e) {
    return e.status === 404 ? { missing: e.message } : { error: e.message };
  }
}

// toggleCheckpointVertex opens (fetching its subtasks) or closes a vertex
// of an expanded checkpoint.
function toggleCheckpointVertex(jid, e, vid) {
  if (e.vertex === vid) {
    e.vertex = null;
  } else {
    e.vertex = vid;
    if (!e.subtasks[vid] || e.subtasks[vid].error) {
      e.subtasks[vid] = null;
      checkpointFetch(`/jobs/${jid}/checkpoints/details/${encodeURIComponent(e.cid)}/subtasks/${encodeURIComponent(vid)}`)
        .then((sd) => { e.subtasks[vid] = sd; refresh(); });
    }
  }
  refresh();
}

// checkpointDetailsHTML is an expanded checkpoint of the history: its
// failure, then its vertices' parts (Flink's CheckpointStatistics.tasks),
// one of them opened on its subtasks.
function checkpointDetailsHTML(h, e, vertices) {
  let out = '';
  if (h.status === 'FAILED') {
    out += `<p class="chk-failure-detail"><span class="badge st-FAILED">FAILED</span> ${fmtTime(h.failure_timestamp)}: <span class="error">${esc(h.failure_message || 'no message')}</span></p>`;
  }
  if (h.is_savepoint) out += `<p><span class="badge chk-savepoint">SAVEPOINT</span> <span class="mono">${esc(h.external_path || '')}</span></p>`;
  const det = e.det;
  if (det === undefined) return out + '<p class="muted">Loading…</p>';
  if (det.missing) return out + `<p class="muted chk-no-details">No details: ${esc(det.missing)}</p>`;
  if (det.error) return out + `<p class="error">Could not load the details: ${esc(det.error)}</p>`;
  const tasks = det.tasks || {};
  const names = new Map(vertices.map((v) => [v.id, v.name]));
  // The job's order of vertices, then any other the details name.
  const ids = vertices.map((v) => v.id).filter((v) => v in tasks).concat(Object.keys(tasks).filter((v) => !names.has(v)));
  if (!ids.length) return out + '<p class="muted chk-no-details">No per-vertex details were reported for this checkpoint.</p>';
  const rows = ids.map((vid) => ({ vid, name: names.get(vid) || vid, t: tasks[vid] || {} }));
  out += table(`checkpoint-tasks-${h.id}`, [
    { title: 'Vertex', cell: (r) => `<span class="chk-open">${e.vertex === r.vid ? '▾' : '▸'}</span> ${esc(r.name)}` },
    { title: 'Status', cell: (r) => (r.t.status ? badge(r.t.status) : '–') },
    { title: 'Acknowledged', cls: 'num', cell: (r) => `<span class="chk-acked">${esc(r.t.num_acknowledged_subtasks ?? '–')}/${esc(r.t.num_subtasks ?? '–')}</span>` },
    { title: 'Latest Ack', cell: (r) => fmtTime(r.t.latest_ack_timestamp) },
    { title: 'End to End', cls: 'num', cell: (r) => fmtDuration(r.t.end_to_end_duration) },
    { title: 'Checkpointed Size', cls: 'num', cell: (r) => fmtBytes(r.t.checkpointed_size) },
    { title: 'Full Size', cls: 'num', cell: (r) => fmtBytes(r.t.state_size) },
    { title: 'Processed', cls: 'num', cell: (r) => fmtBytes(r.t.processed_data) },
    { title: 'Persisted', cls: 'num', cell: (r) => fmtBytes(r.t.persisted_data) },
  ], rows, {
    rowAttrs: (r) => `class="clickable checkpoint-task-row${e.vertex === r.vid ? ' open' : ''}" data-task-vertex="${esc(r.vid)}"` +
      ` data-acknowledged="${esc(r.t.num_acknowledged_subtasks ?? '')}" data-subtasks="${esc(r.t.num_subtasks ?? '')}"`,
    after: (r) => (e.vertex === r.vid ? `<tr class="checkpoint-subtasks" data-subtasks-of="${esc(r.vid)}"><td colspan="9">${checkpointSubtasksHTML(h.id, r.vid, e.subtasks[r.vid])}</td></tr>` : ''),
  });
  return out;
}

// checkpointSubtasksHTML is one vertex's part in a checkpoint (Flink's
// TaskCheckpointStatisticsWithSubtaskDetails): min, average and max over
// its subtasks, and each subtask.
function checkpointSubtasksHTML(cid, vid, sd) {
  if (sd === null || sd === undefined) return '<p class="muted">Loading…</p>';
  if (sd.missing) return `<p class="muted chk-no-details">No subtask details: ${esc(sd.missing)}</p>`;
  if (sd.error) return `<p class="error">Could not load the subtasks: ${esc(sd.error)}</p>`;
  const sm = sd.summary || {};
  const cd = sm.checkpoint_duration || {}, al = sm.alignment || {};
  const srows = [
    ['End to end duration', sm.end_to_end_duration, fmtDuration],
    ['Sync duration', cd.sync, fmtDuration],
    ['Async duration', cd.async, fmtDuration],
    ['Alignment duration', al.duration, fmtDuration],
    ['Start delay', sm.start_delay, fmtDuration],
    ['Checkpointed size', sm.checkpointed_size, fmtBytes],
    ['Full size', sm.state_size, fmtBytes],
    ['Processed (alignment)', al.processed, fmtBytes],
    ['Persisted (alignment)', al.persisted, fmtBytes],
  ].filter((r) => r[1]);
  const ms = (v, f) => (v === undefined || v === null ? '–' : f(v));
  const sub = (s, f) => (s.status === 'completed' ? f(s) : '–');
  return `<div class="chk-subtasks">` + table(`checkpoint-subtask-summary-${cid}`, [
    { title: 'Over subtasks', cell: (r) => esc(r[0]) },
    { title: 'Min', cls: 'num', cell: (r) => ms(r[1].min, r[2]) },
    { title: 'Average', cls: 'num', cell: (r) => ms(r[1].avg, r[2]) },
    { title: 'Max', cls: 'num', cell: (r) => ms(r[1].max, r[2]) },
  ], srows, { empty: 'No summary.' }) + table(`checkpoint-subtask-table-${cid}`, [
    { title: '#', cls: 'num', cell: (s) => esc(s.index) },
    { title: 'Status', cell: (s) => `<span class="chk-subtask-${esc(s.status)}">${esc(s.status === 'completed' ? 'completed' : 'pending or failed')}</span>` },
    { title: 'Ack Time', cell: (s) => `<span class="chk-ack">${s.ack_timestamp ? esc(fmtTime(s.ack_timestamp)) : '–'}</span>` },
    { title: 'End to End', cls: 'num', cell: (s) => sub(s, (x) => fmtDuration(x.end_to_end_duration)) },
    { title: 'Sync', cls: 'num', cell: (s) => sub(s, (x) => fmtDuration((x.checkpoint || {}).sync)) },
    { title: 'Async', cls: 'num', cell: (s) => sub(s, (x) => fmtDuration((x.checkpoint || {}).async)) },
    { title: 'Alignment', cls: 'num', cell: (s) => sub(s, (x) => fmtDuration((x.alignment || {}).duration)) },
    { title: 'Start Delay', cls: 'num', cell: (s) => sub(s, (x) => fmtDuration(x.start_delay)) },
    { title: 'Checkpointed Size', cls: 'num', cell: (s) => sub(s, (x) => fmtBytes(x.checkpointed_size)) },
    { title: 'Full Size', cls: 'num', cell: (s) => sub(s, (x) => fmtBytes(x.state_size)) },
    { title: 'Unaligned', cell: (s) => sub(s, (x) => (x.unaligned_checkpoint ? 'yes' : 'no')) },
  ], sd.subtasks || [], {
    empty: 'No subtask.',
    rowAttrs: (s) => `class="checkpoint-subtask-row" data-index="${esc(s.index)}" data-status="${esc(s.status)}" data-ack="${esc(s.ack_timestamp || '')}"` +
      (s.status === 'completed' ? '' : ' data-pending="true"'),
  }) + '</div>';
}

function summaryCell(kind, v) {
  if (v === undefined || v === null) return '–';
  return /duration/.test(kind) ? fmtDuration(v) : (/size|data|buffered/.test(kind) ? fmtBytes(v) : fmtNum(v));
}

// ---------- vertex page ----------

function vertexView(jid, vid) {
  const v = encodeURIComponent(vid);
  return {
    name: 'vertex',
    html: jobHeader(jid, '') + `<h1 id="vertex-name" data-vertex-id="${esc(vid)}">Vertex ${esc(vid)}</h1>
      <h2>Subtasks</h2><div id="subtask-list"></div>
      <div class="grid2"><div><h2>Backpressure</h2><div id="backpressure-list"></div></div>
      <div><h2>Watermarks</h2><div id="watermark-list"></div></div></div>
      <h2>State and Operator Metrics</h2><div id="operator-metrics"></div>
      <h2>Flame Graph</h2>
      <div class="card" id="flame-card">
        <div class="actions">
          <label for="flame-seconds">CPU samples of this vertex for</label>
          <select id="flame-seconds">${[1, 2, 5, 10, 20].map((n) => `<option value="${n}"${n === 5 ? ' selected' : ''}>${n} s</option>`).join('')}</select>
          <button type="button" id="flame-btn">Sample</button>
          <button type="button" id="flame-reset" class="secondary" disabled>Reset zoom</button>
          <span id="flame-status" class="status" data-state=""></span>
        </div>
        <div id="flame-graph"></div>
      </div>`,
    mount() {
      mountJobActions(jid);
      mountFlameGraph(jid, vid);
    },
    async update() {
      const d = await api('/jobs/' + jid);
      updateJobHeader(d);
      const jv = (d.vertices || []).find((x) => x.id === vid) || {};
      setText('vertex-name', (jv.name || vid) + (jv.parallelism ? `  (parallelism ${jv.parallelism})` : ''));
      const [det, bp, wm] = await Promise.all([
        optional('vertex', jid, `/jobs/${jid}/vertices/${v}`).catch(() => null),
        optional('backpressure', jid, `/jobs/${jid}/vertices/${v}/backpressure`).catch(() => null),
        optional('watermarks', jid, `/jobs/${jid}/vertices/${v}/watermarks`).catch(() => null),
      ]);
      // Flink's JobVertexDetailsInfo, or weir's subtasks of GET /jobs/{id}.
      const subtasks = det ? det.subtasks || [] : (jv.subtasks || []).map((s) => ({ subtask: s.subtask, attempt: s.attempt, endpoint: s.host, 'taskmanager-id': s.taskmanager }));
      const m = (s, k) => (s.metrics || {})[k];
      setHTML('subtask-list', table('subtask-table', [
        { title: '#', cls: 'num', cell: (s) => esc(s.subtask) },
        { title: 'Status', cell: (s) => (s.status ? badge(s.status) : '–') },
        { title: 'Attempt', cls: 'num', cell: (s) => esc(s.attempt) },
        { title: 'TaskManager', cell: (s) => (s['taskmanager-id'] ? `<a href="#/taskmanager/${encodeURIComponent(s['taskmanager-id'])}">${esc(s['taskmanager-id'])}</a>` : '–') },
        { title: 'Endpoint', cell: (s) => esc(s.endpoint || s.host || '–') },
        { title: 'Records In', cls: 'num', cell: (s) => fmtNum(m(s, 'read-records')) },
        { title: 'Records Out', cls: 'num', cell: (s) => fmtNum(m(s, 'write-records')) },
        { title: 'Bytes In', cls: 'num', cell: (s) => fmtBytes(m(s, 'read-bytes')) },
        { title: 'Bytes Out', cls: 'num', cell: (s) => fmtBytes(m(s, 'write-bytes')) },
        { title: 'Busy', cls: 'num', cell: (s) => fmtDuration(m(s, 'accumulated-busy-time')) },
        { title: 'Backpressured', cls: 'num', cell: (s) => fmtDuration(m(s, 'accumulated-backpressured-time')) },
        { title: 'Idle', cls: 'num', cell: (s) => fmtDuration(m(s, 'accumulated-idle-time')) },
        { title: 'Duration', cls: 'num', cell: (s) => fmtDuration(s.duration) },
      ], subtasks, { empty: 'No subtask is deployed.', rowAttrs: (s) => `data-subtask="${esc(s.subtask)}"` }));
      setHTML('backpressure-list', bp ? `<p>Level <span id="bp-level" class="bp-${esc(level(bp))}" data-level="${esc(level(bp))}">${esc(level(bp))}</span>
        <span class="muted">measured ${fmtTime(bp['end-timestamp'])}</span></p>` + table('backpressure-table', [
        { title: '#', cls: 'num', cell: (s) => esc(s.subtask) },
        { title: 'Level', cell: (s) => `<span class="bp-${esc(level(s))}">${esc(level(s))}</span>` },
        { title: 'Backpressured', cls: 'num', cell: (s) => pct(s.ratio) },
        { title: 'Idle', cls: 'num', cell: (s) => pct(s.idleRatio) },
        { title: 'Busy', cls: 'num', cell: (s) => pct(s.busyRatio) },
      ], bp.subtasks || []) : '<p class="muted">Not available from this JobManager.</p>');
      setHTML('operator-metrics', await operatorMetricsHTML(jid, vid));
      setHTML('watermark-list', wm ? table('watermark-table', [
        { title: 'Metric', cell: (w) => esc(w.id) },
        { title: 'Value', cls: 'num', cell: (w) => esc(watermark(w.value)) },
      ], wm, { empty: 'No watermark yet.' }) : '<p class="muted">Not available from this JobManager.</p>');
    },
  };
}

// operatorGauge splits a vertex metric's ID "<subtask>.<operator
// name>.<metric>" (an operator's gauge, as Flink names it in a vertex's
// metrics) into its parts; null for the vertex's own metrics
// ("<subtask>.numRecordsIn", "<subtask>.buffers.inPoolUsage"). An
// operator's name may hold dots, a metric's name does not.
function operatorGauge(id) {
  const m = /^(\d+)\.(.+)\.([^.]+)$/.exec(id);
  if (!m || m[2] === 'buffers') return null;
  return { subtask: Number(m[1]), operator: m[2], metric: m[3] };
}

function fmtGauge(metric, value) {
  return /Bytes$/.test(metric) ? fmtBytes(Number(value)) : fmtNum(value);
}

// operatorMetricsHTML lists the operator gauges of a vertex's subtasks
// (keyed state entries, Pebble's sizes, a Kafka source's pending records)
// from GET /jobs/{id}/vertices/{vid}/metrics.
async function operatorMetricsHTML(jid, vid) {
  const path = `/jobs/${jid}/vertices/${encodeURIComponent(vid)}/metrics`;
  const names = await optional('vertex-metrics', jid, path).catch(() => null);
  if (!names || !Array.isArray(names)) return '<p class="muted">Not available from this JobManager.</p>';
  const ids = names.map((n) => n.id).filter((n) => operatorGauge(n));
  let vals = [];
  if (ids.length) vals = await api(`${path}?get=${ids.map(encodeURIComponent).join(',')}`);
  const rows = vals.map((m) => ({ ...operatorGauge(m.id), id: m.id, value: m.value })).filter((r) => r.metric)
    .sort((a, b) => (a.operator < b.operator ? -1 : a.operator > b.operator ? 1 : a.metric < b.metric ? -1 : a.metric > b.metric ? 1 : a.subtask - b.subtask));
  return table('operator-metric-table', [
    { title: 'Subtask', cls: 'num', cell: (r) => esc(r.subtask) },
    { title: 'Operator', cell: (r) => esc(r.operator) },
    { title: 'Metric', cell: (r) => esc(r.metric) },
    { title: 'Value', cls: 'num', cell: (r) => fmtGauge(r.metric, r.value) },
  ], rows, {
    empty: 'No operator reports a gauge (keyed state, Pebble sizes, a Kafka source\'s pending records).',
    rowAttrs: (r) => `class="operator-metric-row" data-metric-id="${esc(r.id)}" data-value="${esc(r.value)}"`,
  });
}

// ---------- flame graph ----------

// mountFlameGraph wires the vertex page's flame graph control to Flink's
// GET /jobs/{id}/vertices/{vid}/flamegraph?seconds=N, which answers after
// sampling the vertex's CPU for N seconds.
function mountFlameGraph(jid, vid) {
  const gen = state.gen;
  const btn = document.getElementById('flame-btn');
  const reset = document.getElementById('flame-reset');
  const status = (text, st) => setText('flame-status', text, { 'data-state': st });
  let graph = null;
  btn.addEventListener('click', async () => {
    const seconds = Number(document.getElementById('flame-seconds').value);
    btn.disabled = true;
    const until = Date.now() + seconds * 1000;
    const tick = () => {
      const left = Math.ceil((until - Date.now()) / 1000);
      status(left > 0 ? `Sampling CPU for ${seconds} s… ${left} s left` : 'Sampling done; building the graph…', 'in-progress');
    };
    tick();
    const timer = setInterval(tick, 250);
    try {
      const fg = await api(`/jobs/${jid}/vertices/${encodeURIComponent(vid)}/flamegraph?seconds=${seconds}`);
      if (gen !== state.gen) return;
      graph = fg.data || { name: 'root', value: 0, children: [] };
      const total = graph.value || 0;
      status(total ? `${fmtNum(total)} samples in ${seconds} s, measured ${fmtTime(fg.endTimestamp)}. Click a frame to zoom in.`
        : `No CPU samples of this vertex in ${seconds} s: it was idle, waiting or sleeping.`, 'completed');
      document.getElementById('flame-status').dataset.samples = total;
      drawFlameGraph(document.getElementById('flame-graph'), graph, graph, reset);
    } catch (e) {
      if (gen !== state.gen) return;
      const why = e.status === 409 ? 'the job is not running' : e.status === 404 ? 'this JobManager has no such job, vertex or endpoint'
        : e.status === 401 ? 'the token is required' : '';
      status(`Flame graph failed${e.status ? ' (' + e.status + (why ? ': ' + why : '') + ')' : ''}: ${e.message}`, 'failed');
    } finally {
      clearInterval(timer);
      btn.disabled = false;
    }
  });
  reset.addEventListener('click', () => { if (graph) drawFlameGraph(document.getElementById('flame-graph'), graph, graph, reset); });
}

// flameColor is a warm colour that stays the same for a function name.
function flameColor(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return `hsl(${h % 50}, ${70 + (h >> 8) % 25}%, ${58 + (h >> 16) % 14}%)`;
}

// drawFlameGraph draws root's tree as an icicle (callers above callees)
// zoomed on focus: focus spans the width, its ancestors are full-width
// rows above it (click one to zoom out), and every frame's width is its
// share of focus's samples.
function drawFlameGraph(container, root, focus, reset) {
  const total = root.value || 0;
  if (!total) {
    container.replaceChildren();
    return;
  }
  const W = Math.max(600, container.clientWidth || 1100), RH = 18;
  const path = [];
  const find = (n) => {
    path.push(n);
    if (n === focus) return true;
    for (const c of n.children || []) if (find(c)) return true;
    path.pop();
    return false;
  };
  find(root);
  const frames = [];
  path.slice(0, -1).forEach((n, d) => frames.push({ n, x: 0, w: W, d, anc: true }));
  let depth = path.length;
  const place = (n, x, d) => {
    const w = (n.value / focus.value) * W;
    if (w < 0.5) return;
    frames.push({ n, x, w, d });
    depth = Math.max(depth, d + 1);
    let cx = x;
    for (const c of (n.children || []).slice().sort((a, b) => (a.name < b.name ? -1 : 1))) {
      place(c, cx, d + 1);
      cx += (c.value / focus.value) * W;
    }
  };
  place(focus, 0, path.length - 1);
  const svg = svgEl('svg', { id: 'flame-svg', class: 'flame', width: W, height: depth * RH, 'data-total': total, 'data-focus': focus.name });
  for (const f of frames) {
    const share = (f.n.value / total) * 100;
    const g = svgEl('g', { class: 'flame-node' + (f.anc ? ' ancestor' : ''), transform: `translate(${f.x.toFixed(2)},${f.d * RH})`,
      'data-name': f.n.name, 'data-value': f.n.value });
    g.appendChild(svgEl('title', {}, `${f.n.name}\n${fmtNum(f.n.value)} samples, ${share.toFixed(2)}% of all` +
      (focus !== root && !f.anc ? `, ${((f.n.value / focus.value) * 100).toFixed(2)}% of ${focus.name}` : '')));
    g.appendChild(svgEl('rect', { width: Math.max(0.5, f.w - 0.5).toFixed(2), height: RH - 1, fill: f.anc ? '#d5dae0' : flameColor(f.n.name) }));
    if (f.w > 36) g.appendChild(svgEl('text', { x: 3, y: RH - 5 }, short(f.n.name, Math.floor((f.w - 6) / 6.5))));
    g.addEventListener('click', () => drawFlameGraph(container, root, f.n, reset));
    svg.appendChild(g);
  }
  container.replaceChildren(svg);
  reset.disabled = focus === root;
}

// watermark shows a watermark (milliseconds) as a time where it is one.
function watermark(v) {
  const n = Number(v);
  if (!isFinite(n) || n <= -9e15) return 'No Watermark';
  if (n > 1e11 && n < 1e14) return `${v} (${fmtTime(n)})`;
  return v;
}

// ---------- TaskManagers ----------

function taskManagersView() {
  return {
    name: 'taskmanagers',
    html: '<h1>Task Managers</h1><div id="tm-list"></div>',
    async update() {
      const tms = (await api('/taskmanagers')).taskmanagers || [];
      setHTML('tm-list', table('tm-table', [
        { title: 'ID', cell: (t) => `<a href="#/taskmanager/${encodeURIComponent(t.id)}">${esc(t.id)}</a>` },
        { title: 'Address', cell: (t) => esc(t.address || t.path) },
        // -1: no data listener there (Flink's value; a weir worker listens
        // only when its job spreads over several TaskManagers).
        { title: 'Data Port', cls: 'num', cell: (t) => (t.dataPort > 0 ? esc(t.dataPort) : '–') },
        { title: 'Slots', cls: 'num', cell: (t) => esc(t.slotsNumber) },
        { title: 'Free Slots', cls: 'num', cell: (t) => esc(t.freeSlots) },
        { title: 'CPU Cores', cls: 'num', cell: (t) => esc((t.hardware || {}).cpuCores ?? '–') },
        { title: 'Physical Memory', cls: 'num', cell: (t) => fmtBytes((t.hardware || {}).physicalMemory) },
        { title: 'Registered', cell: (t) => fmtTime(t.registered) },
        { title: 'Last Heartbeat', cell: (t) => fmtTime(t.lastHeartbeat || t.timeSinceLastHeartbeat) },
      ], tms, { empty: 'No TaskManager is registered.', rowAttrs: (t) => `class="clickable tm-row" data-tm-id="${esc(t.id)}" data-href="#/taskmanager/${encodeURIComponent(t.id)}"` }));
    },
  };
}

function taskManagerView(id) {
  const enc = encodeURIComponent(id);
  return {
    name: 'taskmanager',
    html: `<h1>Task Manager <span class="mono">${esc(id)}</span></h1><div class="grid2"><div><h2>Details</h2><div id="tm-details"></div></div>
      <div><h2>Slots</h2><div id="tm-slots"></div></div></div>
      <h2>Profiles</h2>
      <div class="card" id="tm-profiles">
        <div class="actions">
          <label for="profile-job">Worker of job</label><select id="profile-job"></select>
          <label for="profile-seconds">CPU for</label>
          <select id="profile-seconds">${[5, 10, 20].map((n) => `<option value="${n}"${n === 10 ? ' selected' : ''}>${n} s</option>`).join('')}</select>
          <button type="button" data-profile="cpu">CPU profile</button>
          <button type="button" class="secondary" data-profile="heap">Heap</button>
          <button type="button" class="secondary" data-profile="allocs">Allocations</button>
          <button type="button" class="secondary" data-profile="goroutine">Goroutines</button>
          <span id="profile-status" class="status" data-state=""></span>
        </div>
        <p class="muted">Each job runs in its own worker process on the TaskManager; a profile is of that process, in pprof's format.
          Open a downloaded file with <code>go tool pprof -http=: FILE</code>.</p>
      </div>
      <h2>Metrics</h2><div id="tm-metrics"></div>`,
    mount() {
      document.getElementById('tm-profiles').addEventListener('click', async (ev) => {
        const b = ev.target.closest('button[data-profile]');
        if (!b) return;
        const kind = b.dataset.profile;
        const job = document.getElementById('profile-job').value;
        const seconds = document.getElementById('profile-seconds').value;
        const st = (text, s) => setText('profile-status', text, { 'data-state': s });
        if (!job) { st('No job runs on this TaskManager: a profile is of a job\'s worker process.', 'failed'); return; }
        let q = `type=${kind}&job=${encodeURIComponent(job)}`;
        if (kind === 'cpu') q += `&seconds=${seconds}`;
        st(kind === 'cpu' ? `Profiling the CPU for ${seconds} s…` : `Taking a ${kind} profile…`, 'in-progress');
        for (const x of document.querySelectorAll('#tm-profiles button')) x.disabled = true;
        try {
          const f = await download(`/taskmanagers/${enc}/profile?${q}`, `${kind}-${job}-${id}.pb.gz`);
          st(`Downloaded ${f.name} (${fmtBytes(f.size)}).`, 'completed');
          const el = document.getElementById('profile-status');
          el.dataset.filename = f.name;
          el.dataset.bytes = f.size;
          el.dataset.kind = kind;
        } catch (e) {
          st(`${kind} profile failed${e.status ? ' (' + e.status + ')' : ''}: ${e.message}`, 'failed');
        } finally {
          for (const x of document.querySelectorAll('#tm-profiles button')) x.disabled = false;
        }
      });
    },
    async update() {
      const t = await api('/taskmanagers/' + enc);
      const jobs = [...new Set((t.allocatedSlots || []).map((s) => s.jobId).filter(Boolean))];
      const sel = document.getElementById('profile-job');
      if (sel.dataset.jobs !== jobs.join(',')) {
        const cur = sel.value;
        sel.innerHTML = jobs.length ? jobs.map((j) => `<option value="${esc(j)}">${esc(j)}</option>`).join('') : '<option value="">no job runs here</option>';
        if (jobs.includes(cur)) sel.value = cur;
        sel.dataset.jobs = jobs.join(',');
      }
      const hw = t.hardware || {};
      setHTML('tm-details', table('tm-details-table', [{ title: '', cell: (r) => esc(r[0]) }, { title: '', cell: (r) => r[1] }], [
        ['Address', esc(t.address || t.path)], ['Slots', `${esc(t.freeSlots)} free of ${esc(t.slotsNumber)}`],
        ['CPU cores', esc(hw.cpuCores ?? '–')], ['Physical memory', fmtBytes(hw.physicalMemory)],
        ['Registered', fmtTime(t.registered)], ['Last heartbeat', fmtTime(t.timeSinceLastHeartbeat || t.lastHeartbeat)],
      ]));
      setHTML('tm-slots', table('tm-slot-table', [
        { title: 'Slot', cls: 'num', cell: (s) => esc(s.i) },
        { title: 'Job', cell: (s) => `<a href="#/job/${esc(s.jobId)}">${esc(s.jobId)}</a>` },
      ], (t.allocatedSlots || []).map((s, i) => ({ i, jobId: s.jobId })), { empty: 'All slots are free.' }));
      const names = await optional('tm-metrics', id, `/taskmanagers/${enc}/metrics`).catch(() => null);
      if (!names || !Array.isArray(names) || !names.length) {
        setHTML('tm-metrics', '<p class="muted">Not available from this JobManager.</p>');
        return;
      }
      const vals = names[0].value !== undefined ? names
        : await api(`/taskmanagers/${enc}/metrics?get=${names.map((n) => encodeURIComponent(n.id)).join(',')}`);
      setHTML('tm-metrics', table('tm-metric-table', [{ title: 'Metric', cell: (m) => esc(m.id) }, { title: 'Value', cls: 'num', cell: (m) => esc(m.value) }],
        vals.slice().sort((a, b) => (a.id < b.id ? -1 : 1))));
    },
  };
}

// download fetches path with the token, as api does, and saves the
// answer as a file (the name from Content-Disposition, else fallback)
// through an object URL: a bare link could not send the Authorization
// header. It answers the file's name and size.
async function download(path, fallback) {
  const headers = {};
  if (state.token) headers['Authorization'] = 'Bearer ' + state.token;
  const resp = await fetch(path, { headers, cache: 'no-store' });
  if (resp.status === 401) {
    askToken(state.token ? 'The token was not accepted.' : '');
    throw new APIError(401, 'the cluster requires its token');
  }
  if (!resp.ok) {
    const text = await resp.text();
    let msg = resp.status + ' ' + resp.statusText;
    try { const d = JSON.parse(text); if (d && d.errors) msg = d.errors.join('; '); } catch (e) { if (text) msg = text; }
    throw new APIError(resp.status, msg);
  }
  const blob = await resp.blob();
  const m = /filename="?([^";]+)"?/.exec(resp.headers.get('Content-Disposition') || '');
  // A TaskManager's ID has a colon (host:port-suffix), which file
  // systems and browsers do not all keep in a file name.
  const name = (m ? m[1] : fallback).replace(/[^A-Za-z0-9._-]/g, '_');
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
  return { name, size: blob.size };
}

// ---------- submit ----------

function submitView() {
  let listed = '';
  return {
    name: 'submit',
    html: `<h1>Submit New Job</h1>
      <div class="grid2">
      <form id="upload-form" class="card inline">
        <h2>1. Upload a program</h2>
        <p class="muted">A weir job program built for this cluster's platform (<code>go build</code>); it is asked for its plan with <code>--plan=json</code> on the JobManager.</p>
        <input type="file" id="jar-file" name="jarfile">
        <button type="submit" id="upload-btn">Upload</button>
        <p id="upload-status" class="status" data-state=""></p>
      </form>
      <form id="run-form" class="card inline">
        <h2>2. Run it</h2>
        <label for="run-jar">Program</label><select id="run-jar"></select>
        <label for="run-args">Program arguments</label><input type="text" id="run-args" placeholder="--input /data/in.txt --output /data/out">
        <label for="run-parallelism">Parallelism</label><input type="number" id="run-parallelism" min="1" placeholder="cluster default">
        <label for="run-savepoint">Savepoint path to restore</label><input type="text" id="run-savepoint" placeholder="none">
        <label><input type="checkbox" id="run-allow-nonrestored"> Allow non-restored state</label>
        <p><button type="submit" id="run-btn">Submit</button></p>
        <p id="run-status" class="status" data-state=""></p>
      </form>
      </div>
      <h2>Uploaded Programs</h2><div id="jar-list"></div>`,
    mount() {
      const st = (id, text, s) => setText(id, text, { 'data-state': s });
      document.getElementById('upload-form').addEventListener('submit', async (ev) => {
        ev.preventDefault();
        const f = document.getElementById('jar-file').files[0];
        if (!f) { st('upload-status', 'Choose a file first.', 'failed'); return; }
        const fd = new FormData();
        fd.append('jarfile', f, f.name);
        st('upload-status', `Uploading ${f.name} (${fmtBytes(f.size)})…`, 'in-progress');
        try {
          const r = await api('/jars/upload', { method: 'POST', body: fd });
          const jarID = r.filename.split('/').pop();
          st('upload-status', 'Uploaded as ' + jarID, 'completed');
          document.getElementById('upload-status').dataset.jarId = jarID;
          await state.view.update();
          document.getElementById('run-jar').value = jarID;
        } catch (e) {
          st('upload-status', 'Upload failed: ' + e.message, 'failed');
        }
      });
      document.getElementById('run-form').addEventListener('submit', async (ev) => {
        ev.preventDefault();
        const jar = document.getElementById('run-jar').value;
        if (!jar) { st('run-status', 'Upload a program first.', 'failed'); return; }
        const body = { programArgs: document.getElementById('run-args').value };
        const p = document.getElementById('run-parallelism').value;
        if (p) body.parallelism = Number(p);
        const sp = document.getElementById('run-savepoint').value.trim();
        if (sp) body.savepointPath = sp;
        body.allowNonRestoredState = document.getElementById('run-allow-nonrestored').checked;
        st('run-status', 'Planning and submitting…', 'in-progress');
        try {
          const r = await api(`/jars/${encodeURIComponent(jar)}/run`, { method: 'POST', json: body });
          st('run-status', 'Submitted job ' + r.jobid, 'completed');
          document.getElementById('run-status').dataset.jobId = r.jobid;
          location.hash = '#/job/' + r.jobid;
        } catch (e) {
          st('run-status', 'Submission failed: ' + e.message, 'failed');
        }
      });
      document.getElementById('jar-list').addEventListener('click', async (ev) => {
        const b = ev.target.closest('button[data-action]');
        if (!b) return;
        const jar = b.closest('tr').dataset.jarId;
        if (b.dataset.action === 'select') {
          document.getElementById('run-jar').value = jar;
          return;
        }
        try {
          await api('/jars/' + encodeURIComponent(jar), { method: 'DELETE' });
          await state.view.update();
        } catch (e) {
          setText('upload-status', 'Delete failed: ' + e.message, { 'data-state': 'failed' });
        }
      });
    },
    async update() {
      const l = await api('/jars');
      const files = l.files || [];
      setHTML('jar-list', table('jar-table', [
        { title: 'Name', cell: (f) => esc(f.name) },
        { title: 'Uploaded', cell: (f) => fmtTime(f.uploaded) },
        { title: 'ID', cell: (f) => `<span class="mono muted">${esc(f.id.slice(0, 12))}…</span>` },
        { title: '', cell: () => '<button type="button" class="secondary" data-action="select">Select</button> <button type="button" class="danger" data-action="delete">Delete</button>' },
      ], files, { empty: 'No program uploaded.', rowAttrs: (f) => `data-jar-id="${esc(f.id)}"` }));
      const key = files.map((f) => f.id).join(',');
      if (key !== listed) {
        const sel = document.getElementById('run-jar');
        const cur = sel.value;
        sel.innerHTML = files.map((f) => `<option value="${esc(f.id)}">${esc(f.name)} (${esc(fmtTime(f.uploaded))})</option>`).join('');
        if (files.some((f) => f.id === cur)) sel.value = cur;
        listed = key;
      }
    },
  };
}

// ---------- start ----------

function loadVersion() {
  api('/config').then((c) => {
    const v = c['flink-version'] || '';
    setText('version', /^\d/.test(v) ? 'v' + v : v);
  }).catch(() => {});
}
loadVersion();
route();
