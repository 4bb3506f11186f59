// Weft web UI: one page that renders the view its path names (/cluster, /cluster/apps,
// /cluster/app/ID, /cluster/nodes, /cluster/scheduler) from the REST API under /ws/v1/cluster
// and refreshes it every 2 s without reloading. No dependencies; every value from the server
// reaches the page as text (never as HTML).
"use strict";

const REFRESH_MS = 2000;
const API = "/ws/v1/cluster";

// ---- DOM helpers ------------------------------------------------------------------------

// h("td", {class: "num"}, "text", childNode, ...): an element with attributes and children.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "onclick" || k === "oninput" || k === "onchange") el[k] = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function replace(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

function link(href, text) {
  return h("a", { href }, text);
}

// An in-app link: navigates without reloading.
function nav(href, text) {
  const a = h("a", { href }, text);
  a.onclick = (e) => {
    if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    go(href);
  };
  return a;
}

function state(s) {
  return h("span", { class: "state " + s }, s);
}

// A bar: `parts` are [{pct, cls}] layered in order (first is drawn below), `label` on top.
function bar(parts, label) {
  const b = h("div", { class: "bar", title: label });
  for (const p of parts) {
    const d = h("div", { class: p.cls });
    d.style.width = Math.max(0, Math.min(100, p.pct)).toFixed(2) + "%";
    b.appendChild(d);
  }
  b.appendChild(h("span", { class: "label" }, label));
  return b;
}

function usageBar(used, total, unit, cls) {
  const pct = total > 0 ? (100 * used) / total : 0;
  return bar([{ pct, cls: "fill" + (cls ? " " + cls : "") }],
             `${fmtNum(used)} / ${fmtNum(total)} ${unit} (${pct.toFixed(0)}%)`);
}

// ---- Formatting -------------------------------------------------------------------------

function fmtNum(n) {
  return typeof n === "number" ? n.toLocaleString("en-US") : String(n ?? "");
}

