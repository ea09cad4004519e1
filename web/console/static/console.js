// The clinksql console: polls the JSON API of package web and draws the job list, a job's dataflow graph and its
// checkpoint history. Plain DOM and SVG, no dependencies. Data from the API only ever reaches the page through
// textContent and setAttribute (never innerHTML), so a job's query or error text cannot inject markup.
"use strict";

(function () {
  const POLL_MS = 1500;
  const SVGNS = "http://www.w3.org/2000/svg";

  let route = parseRoute();
  let timer = null;
  let generation = 0; // bumped on every route change: a poll that started before it is ignored
  let polls = 0;

  // ---- DOM helpers ----

  function $(id) {
    return document.getElementById(id);
  }

  function html(tag, attrs, text) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function setAttrs(e, attrs) {
    if (!attrs) return;
    for (const k of Object.keys(attrs)) {
      if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, String(attrs[k]));
    }
  }

  function clear(e) {
    while (e.firstChild) e.removeChild(e.firstChild);
  }

  function td(text, cls, title) {
    return html("td", { class: cls, title: title }, text);
  }

  // ---- formatting ----

  function fmtCount(x) {
    if (x === null || x === undefined) return "–";
    const a = Math.abs(x);
    if (a >= 1e9) return (x / 1e9).toFixed(a >= 1e10 ? 0 : 1) + "G";
    if (a >= 1e6) return (x / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
    if (a >= 1e3) return (x / 1e3).toFixed(a >= 1e4 ? 0 : 1) + "k";
    return a < 10 && !Number.isInteger(x) ? x.toFixed(1) : String(Math.round(x));
  }

  function fmtBytes(b) {
    if (b === null || b === undefined) return "–";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(b) >= 1024 && i < units.length - 1) {
      b /= 1024;
      i++;
    }
    return (i === 0 ? String(b) : b.toFixed(b >= 100 ? 0 : 1)) + " " + units[i];
  }

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "–";
    if (ms === 0) return "0 ms";
    if (ms < 10) return ms.toFixed(1) + " ms";
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
    if (ms < 3600000) return (ms / 60000).toFixed(1) + " min";
    if (ms < 86400000) return (ms / 3600000).toFixed(1) + " h";
    return (ms / 86400000).toFixed(1) + " d";
  }

  function fmtPct(r) {
    if (r === null || r === undefined || isNaN(r)) return "–";
    return Math.round(r * 100) + "%";
  }

  // fmtTime shows an RFC 3339 time in UTC, without the date when short is set.
  function fmtTime(iso, short) {
    if (!iso) return "–";
    const d = new Date(iso);
    if (isNaN(d.getTime())) return String(iso);
    if (d.getUTCFullYear() < 1970) return "–"; // Go's zero time: not known
    const s = d.toISOString(); // 2026-01-01T00:00:01.234Z
    return short ? s.slice(11, 23) : s.slice(0, 10) + " " + s.slice(11, 23) + " UTC";
  }

  function truncate(s, n) {
    s = String(s || "");
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }

  // bpColor is Flink's backpressure coloring: green when idle of it, through yellow, to red when always blocked.
  function bpColor(r) {
    if (r === null || r === undefined || isNaN(r)) return "#d9dde3";
    r = Math.max(0, Math.min(1, r));
    return "hsl(" + Math.round(120 * (1 - r)) + ", 62%, 72%)";
  }

  // niceCeil rounds v up to 1, 2 or 5 times a power of ten (an axis maximum).
  function niceCeil(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  // ---- routing and polling ----

  function parseRoute() {
    const m = /^#\/jobs\/(.+)$/.exec(location.hash);
    if (!m) return { job: null };
    try {
      return { job: decodeURIComponent(m[1]) };
    } catch (e) {
      return { job: m[1] };
    }
  }

  async function getJSON(path) {
    let resp;
    try {
      resp = await fetch(path, { headers: { Accept: "application/json" }, cache: "no-store" });
    } catch (e) {
      const err = new Error("GET " + path + ": " + e.message);
      err.down = true;
      throw err;
    }
    let body = null;
    try {
      body = await resp.json();
    } catch (e) {
      body = null;
    }
    if (!resp.ok) {
      const err = new Error("GET " + path + ": " + ((body && body.error) || resp.status + " " + resp.statusText));
      err.status = resp.status;
      err.down = resp.status >= 500 || resp.status === 401 || resp.status === 403;
      throw err;
    }
    if (body === null || typeof body !== "object") {
      const err = new Error("GET " + path + ": not a JSON object");
      err.down = true;
      throw err;
    }
    return body;
  }

  function banner(msg) {
    const b = $("banner");
    b.textContent = msg || "";
    b.classList.toggle("visible", !!msg);
  }

  async function tick() {
    const gen = generation;
    const job = route.job;
    const jobsP = getJSON("/api/jobs");
    const jobP = job !== null ? getJSON("/api/jobs/" + encodeURIComponent(job)) : null;
    const problems = [];
    try {
      const list = await jobsP;
      if (gen === generation) renderJobs(list.jobs || []);
    } catch (e) {
      problems.push(e);
    }
    if (jobP) {
      try {
        const detail = await jobP;
        if (gen === generation) renderJob(detail);
      } catch (e) {
        if (gen === generation && e.status === 404) renderMissingJob(job, e.message);
        else problems.push(e);
      }
    }
    if (gen !== generation) return; // the route changed meanwhile: its own poll is running
    if (problems.length) {
      const down = problems.some((p) => p.down);
      banner((down ? "The clinksql API is not answering: " : "Error: ") + problems.map((p) => p.message).join("; ") +
        " (retrying every " + POLL_MS / 1000 + " s; the figures shown are the last ones received)");
    } else {
      banner("");
      $("updated").textContent = "updated " + fmtTime(new Date().toISOString(), true) + " UTC";
      document.body.setAttribute("data-polls", ++polls); // how many polls succeeded: scripts can tell it is live
    }
    timer = setTimeout(tick, POLL_MS);
  }

  function navigate() {
    route = parseRoute();
    generation++;
    if (timer !== null) clearTimeout(timer);
    timer = null;
    $("job").hidden = route.job === null;
    if (route.job !== null) {
      $("job-id").textContent = route.job;
      document.title = route.job + " · clinksql console";
    } else {
      document.title = "clinksql console";
    }
    tick();
  }

  // ---- the job list ----

  function renderJobs(jobs) {
    const tbody = $("jobs").tBodies[0];
    clear(tbody);
    $("jobs-empty").hidden = jobs.length > 0;
    for (const j of jobs) {
      const tr = html("tr", { "data-job": j.job_id, "data-state": j.state });
      if (j.job_id === route.job) tr.classList.add("selected");
      const idCell = html("td");
      idCell.appendChild(html("a", { href: "#/jobs/" + encodeURIComponent(j.job_id) }, j.job_id));
      tr.appendChild(idCell);
      const stateCell = html("td");
      stateCell.appendChild(html("span", { class: "state state-" + String(j.state).toLowerCase() }, j.state));
      tr.appendChild(stateCell);
      tr.appendChild(td(truncate(j.query, 60), "query", j.query));
      tr.appendChild(td(fmtCount(j.rows_in_per_sec), "num"));
      tr.appendChild(td(fmtCount(j.rows_out_per_sec), "num"));
      tr.appendChild(td(j.watermark_lag_ms === null || j.watermark_lag_ms === undefined ? "–" : fmtMs(j.watermark_lag_ms), "num"));
      tr.appendChild(td(j.checkpoints_completed + (j.checkpoints_failed ? " (" + j.checkpoints_failed + " failed)" : ""), "num"));
      tr.appendChild(td(j.restarts, "num"));
      tr.appendChild(td(truncate(j.last_error, 80), "error-text", j.last_error || null));
      tbody.appendChild(tr);
    }
  }

  // ---- a job ----

  function renderMissingJob(id, msg) {
    $("job").hidden = false;
    $("job-id").textContent = id;
    const st = $("job-state");
    st.textContent = "NOT FOUND";
    st.className = "state state-failed";
    $("job-query").textContent = "";
    clear($("job-facts"));
    const err = $("job-error");
    err.hidden = false;
    err.textContent = msg;
    clear($("graph"));
    clear($("checkpoints"));
    clear($("operators").tBodies[0]);
    clear($("checkpoint-table").tBodies[0]);
  }

  function renderJob(d) {
    const j = d.job || {};
    $("job").hidden = false;
    $("job-id").textContent = j.job_id;
    const st = $("job-state");
    st.textContent = j.state;
    st.className = "state state-" + String(j.state).toLowerCase();
    $("job-query").textContent = j.query || "";
    renderFacts(j);
    const err = $("job-error");
    err.hidden = !j.last_error;
    err.textContent = j.last_error ? "Last error: " + j.last_error : "";
    const ops = aggregateOperators(d.operators || [], d.edges || []);
    renderGraph(ops, d.edges || []);
    renderOperators(ops);
    renderCheckpointChart(d.checkpoints || []);
    renderCheckpointTable(d.checkpoints || []);
  }

  function renderFacts(j) {
    const dl = $("job-facts");
    clear(dl);
    const facts = [
      ["started", fmtTime(j.started_at)],
      ["restarts", j.restarts],
      ["rows in", fmtCount(j.rows_in) + " (" + fmtCount(j.rows_in_per_sec) + "/s)"],
      ["rows out", fmtCount(j.rows_out) + " (" + fmtCount(j.rows_out_per_sec) + "/s)"],
      ["watermark", fmtTime(j.watermark)],
      ["watermark lag", j.watermark_lag_ms === null || j.watermark_lag_ms === undefined ? "–" : fmtMs(j.watermark_lag_ms)],
      ["source lag", j.source_lag_records === null || j.source_lag_records === undefined ? "–" : fmtCount(j.source_lag_records) + " records"],
      ["checkpoint mode", j.checkpoint_mode || "–"],
      ["checkpoints", j.checkpoints_completed + " completed, " + j.checkpoints_failed + " failed"],
      ["last checkpoint", j.last_checkpoint || "–"],
      ["adaptive switches", j.adaptive_switches],
      ["late rows", fmtCount(j.late_rows)],
      ["bad values", fmtCount(j.bad_values)],
    ];
    if (j.total_rows !== null && j.total_rows !== undefined) facts.push(["total rows", fmtCount(j.total_rows)]);
    for (const [k, v] of facts) {
      const div = html("div");
      div.appendChild(html("dt", null, k));
      div.appendChild(html("dd", null, v));
      dl.appendChild(div);
    }
  }

  // aggregateOperators folds the per-subtask rows into one per operator, in graph order: rates and counts summed,
  // busy and backpressure the worst subtask's (what Flink colors a vertex by), the watermark the smallest (none
  // while a subtask has none). Operators only the edges name (a job not running) get their id as label.
  function aggregateOperators(subtasks, edges) {
    const byId = new Map();
    const order = [];
    for (const s of subtasks) {
      let a = byId.get(s.operator_id);
      if (!a) {
        a = {
          id: s.operator_id, label: s.label || s.operator_id, kind: s.kind, parallelism: s.parallelism,
          subtasks: 0, rowsIn: 0, rowsOut: 0, inPerSec: 0, outPerSec: 0, busy: 0, bp: 0,
          watermark: undefined, stateBytes: 0, lateRows: 0, live: true,
        };
        byId.set(s.operator_id, a);
        order.push(a);
      }
      a.subtasks++;
      a.rowsIn += s.rows_in || 0;
      a.rowsOut += s.rows_out || 0;
      a.inPerSec += s.rows_in_per_sec || 0;
      a.outPerSec += s.rows_out_per_sec || 0;
      a.busy = Math.max(a.busy, s.busy_ratio || 0);
      a.bp = Math.max(a.bp, s.backpressure_ratio || 0);
      a.stateBytes += s.state_bytes || 0;
      a.lateRows += s.late_rows || 0;
      if (!s.watermark) a.watermark = null;
      else if (a.watermark !== null && (a.watermark === undefined || s.watermark < a.watermark)) a.watermark = s.watermark;
    }
    for (const e of edges) {
      for (const id of [e.from_operator, e.to_operator]) {
        if (!byId.has(id)) {
          const a = { id: id, label: id, parallelism: null, live: false, watermark: null };
          byId.set(id, a);
          order.push(a);
        }
      }
    }
    for (const a of order) if (a.watermark === undefined) a.watermark = null;
    return order;
  }

  // layout puts each operator in the layer of its longest path from a source (its topological depth), left to
  // right, and orders each layer by the mean position of its inputs to keep edges from crossing.
  function layout(ops, edges) {
    const index = new Map(ops.map((o, i) => [o.id, i]));
    const preds = new Map(ops.map((o) => [o.id, []]));
    const succs = new Map(ops.map((o) => [o.id, []]));
    for (const e of edges) {
      if (!index.has(e.from_operator) || !index.has(e.to_operator)) continue;
      preds.get(e.to_operator).push(e.from_operator);
      succs.get(e.from_operator).push(e.to_operator);
    }
    const depth = new Map();
    const indeg = new Map(ops.map((o) => [o.id, preds.get(o.id).length]));
    const queue = ops.filter((o) => indeg.get(o.id) === 0).map((o) => o.id);
    for (const id of queue) depth.set(id, 0);
    while (queue.length) {
      const id = queue.shift();
      for (const s of succs.get(id)) {
        depth.set(s, Math.max(depth.get(s) || 0, depth.get(id) + 1));
        indeg.set(s, indeg.get(s) - 1);
        if (indeg.get(s) === 0) queue.push(s);
      }
    }
    let maxDepth = 0;
    for (const d of depth.values()) maxDepth = Math.max(maxDepth, d);
    for (const o of ops) if (!depth.has(o.id)) depth.set(o.id, ++maxDepth); // a cycle: cannot happen, but show it
    // An operator that is not a source moves right up to its first consumer's layer minus one, so that an edge
    // skipping layers (q5's window aggregate straight into the join) does not run behind the operators between.
    for (let i = ops.length - 1; i >= 0; i--) {
      for (const o of ops) {
        const ss = succs.get(o.id);
        if (!preds.get(o.id).length || !ss.length) continue;
        const limit = Math.min(...ss.map((s) => depth.get(s))) - 1;
        if (limit > depth.get(o.id)) depth.set(o.id, limit);
      }
    }
    const layers = [];
    for (const o of ops) {
      const d = depth.get(o.id);
      while (layers.length <= d) layers.push([]);
      layers[d].push(o.id);
    }
    const pos = new Map();
    layers.forEach((layer, li) => {
      if (li > 0) {
        const key = (id) => {
          const ps = preds.get(id).filter((p) => pos.has(p));
          return ps.length ? ps.reduce((s, p) => s + pos.get(p), 0) / ps.length : index.get(id);
        };
        const keys = new Map(layer.map((id) => [id, key(id)]));
        layer.sort((a, b) => keys.get(a) - keys.get(b) || index.get(a) - index.get(b));
      }
      layer.forEach((id, i) => pos.set(id, i));
    });
    return { layers: layers, depth: depth, pos: pos };
  }

  const NODE_W = 164, NODE_H = 92, COL_GAP = 58, ROW_GAP = 30, PAD = 16;
  const LABEL_MAX = 20; // characters of an operator's label a node shows (the full label is its title)

  function renderGraph(ops, edges) {
    const g = $("graph");
    clear(g);
    if (!ops.length) {
      setAttrs(g, { width: 400, height: 40, viewBox: "0 0 400 40" });
      g.appendChild(svg("text", { x: PAD, y: 24, class: "muted" }, "no operators (the job is not running)"));
      return;
    }
    const { layers, depth, pos } = layout(ops, edges);
    const rows = Math.max(...layers.map((l) => l.length));
    const width = PAD * 2 + layers.length * NODE_W + (layers.length - 1) * COL_GAP;
    const height = PAD * 2 + rows * NODE_H + (rows - 1) * ROW_GAP;
    setAttrs(g, { width: width, height: height, viewBox: "0 0 " + width + " " + height });
    const xy = new Map();
    for (const o of ops) {
      const li = depth.get(o.id);
      const n = layers[li].length;
      const offset = ((rows - n) * (NODE_H + ROW_GAP)) / 2;
      xy.set(o.id, { x: PAD + li * (NODE_W + COL_GAP), y: PAD + offset + pos.get(o.id) * (NODE_H + ROW_GAP) });
    }

    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }));
    defs.appendChild(marker);
    g.appendChild(defs);

    // Parallel edges between the same two operators (a self-join's two inputs) are fanned out.
    const seen = new Map();
    for (const e of edges) {
      const a = xy.get(e.from_operator), b = xy.get(e.to_operator);
      if (!a || !b) continue;
      const k = e.from_operator + "\u0000" + e.to_operator;
      const nth = seen.get(k) || 0;
      seen.set(k, nth + 1);
      const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2 + nth * 12;
      const x2 = b.x, y2 = b.y + NODE_H / 2 + nth * 12;
      const mx = (x1 + x2) / 2;
      const ge = svg("g", { class: "edge", "data-from": e.from_operator, "data-to": e.to_operator, "data-exchange": e.exchange });
      ge.appendChild(svg("path", { d: "M " + x1 + " " + y1 + " C " + mx + " " + y1 + ", " + mx + " " + y2 + ", " + x2 + " " + y2, "marker-end": "url(#arrow)" }));
      const ly = (y1 + y2) / 2 - 5;
      // "forward[]" reads as "forward": the keys only mean something for hash.
      ge.appendChild(svg("text", { x: mx, y: ly, class: "exchange", "text-anchor": "middle" }, String(e.exchange).replace(/\[\]$/, "")));
      g.appendChild(ge);
    }

    for (const o of ops) {
      const p = xy.get(o.id);
      const gn = svg("g", {
        class: "node", "data-operator": o.id, "data-label": o.label, "data-parallelism": o.parallelism,
        "data-backpressure": o.live ? o.bp.toFixed(3) : null, transform: "translate(" + p.x + "," + p.y + ")",
      });
      gn.appendChild(svg("title", null, o.label + " (" + o.id + ")" + (o.live ? "\nbackpressure " + fmtPct(o.bp) + ", busy " + fmtPct(o.busy) : "")));
      gn.appendChild(svg("rect", { class: "box", width: NODE_W, height: NODE_H, rx: 6, fill: o.live ? bpColor(o.bp) : bpColor(null) }));
      gn.appendChild(svg("text", { class: "label", x: 10, y: 18 }, truncate(o.label, LABEL_MAX)));
      gn.appendChild(svg("text", { class: "meta", x: 10, y: 34 }, truncate(o.id, 16) + (o.parallelism ? " · p=" + o.parallelism : "")));
      if (o.live) {
        gn.appendChild(svg("text", { class: "rates", x: 10, y: 50 }, "in " + fmtCount(o.inPerSec) + "/s · out " + fmtCount(o.outPerSec) + "/s"));
        gn.appendChild(svg("text", { class: "bp", x: 10, y: 66 }, "backpr. " + fmtPct(o.bp) + " · busy " + fmtPct(o.busy)));
        gn.appendChild(svg("text", { class: "wm", x: 10, y: 82 }, "wm " + fmtTime(o.watermark, true)));
      }
      g.appendChild(gn);
    }
  }

  function renderOperators(ops) {
    const tbody = $("operators").tBodies[0];
    clear(tbody);
    for (const o of ops) {
      const tr = html("tr", { "data-operator": o.id });
      tr.appendChild(td(o.id));
      tr.appendChild(td(o.label));
      tr.appendChild(td(o.parallelism === null ? "–" : o.parallelism, "num"));
      tr.appendChild(td(o.live ? fmtCount(o.rowsIn) : "–", "num"));
      tr.appendChild(td(o.live ? fmtCount(o.inPerSec) : "–", "num"));
      tr.appendChild(td(o.live ? fmtCount(o.outPerSec) : "–", "num"));
      tr.appendChild(td(o.live ? fmtPct(o.busy) : "–", "num"));
      const bp = td(o.live ? fmtPct(o.bp) : "–", "num");
      if (o.live) {
        const chip = html("span", { class: "chip" });
        chip.style.background = bpColor(o.bp); // CSSOM, which the CSP allows (a style attribute it would not)
        bp.prepend(chip);
      }
      tr.appendChild(bp);
      tr.appendChild(td(fmtTime(o.watermark, true)));
      tr.appendChild(td(o.live ? fmtBytes(o.stateBytes) : "–", "num"));
      tr.appendChild(td(o.live ? fmtCount(o.lateRows) : "–", "num"));
      tbody.appendChild(tr);
    }
  }

  // ---- checkpoints ----

  const CK_W = 1000, CK_H = 250, CK_L = 64, CK_R = 70, CK_T = 24, CK_B = 34;

  // outcomeClass is the CSS class of a checkpoint's outcome: completed, failed (ABORTED too) or pending.
  function outcomeClass(outcome) {
    const o = String(outcome || "").toLowerCase();
    if (o === "completed") return "completed";
    if (o === "in_progress") return "pending";
    return "failed";
  }

  function renderCheckpointChart(cks) {
    const g = $("checkpoints");
    clear(g);
    setAttrs(g, { width: CK_W, height: CK_H, viewBox: "0 0 " + CK_W + " " + CK_H });
    const plotW = CK_W - CK_L - CK_R, plotH = CK_H - CK_T - CK_B;
    g.appendChild(svg("rect", { class: "plot", x: CK_L, y: CK_T, width: plotW, height: plotH }));
    if (!cks.length) {
      g.appendChild(svg("text", { x: CK_L + 12, y: CK_T + 24, class: "muted" }, "no checkpoints yet"));
      return;
    }
    const maxDur = niceCeil(Math.max(...cks.map((c) => c.duration_ms || 0)));
    const maxSize = niceCeil(Math.max(...cks.map((c) => c.bytes_persisted || 0)));
    const step = plotW / Math.max(cks.length, 10);
    const barW = Math.max(2, step * 0.7);
    const yDur = (v) => CK_T + plotH - (plotH * (v || 0)) / maxDur;
    const ySize = (v) => CK_T + plotH - (plotH * (v || 0)) / maxSize;

    // axes: duration on the left, size on the right, three ticks each
    for (const f of [0, 0.5, 1]) {
      const y = CK_T + plotH - plotH * f;
      g.appendChild(svg("line", { class: "grid", x1: CK_L, x2: CK_L + plotW, y1: y, y2: y }));
      g.appendChild(svg("text", { class: "axis", x: CK_L - 6, y: y + 4, "text-anchor": "end" }, fmtMs(maxDur * f)));
      g.appendChild(svg("text", { class: "axis size-axis", x: CK_L + plotW + 6, y: y + 4 }, fmtBytes(maxSize * f)));
    }
    g.appendChild(svg("text", { class: "axis", x: CK_L, y: CK_H - 4 }, "checkpoint id"));
    g.appendChild(svg("text", { class: "axis", x: 4, y: 12 }, "duration"));
    g.appendChild(svg("text", { class: "axis size-axis", x: CK_W - 4, y: 12, "text-anchor": "end" }, "size persisted"));

    const labelEvery = Math.ceil(cks.length / 20);
    const points = [];
    cks.forEach((c, i) => {
      const cx = CK_L + step * i + step / 2;
      const y = Math.min(yDur(c.duration_ms), CK_T + plotH - 4); // a 0 ms checkpoint still shows
      const outcome = outcomeClass(c.outcome);
      const failed = outcome !== "completed";
      const r = svg("rect", {
        class: "ckpt " + (outcome === "completed" ? String(c.mode || "").toLowerCase() : outcome),
        "data-checkpoint": c.checkpoint_id, "data-mode": c.mode, "data-outcome": c.outcome,
        x: (cx - barW / 2).toFixed(1), y: y.toFixed(1), width: barW.toFixed(1), height: (CK_T + plotH - y).toFixed(1),
      });
      r.appendChild(svg("title", null, "checkpoint " + c.checkpoint_id + " (" + c.mode + ", " + c.outcome + ")\n" +
        "triggered " + fmtTime(c.trigger_time) + "\nduration " + fmtMs(c.duration_ms) + ", align " + fmtMs(c.align_ms) +
        "\npersisted " + fmtBytes(c.bytes_persisted) + ", in-flight " + fmtBytes(c.inflight_bytes) + (c.reason ? "\n" + c.reason : "")));
      g.appendChild(r);
      if (i % labelEvery === 0) {
        g.appendChild(svg("text", { class: "axis", x: cx, y: CK_T + plotH + 14, "text-anchor": "middle" }, c.checkpoint_id));
      }
      if (!failed) points.push([cx, ySize(c.bytes_persisted), c]);
    });
    if (points.length) {
      g.appendChild(svg("polyline", { class: "size", points: points.map((p) => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" ") }));
      for (const [x, y, c] of points) {
        const dot = svg("circle", { class: "size", cx: x.toFixed(1), cy: y.toFixed(1), r: 3, "data-checkpoint": c.checkpoint_id });
        dot.appendChild(svg("title", null, "checkpoint " + c.checkpoint_id + ": " + fmtBytes(c.bytes_persisted)));
        g.appendChild(dot);
      }
    }
  }

  function renderCheckpointTable(cks) {
    const tbody = $("checkpoint-table").tBodies[0];
    clear(tbody);
    for (let i = cks.length - 1; i >= 0; i--) { // newest first
      const c = cks[i];
      const outcome = outcomeClass(c.outcome);
      const tr = html("tr", { "data-checkpoint": c.checkpoint_id, class: outcome === "completed" ? null : outcome });
      tr.appendChild(td(c.checkpoint_id, "num"));
      tr.appendChild(td(c.mode));
      tr.appendChild(td(fmtTime(c.trigger_time, true)));
      tr.appendChild(td(fmtMs(c.duration_ms), "num"));
      tr.appendChild(td(fmtMs(c.align_ms), "num"));
      tr.appendChild(td(fmtBytes(c.bytes_persisted), "num"));
      tr.appendChild(td(fmtBytes(c.inflight_bytes), "num"));
      tr.appendChild(td(c.outcome, "outcome-" + outcome));
      tr.appendChild(td(c.reason || ""));
      tbody.appendChild(tr);
    }
  }

  window.addEventListener("hashchange", navigate);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", navigate);
  else navigate();
})();
