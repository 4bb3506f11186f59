// Weft's application history page: the finished apps of GET /ws/v1/applicationhistory/apps
// (web/history_api.h), filtered by user, queue, state and finish time. Anonymous readers see
// what the server shows them (details "N/A" unless it runs with --http-anonymous-view). Every
// value from the server reaches the page as text (never as HTML).
"use strict";

const API = "/ws/v1/applicationhistory";
const DAY_MS = 24 * 3600 * 1000;

function cell(text, cls) {
  const td = document.createElement("td");
  if (cls) td.className = cls;
  td.textContent = text === undefined || text === null ? "" : String(text);
  return td;
}

function fmtTime(ms) {
  return ms > 0 ? new Date(ms).toLocaleString() : "-";
}

function fmtDuration(ms) {
  if (!(ms > 0)) return "-";
  const s = Math.round(ms / 1000);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}

function fmtNum(n) {
  return typeof n === "number" && n >= 0 ? n.toLocaleString() : "N/A";
}

function setStatus(text, isError) {
  const el = document.getElementById("status");
  el.textContent = text;
  el.classList.toggle("error", !!isError);
}

async function load() {
  const form = document.getElementById("filters");
  const q = new URLSearchParams();
  for (const name of ["user", "queue", "states"]) {
    const v = form.elements[name].value.trim();
    if (v) q.set(name, v);
  }
  const days = form.elements.since.value;
  if (days) q.set("finishedTimeBegin", String(Date.now() - Number(days) * DAY_MS));
  q.set("limit", "1000");
  history.replaceState(null, "", "?" + q.toString());
  setStatus("loading…");
  try {
    // The RM UI's sign-in (weft.js), when this page is served by the RM.
    const headers = { Accept: "application/json" };
    const session = localStorage.getItem("weft-session");
    if (session) headers["X-Weft-Session"] = session;
    const r = await fetch(API + "/apps?" + q.toString(), { headers });
    const body = await r.json();
    if (!r.ok) throw new Error((body.RemoteException && body.RemoteException.message) || r.status);
    const rows = (body.app || []).map((a) => {
      const tr = document.createElement("tr");
      const state = cell(a.appState, "state " + a.appState);
      const status = cell(a.finalAppStatus, "state " + a.finalAppStatus);
      tr.append(cell(a.appId), cell(a.name), cell(a.user), cell(a.queue), cell(a.type), state,
                status, cell(fmtTime(a.startedTime)), cell(fmtTime(a.finishedTime)),
                cell(fmtDuration(a.elapsedTime), "num"), cell(fmtNum(a.memorySeconds), "num"),
                cell(fmtNum(a.vcoreSeconds), "num"));
      return tr;
    });
    document.getElementById("apps").replaceChildren(...rows);
    setStatus(rows.length + " application" + (rows.length === 1 ? "" : "s"));
  } catch (e) {
    setStatus("error: " + e.message, true);
  }
}

// The filters from the address (a shared link shows the same list).
(function init() {
  const form = document.getElementById("filters");
  const q = new URLSearchParams(location.search);
  for (const name of ["user", "queue", "states"]) if (q.get(name)) form.elements[name].value = q.get(name);
  form.onsubmit = (e) => {
    e.preventDefault();
    load();
  };
  load();
})();