function fmtTime(ms) {
  if (!ms) return "";
  const d = new Date(ms);
  const pad = (x) => String(x).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
         `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function fmtDuration(ms) {
  if (!ms || ms < 0) return "0 s";
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const hr = Math.floor(m / 60);
  return `${hr} h ${m % 60} min`;
}

function fmtBytes(b) {
  if (!b) return "0 B";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return `${b.toFixed(i ? 1 : 0)} ${units[i]}`;
}

const UNITS = { "memory-mb": "MB", "vcores": "vcores", "network-mbps": "Mbit/s",
                "disk-mbps": "MB/s" };
function unitOf(name, unit) { return UNITS[name] || unit || ""; }

// ---- Data -------------------------------------------------------------------------------

// Browser sign-in (docs/web.md): `weft web login` prints /cluster#sign-in=TICKET; this page
// trades the ticket for a session id, kept in this origin's localStorage (never a cookie, which
// every port of the host would receive) and sent in a header with every read.
const SESSION_KEY = "weft-session";

function headers(extra) {
  const h = Object.assign({ Accept: "application/json" }, extra || {});
  const session = localStorage.getItem(SESSION_KEY);
  if (session) h["X-Weft-Session"] = session;
  return h;
}

async function signInFromLink() {
  const m = /^#sign-in=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, "", location.pathname + location.search);  // the ticket is used up
  const r = await fetch(API + "/session", {
    method: "POST", headers: { Accept: "application/json", "X-Weft-Sign-In-Ticket": m[1] } });
  const body = await r.json().catch(() => null);
  if (r.ok && body && body.session && body.session.id) {
    localStorage.setItem(SESSION_KEY, body.session.id);
  } else {
    const msg = body && body.RemoteException ? body.RemoteException.message : r.statusText;
    setStatus("sign-in failed: " + msg, true);
  }
}

async function showWho() {
  const who = document.getElementById("who");
  const s = (await api("/session").catch(() => null) || {}).session || {};
  who.replaceChildren();
  if (s.signedIn) {
    who.append(h("span", {}, s.user + " "), h("button", { type: "button", onclick: async () => {
      await fetch(API + "/session", { method: "DELETE", headers: headers() }).catch(() => {});
      localStorage.removeItem(SESSION_KEY);
      location.reload();
    } }, "sign out"));
  } else {
    if (localStorage.getItem(SESSION_KEY)) localStorage.removeItem(SESSION_KEY);  // expired
    who.append(h("span", { title: "run `weft web login` and open the link it prints to see " +
                                   "your apps' details" }, "anonymous"));
  }
}

async function api(path) {
  const r = await fetch(API + path, { headers: headers() });
  const body = await r.json().catch(() => null);
  if (!r.ok) {
    const msg = body && body.RemoteException ? body.RemoteException.message : r.statusText;
    const err = new Error(msg);
    err.status = r.status;
    throw err;
  }
  return body;
}

function setStatus(text, isError) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = "status" + (isError ? " error" : "");
}

// ---- Charts: plain SVG, drawn by this script -------------------------------------------

const SVG_NS = "http://www.w3.org/2000/svg";

// svg("line", {x1: 0, ...}, children...): an SVG element (attributes as text, never HTML).
function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// The smallest of 1, 2, 5 x 10^k at or above v (`min` for nothing or less).
function niceStep(v, min) {
  if (!(v > min)) return min;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function fmtTick(v) {
  return Number.isInteger(v) ? fmtNum(v) : v.toFixed(1);
}

// A line chart over time. c: {id, title, desc, yLabel (with its unit), yMax (null: from the
// data), integer (whole-number ticks), t0, t1 (ms), series: [{name, cls, dashed,
// points: [[t ms, value]]}]}. The <svg> has a title and a description for screen readers,
// data-samples = the longest series' point count, and each polyline its own data-points.
function lineChart(c) {
  const W = 640, H = 230, L = 60, R = 14, T = 10, B = 42;
  const pw = W - L - R, ph = H - T - B;
  const values = c.series.flatMap((x) => x.points.map((p) => p[1]));
  // Four grid steps: a fixed maximum's quarters, or a round step (whole numbers for counts).
  const peak = Math.max(0, ...values);
  const step = c.yMax ? c.yMax / 4 : niceStep(peak / 4, c.integer ? 1 : 0.25);
  const yMax = c.yMax || step * Math.max(1, Math.ceil(peak / step));
  const t0 = c.t0, t1 = Math.max(c.t1, c.t0 + 1);
  const x = (t) => L + ((t - t0) / (t1 - t0)) * pw;
  const y = (v) => T + ph - (Math.max(0, Math.min(v, yMax)) / yMax) * ph;
  const samples = Math.max(0, ...c.series.map((s) => s.points.length));
  const root = svg("svg", { id: c.id, class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img",
                            "aria-labelledby": `${c.id}-title ${c.id}-desc`,
                            "data-samples": samples, preserveAspectRatio: "xMidYMid meet" },
    svg("title", { id: `${c.id}-title` }, c.title),
    svg("desc", { id: `${c.id}-desc` }, c.desc));
  for (let v = 0; v <= yMax + step / 2; v += step) {
    root.appendChild(svg("line", { class: "grid", x1: L, x2: L + pw, y1: y(v), y2: y(v) }));
    root.appendChild(svg("text", { class: "tick", x: L - 6, y: y(v) + 4, "text-anchor": "end" },
                         fmtTick(v)));
  }
  for (let i = 0; i <= 4; i++) {
    const t = t0 + ((t1 - t0) * i) / 4;
    root.appendChild(svg("text", { class: "tick", x: x(t), y: T + ph + 16,
                                   "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" },
                         fmtTime(t).slice(11)));
  }
  root.appendChild(svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: T + ph }));
  root.appendChild(svg("line", { class: "axis", x1: L, x2: L + pw, y1: T + ph, y2: T + ph }));
  root.appendChild(svg("text", { class: "axis-label", x: L + pw / 2, y: H - 4,
                                 "text-anchor": "middle" }, "time (local clock, hh:mm:ss)"));
  root.appendChild(svg("text", { class: "axis-label", x: 14, y: T + ph / 2, "text-anchor": "middle",
                                 transform: `rotate(-90 14 ${T + ph / 2})` }, c.yLabel));
  for (const s of c.series) {
    if (!s.points.length) continue;
    const pts = s.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    const last = s.points[s.points.length - 1][1];
    root.appendChild(svg("polyline", { class: `series ${s.cls}${s.dashed ? " dashed" : ""}`,
                                       points: pts, "data-series": s.name,
                                       "data-points": s.points.length },
      svg("title", {}, `${s.name}: ${fmtTick(Math.round(last * 10) / 10)} now`)));
  }
  const legend = h("div", { class: "chart-legend" }, c.series.map((s) =>
    h("span", { class: `swatch ${s.cls}${s.dashed ? " dashed" : ""}` }, s.name)));
  return h("figure", { class: "chart-box" }, h("figcaption", {}, c.title), root, legend);
}

// Resource types drawn in the utilisation chart, in this order, with their colour classes.
const SERIES_CLASSES = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"];

// ---- Views ------------------------------------------------------------------------------
// Each view: mount(main) builds the static parts once; update() fetches and fills the live
// parts (called at once and every REFRESH_MS). Controls keep their state across updates.

const views = {};

views.overview = {
  title: "Cluster overview",
  mount(main) {
    this.cards = h("div", { class: "cards" });
    this.resources = h("div", { class: "resources" });
    this.info = h("dl", { class: "kv" });
    this.charts = h("div", { class: "charts", id: "history-charts" });
    // Samples from GET /history, kept here and extended with ?since= at every refresh.
    this.hist = { samples: [], last: 0, sampleMs: 0, retentionS: 0, types: [] };
    replace(main, h("h1", {}, "Cluster overview"), this.cards,
            h("h2", {}, "Utilisation per resource"), h("div", { class: "panel" }, this.resources),
            h("h2", {}, "History"), h("div", { class: "panel" }, this.charts),
            h("h2", {}, "ResourceManager"), h("div", { class: "panel" }, this.info));
  },
  // Fetches the samples taken since the last refresh and redraws the charts.
  async updateHistory() {
    const hist = this.hist;
    const ch = (await api("/history" + (hist.last ? "?since=" + hist.last : ""))).clusterHistory;
    hist.sampleMs = ch.sampleIntervalMs;
    hist.retentionS = ch.retentionSeconds;
    hist.types = ch.resourceTypes || [];
    for (const sample of ch.samples || []) {
      if (sample.time > hist.last) { hist.samples.push(sample); hist.last = sample.time; }
    }
    const oldest = hist.last - hist.retentionS * 1000;
    while (hist.samples.length && hist.samples[0].time <= oldest) hist.samples.shift();
    const samples = hist.samples;
    if (!samples.length) {
      replace(this.charts, h("div", { class: "muted" },
        `Collecting samples: the ResourceManager takes one every ${fmtDuration(hist.sampleMs)}.`));
      return;
    }
    const t0 = samples[0].time, t1 = samples[samples.length - 1].time;
    const span = `${fmtTime(t0)} to ${fmtTime(t1).slice(11)}, ${samples.length} samples, ` +
                   `one every ${fmtDuration(hist.sampleMs)}`;
    // Utilisation: each resource type the cluster has, used / total in percent.
    const util = [];
    hist.types.forEach((type, i) => {
      if (!samples.some((s) => (s.total[type.name] || 0) > 0)) return;
      util.push({ name: `${type.name} (${unitOf(type.name, type.unit)})`,
                  cls: type.name === "network-mbps" ? "net" : SERIES_CLASSES[i % 8],
                  points: samples.map((s) => [s.time, s.total[type.name] > 0
                    ? (100 * (s.used[type.name] || 0)) / s.total[type.name] : 0]) });
    });
    const containers = [
      { name: "running", cls: "s0", points: samples.map((s) => [s.time, s.containersRunning]) },
      { name: "pending", cls: "s4", points: samples.map((s) => [s.time, s.containersPending]) },
    ];
    // Queues: used share of the cluster (solid) and guaranteed share (dashed), per queue.
    const queueNames = [];
    for (const s of samples) {
      for (const q of s.queues || []) if (!queueNames.includes(q.queue)) queueNames.push(q.queue);
    }
    const queues = [];
    queueNames.forEach((name, i) => {
      const pts = (key) => samples.flatMap((s) => {
        const q = (s.queues || []).find((x) => x.queue === name);
        return q ? [[s.time, q[key]]] : [];
      });
      queues.push({ name: `${name} used`, cls: SERIES_CLASSES[i % 8], points: pts("usedPct") });
      queues.push({ name: `${name} guaranteed`, cls: SERIES_CLASSES[i % 8], dashed: true,
                    points: pts("guaranteedPct") });
    });
    const lastOf = (series) => series.map((s) => s.points.length
      ? `${s.name} ${fmtTick(Math.round(s.points[s.points.length - 1][1] * 10) / 10)}` : "")
      .filter((x) => x).join(", ");
    replace(this.charts,
      samples.length < 2
        ? h("div", { class: "muted" }, "One sample so far; lines need two.") : null,
      lineChart({ id: "chart-utilisation", title: "Cluster utilisation per resource",
                  desc: `Percent of the cluster's capacity allocated, per resource type, ` +
                        `${span}. Latest: ${lastOf(util)}.`,
                  yLabel: "% of capacity", yMax: 100, t0, t1, series: util }),
      lineChart({ id: "chart-containers", title: "Containers running and pending",
                  desc: `Containers running and containers asked for but not yet allocated, ` +
                        `${span}. Latest: ${lastOf(containers)}.`,
                  yLabel: "containers", yMax: null, integer: true, t0, t1,
                  series: containers }),
      lineChart({ id: "chart-queues", title: "Queue utilisation",
                  desc: `Each queue's share of the cluster (dominant resource), used and ` +
                        `guaranteed, ${span}. Latest: ${lastOf(queues)}.`,
                  yLabel: "% of cluster (dominant resource)", yMax: 100, t0, t1, series: queues }));
  },
  async update() {
    // The charts say why they are missing (an older RM without /history) instead of failing
    // the whole page.
    const [info, metrics] = await Promise.all([api("/info"), api("/metrics"),
      this.updateHistory().catch((e) =>
        replace(this.charts, h("div", { class: "muted" }, "No history: " + e.message)))]);
    const m = metrics.clusterMetrics;
    const ci = info.clusterInfo;
    document.getElementById("version").textContent = ci.resourceManagerVersion;
    const card = (title, big, rows) =>
      h("div", { class: "card" }, h("h3", {}, title), h("div", { class: "big" }, big),
        h("dl", { class: "kv" }, rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
    replace(this.cards,
      card("Applications", fmtNum(m.appsSubmitted) + " submitted", [
        ["running", m.appsRunning], ["pending", m.appsPending], ["completed", m.appsCompleted],
        ["failed", m.appsFailed], ["killed", m.appsKilled]]),
      card("Containers", fmtNum(m.containersAllocated) + " running", [
        ["pending", m.containersPending],
        ["allocations/s", m.containerAssignedPerSecond]]),
      card("Nodes", fmtNum(m.activeNodes) + " active", [
        ["total", m.totalNodes], ["unhealthy", m.unhealthyNodes], ["lost", m.lostNodes],
        ["decommissioned", m.decommissionedNodes], ["shut down", m.shutdownNodes]]));
    const rows = [];
    for (const [name, r] of Object.entries(m.resources || {})) {
      if (!r.total && !r.allocated && !r.pending) continue;
      const unit = unitOf(name, r.unit);
      rows.push(h("div", { class: "name" }, name),
                usageBar(r.allocated, r.total, unit, name === "network-mbps" ? "net" : ""),
                h("div", { class: "fig" }, `pending ${fmtNum(r.pending)} ${unit}`));
    }
    if (!rows.length) rows.push(h("div", { class: "muted" }, "No node has registered yet."));
    replace(this.resources, rows);
    replace(this.info,
      h("dt", {}, "cluster id"), h("dd", {}, ci.id),
      h("dt", {}, "started"), h("dd", {}, fmtTime(ci.startedOn)),
      h("dt", {}, "state"), h("dd", {}, ci.state + " / " + ci.haState),
      h("dt", {}, "scheduler"), h("dd", {}, ci.schedulerPolicy),
      h("dt", {}, "version"), h("dd", {}, ci.resourceManagerVersion));
  },
};

// Sortable table columns: [header, key(app) -> sortable value, render(app) -> cell, numeric].
const APP_COLUMNS = [
  ["ID", (a) => a.id, (a) => nav("/cluster/app/" + a.id, a.id)],
  ["User", (a) => a.user, (a) => a.user],
  ["Name", (a) => a.name, (a) => a.name],
  ["Queue", (a) => a.queue, (a) => a.queue],
  ["State", (a) => a.state, (a) => state(a.state)],
  ["Final status", (a) => a.finalStatus, (a) => state(a.finalStatus)],
  ["Started", (a) => a.startedTime, (a) => fmtTime(a.startedTime)],
  ["Elapsed", (a) => a.elapsedTime, (a) => fmtDuration(a.elapsedTime), true],
  ["Containers", (a) => a.runningContainers, (a) => a.runningContainers, true],
  ["Memory MB", (a) => a.allocatedMB, (a) => fmtNum(a.allocatedMB), true],
  ["vCores", (a) => a.allocatedVCores, (a) => a.allocatedVCores, true],
  ["Network Mbit/s", (a) => a.allocatedNetworkMbps, (a) => fmtNum(a.allocatedNetworkMbps), true],
  ["Progress", (a) => a.progress, (a) => a.progress.toFixed(0) + "%", true],
];

views.apps = {
  title: "Applications",
  sortCol: 0,
  sortDesc: true,
  filter: "",
  stateFilter: "",
  mount(main) {
    this.chips = h("div", { class: "chips" });
    const input = h("input", { type: "search", placeholder: "Filter by id, name, user, queue",
                               "aria-label": "filter" });
    input.value = this.filter;
    input.oninput = () => { this.filter = input.value; this.render(); };
    const select = h("select", { "aria-label": "state" },
      ["", "NEW", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED"].map((s) =>
        h("option", { value: s }, s || "all states")));
    select.value = this.stateFilter;
    select.onchange = () => { this.stateFilter = select.value; this.render(); };
    this.head = h("tr");
    this.body = h("tbody");
    replace(main, h("h1", {}, "Applications"),
            h("div", { class: "toolbar" }, input, select, this.chips),
            h("div", { class: "table-wrap" },
              h("table", { id: "apps-table" }, h("thead", {}, this.head), this.body)));
    this.apps = [];
  },
  async update() {
    this.apps = (await api("/apps")).apps.app || [];
    this.render();
  },
  render() {
    const counts = {};
    for (const a of this.apps) counts[a.state] = (counts[a.state] || 0) + 1;
    replace(this.chips, Object.entries(counts).sort().map(([s, n]) =>
      h("span", { class: "chip" }, state(s), " " + n)));
    replace(this.head, APP_COLUMNS.map(([title, , , numeric], i) => {
      const cls = ["sortable", numeric ? "num" : "",
                   i === this.sortCol ? (this.sortDesc ? "sorted-desc" : "sorted-asc") : ""];
      const th = h("th", { class: cls.join(" ").trim() }, title);
      th.onclick = () => {
        if (this.sortCol === i) this.sortDesc = !this.sortDesc;
        else { this.sortCol = i; this.sortDesc = false; }
        this.render();
      };
      return th;
    }));
    const f = this.filter.trim().toLowerCase();
    const key = APP_COLUMNS[this.sortCol][1];
    const rows = this.apps
      .filter((a) => !this.stateFilter || a.state === this.stateFilter)
      .filter((a) => !f || [a.id, a.name, a.user, a.queue].some((x) => x.toLowerCase().includes(f)))
      .sort((x, y) => {
        const a = key(x), b = key(y);
        const c = a < b ? -1 : a > b ? 1 : 0;
        return this.sortDesc ? -c : c;
      })
      .map((a) => h("tr", {}, APP_COLUMNS.map(([, , render, numeric]) =>
        h("td", { class: numeric ? "num" : "" }, render(a)))));
    replace(this.body, rows.length ? rows
      : h("tr", {}, h("td", { colspan: APP_COLUMNS.length, class: "empty" },
                      this.apps.length ? "No application matches." : "No application yet.")));
  },
};

views.app = {
  title: "Application",
  mount(main, id) {
    this.id = id;
    this.props = h("dl", { class: "kv" });
    this.diag = h("div");
    this.attempts = h("tbody");
    this.containers = h("tbody");
    this.sizing = h("div");
    replace(main, h("h1", {}, "Application ", h("span", { id: "app-id" }, id)),
      h("div", { class: "panel" }, this.props),
      h("h2", {}, "Diagnostics"), this.diag,
      this.sizing,
      h("h2", {}, "Attempts"),
      h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {},
        ["#", "Attempt", "State", "Started", "Finished", "Node", "AM container", "Logs",
         "Diagnostics"].map((t) => h("th", {}, t)))), this.attempts)),
      h("h2", {}, "Running containers"),
      h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {},
        ["Container", "Node", h("span", {}, "Memory RSS"), "CPU time", "Network sent",
         "Network rate", "Logs"].map((t) => h("th", {}, t)))), this.containers)));
  },
  async update() {
    let app;
    try {
      app = (await api("/apps/" + encodeURIComponent(this.id))).app;
    } catch (e) {
      replace(this.props, h("dd", { class: "empty" }, e.message));
      return;
    }
    const [attempts, nodes] = await Promise.all([
      api("/apps/" + encodeURIComponent(this.id) + "/appattempts"), api("/nodes")]);
    const res = app.allocatedResources || {};
    const rows = [
      ["name", app.name], ["user", app.user], ["queue", app.queue],
      ["state", state(app.state)], ["final status", state(app.finalStatus)],
      ["progress", app.progress.toFixed(0) + "%"],
      ["submitted", fmtTime(app.startedTime)], ["AM launched", fmtTime(app.launchTime)],
      ["finished", fmtTime(app.finishedTime)], ["elapsed", fmtDuration(app.elapsedTime)],
      ["allocated", Object.entries(res).filter(([, v]) => v)
                      .map(([k, v]) => `${fmtNum(v)} ${unitOf(k)}`).join(", ") || "nothing"],
      ["running containers", app.runningContainers],
      ["MB-seconds / vcore-seconds", `${fmtNum(app.memorySeconds)} / ${fmtNum(app.vcoreSeconds)}`],
      ["AM container", app.amContainerId || "not allocated yet"],
      ["AM logs", app.amContainerLogs ? link(app.amContainerLogs, "stdout / stderr") : "none"],
      ["REST", link(API + "/apps/" + app.id, API + "/apps/" + app.id)],
    ];
    replace(this.props, rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
    replace(this.diag, h("pre", { class: "diag" }, app.diagnostics || "(none)"));
    replace(this.sizing, (app.amSizingDecisions || []).length
      ? [h("h2", {}, "AM sizing (AdaptCont)"),
         h("pre", { class: "diag" }, app.amSizingDecisions.join("\n"))]
      : []);
    const list = attempts.appAttempts.appAttempt || [];
    replace(this.attempts, list.length ? list.map((a) => h("tr", {},
      h("td", {}, a.id), h("td", {}, a.appAttemptId), h("td", {}, state(a.appAttemptState)),
      h("td", {}, fmtTime(a.startTime)), h("td", {}, fmtTime(a.finishedTime)),
      h("td", {}, a.nodeId), h("td", {}, a.containerId),
      h("td", {}, a.logsLink ? link(a.logsLink, "logs") : ""),
      h("td", {}, a.diagnosticsInfo)))
      : h("tr", {}, h("td", { colspan: 9, class: "empty" }, "No attempt yet.")));
    const containers = [];
    for (const n of nodes.nodes.node || []) {
      for (const c of n.containers || []) {
        if (c.appId !== app.id) continue;
        const logs = n.nodeHTTPAddress
          ? link(`http://${n.nodeHTTPAddress}/node/containerlogs/${c.id}/${app.user}`, "logs") : "";
        containers.push(h("tr", {}, h("td", {}, c.id), h("td", {}, n.id),
          h("td", { class: "num" }, fmtBytes(c.memoryRssBytes)),
          h("td", { class: "num" }, fmtDuration(c.cpuTimeMs)),
          h("td", { class: "num" }, fmtBytes(c.networkTxBytes)),
          h("td", { class: "num" }, c.networkTxRateMbps ? c.networkTxRateMbps + " Mbit/s" : ""),
          h("td", {}, logs)));
      }
    }
    replace(this.containers, containers.length ? containers
      : h("tr", {}, h("td", { colspan: 7, class: "empty" }, "No running container.")));
  },
};

views.nodes = {
  title: "Nodes",
  mount(main) {
    this.body = h("tbody");
    this.head = h("tr");
    replace(main, h("h1", {}, "Nodes"),
            h("div", { class: "table-wrap" },
              h("table", { id: "nodes-table" }, h("thead", {}, this.head), this.body)));
  },
  async update() {
    const nodes = (await api("/nodes")).nodes.node || [];
    // Resource columns: memory, vcores, and any other type some node offers (e.g. network).
    const types = ["memory-mb", "vcores"];
    for (const n of nodes) {
      for (const [k, v] of Object.entries(n.totalResource || {})) {
        if (v > 0 && !types.includes(k)) types.push(k);
      }
    }
    replace(this.head, ["Node", "Rack", "State", "Health", "Last heartbeat", "Containers"]
      .map((t) => h("th", {}, t)).concat(types.map((t) => h("th", {}, `${t} used / capacity`))));
    const rows = [];
    const now = Date.now();
    for (const n of nodes) {
      rows.push(h("tr", {},
        h("td", {}, n.id, n.nodeHTTPAddress
          ? h("div", {}, link(`http://${n.nodeHTTPAddress}/metrics`, "metrics")) : null),
        h("td", {}, n.rack), h("td", {}, state(n.state)),
        h("td", {}, state(n.healthStatus), n.healthReport ? h("div", { class: "muted" },
                                                              n.healthReport) : null),
        h("td", {}, n.lastHealthUpdate ? fmtDuration(now - n.lastHealthUpdate) + " ago" : ""),
        h("td", { class: "num" }, n.numContainers),
        types.map((t) => h("td", {}, usageBar((n.usedResource || {})[t] || 0,
                                              (n.totalResource || {})[t] || 0, unitOf(t),
                                              t === "network-mbps" ? "net" : "")))));
      const extra = [];
      if ((n.nodeLabels || []).length) extra.push(h("div", {}, "label: " + n.nodeLabels.join(", ")));
      const attrs = ((n.nodeAttributesInfo || {}).nodeAttributeInfo || [])
        .map((a) => `${a.name}=${a.value}`);
      if (attrs.length) extra.push(h("div", {}, "attributes: " + attrs.join(", ")));
      if (n.networkIsolation) extra.push(h("div", {}, "network: " + n.networkIsolation));
      if ((n.missingFeatures || []).length)
        extra.push(h("div", { class: "muted" }, "missing: " + n.missingFeatures.join(", ")));
      // Its GPUs (docs/gpu.md): free share as the scheduler accounts it, and who holds each.
      if ((n.devices || []).length) {
        extra.push(h("table", {}, h("tr", {}, ["Device", "Model", "Healthy", "Free milli", "Held by"]
          .map((t) => h("th", {}, t))),
          n.devices.map((d) => h("tr", {}, h("td", {}, `${d.type}:${d.index}`),
            h("td", {}, d.model || "-"), h("td", {}, d.healthy ? "yes" : "no"),
            h("td", { class: "num" }, d.freeMilli),
            h("td", {}, (d.containers || []).map((c) => `${c.containerId} (${c.milli})`)
              .join(", ") || "-")))));
      }
      const withNet = (n.containers || []).filter((c) => c.networkTxBytes || c.networkTxRateMbps);
      if (withNet.length) {
        extra.push(h("table", {}, h("tr", {}, ["Container", "Network sent", "Rate"]
          .map((t) => h("th", {}, t))),
          withNet.map((c) => h("tr", {}, h("td", {}, c.id),
            h("td", { class: "num" }, fmtBytes(c.networkTxBytes)),
            h("td", { class: "num" }, c.networkTxRateMbps + " Mbit/s")))));
      }
      if (extra.length) {
        rows.push(h("tr", { class: "sub" }, h("td", { colspan: 6 + types.length }, extra)));
      }
    }
    replace(this.body, rows.length ? rows
      : h("tr", {}, h("td", { colspan: 6 + types.length, class: "empty" },
                      "No NodeManager has registered yet.")));
  },
};

views.scheduler = {
  title: "Scheduler",
  mount(main) {
    this.policy = h("span");
    this.body = h("tbody");
    replace(main, h("h1", {}, "Scheduler ", h("span", { class: "muted" }, "("), this.policy,
                    h("span", { class: "muted" }, ")")),
      h("div", { class: "legend" }, h("span", { class: "l-used" }, "used"),
        h("span", { class: "l-guarantee" }, "guaranteed"), h("span", { class: "l-max" }, "maximum"),
        h("span", {}, "(% of the cluster, dominant resource)")),
      h("div", { class: "table-wrap" }, h("table", { id: "queues-table" },
        h("thead", {}, h("tr", {}, ["Queue", "State", "Apps", "Containers", "Pending",
          "Used / guaranteed / max", "Used (memory, vcores)"].map((t) => h("th", {}, t)))),
        this.body)));
  },
  async update() {
    const info = (await api("/scheduler")).scheduler.schedulerInfo;
    this.policy.textContent = info.weftPolicy + " policy";
    const rows = [];
    const walk = (q, depth) => {
      const name = h("span", { class: "queue-name" }, q.queueName);
      name.style.paddingLeft = depth * 18 + "px";
      rows.push(h("tr", {},
        h("td", {}, name), h("td", {}, state(q.state)),
        h("td", { class: "num" }, q.numApplications),
        h("td", { class: "num" }, q.numContainers),
        h("td", { class: "num" }, q.pendingContainers),
        h("td", {}, bar([
          { pct: q.absoluteMaxCapacity, cls: "max" },
          { pct: q.absoluteCapacity, cls: "guarantee" },
          { pct: q.absoluteUsedCapacity, cls: "fill" }],
          `${q.absoluteUsedCapacity.toFixed(1)}% / ${q.absoluteCapacity.toFixed(1)}% / ` +
          `${q.absoluteMaxCapacity.toFixed(1)}%`)),
        h("td", {}, q.usedResources)));
      for (const c of (q.queues && q.queues.queue) || []) walk(c, depth + 1);
    };
    walk(info, 0);
    replace(this.body, rows);
  },
};

// ---- Router and refresh -----------------------------------------------------------------

let current = null;
let timer = null;

function route(path) {
  const m = path.match(/^\/cluster\/app\/([^/]+)\/?$/);
  if (m) return ["app", decodeURIComponent(m[1])];
  if (/^\/cluster\/apps\/?$/.test(path)) return ["apps"];
  if (/^\/cluster\/nodes\/?$/.test(path)) return ["nodes"];
  if (/^\/cluster\/scheduler\/?$/.test(path)) return ["scheduler"];
  return ["overview"];
}

async function refresh() {
  if (!current) return;
  const view = current;
  try {
    await view.update();
    if (view === current) setStatus("live \u00b7 updated " + fmtTime(Date.now()).slice(11));
  } catch (e) {
    if (view === current) setStatus("cannot reach the ResourceManager: " + e.message, true);
  }
}

function show(path) {
  const [name, arg] = route(path);
  current = views[name];
  for (const a of document.querySelectorAll("header nav a")) {
    a.classList.toggle("active", a.dataset.page === (name === "app" ? "apps" : name));
  }
  document.title = `${arg || current.title} \u00b7 Weft`;
  current.mount(document.getElementById("main"), arg);
  refresh();
}

function go(path) {
  history.pushState({}, "", path);
  show(path);
}

window.addEventListener("popstate", () => show(location.pathname));
document.addEventListener("DOMContentLoaded", () => {
  for (const a of document.querySelectorAll("header nav a")) {
    if (a.dataset.external) continue;
    a.onclick = (e) => {
      if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      go(a.getAttribute("href"));
    };
  }
  signInFromLink().finally(() => {
    showWho();
    show(location.pathname);
    timer = setInterval(refresh, REFRESH_MS);
  });
  api("/info").then((i) => {
    document.getElementById("version").textContent = i.clusterInfo.resourceManagerVersion;
  }).catch(() => {});
});
