// mcpfleet lab: the page's logic. Vanilla JS; every figure comes from the
// server's /api/run, which runs the simulator in-process.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const STARS_KEY = "mcpfleet.lab.stars";

  // FIGURES are the tiles, in the order of docs/LAB.md: JSON key, label, format.
  const FIGURES = [
    ["calls_issued", "Calls issued", "int"],
    ["completed", "Completed", "int"],
    ["failed", "Failed (given up)", "int"],
    ["duplicate_mutations", "Duplicate mutations", "int"],
    ["executions_killed", "Executions killed", "int"],
    ["idle_cuts", "Streams cut by idle timeout", "int"],
    ["resumes", "Resumes (Last-Event-ID)", "int"],
    ["not_found", "404s", "int"],
    ["reinitializations", "Re-initializations", "int"],
    ["latency_p50_s", "Latency p50", "s"],
    ["latency_p95_s", "Latency p95", "s"],
    ["latency_p99_s", "Latency p99", "s"],
    ["refused", "429s (limits)", "int"],
    ["refused_others", "429s to other clients", "int"],
    ["capacity_waits", "Waits for a replica's place", "int"],
    ["capacity_refused", "503s (replicas full)", "int"],
    ["unknown_tool", "Unknown tool (failed)", "int"],
    ["runaway_admitted_rate", "Runaway agent admitted", "rate"],
    ["utilization", "Utilization", "pct"],
    ["replica_seconds", "Replica-seconds (cost)", "int1"],
    ["replicas", "Per replica: utilization, longest queue", "replicas"],
  ];
  const FIELDS = ["protocol", "routing", "replicas", "idle_timeout_s", "keep_alive_s", "drain_s",
    "gateways", "limit_store", "limit_rate", "limit_burst", "limit_concurrency", "runaway_rate",
    "max_inflight", "queue_timeout_s", "new_tool_share", "tools_refresh_s"];
  const NUMBERS = ["idle_timeout_s", "keep_alive_s", "drain_s", "limit_rate", "runaway_rate", "queue_timeout_s",
    "new_tool_share", "tools_refresh_s"];
  const INTEGERS = ["limit_burst", "limit_concurrency", "max_inflight"];
  const SLIDERS = ["replicas", "gateways"];
  const TOGGLES = ["slow_tools", "deploy", "hot_client", "runaway", "new_tool"];
  const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2",
    "#be185d", "#4d7c0f", "#7c3aed", "#b45309", "#0f766e", "#6b7280"];
  const MARKS = [
    ["cuts", "idle cut", "#d97706"], ["not_found", "404", "#7c3aed"],
    ["failures", "failure", "#dc2626"], ["duplicate_mutations", "duplicate mutation", "#be185d"],
    ["killed", "killed", "#111827"], ["refused", "429", "#0891b2"],
  ];

  const STRIP = ["cut", "404", "fail", "dup", "kill", "429"];

  const state = {
    scenario: null, defaults: null, missions: [], selected: 0, active: 0,
    result: null, pinned: null, pinnedResult: null, lastResp: null, real: null,
    changedAt: 0, inFlight: false, pending: false, runs: 0,
  };
  window.labRuns = 0;
  window.labIdle = false;
  window.lastRedrawMs = null;
  window.labRealLoads = 0;

  function bestStars() {
    try { return JSON.parse(localStorage.getItem(STARS_KEY) || "{}") || {}; } catch (e) { return {}; }
  }
  function saveStars(n, stars) {
    const best = bestStars();
    if ((best[n] || 0) < stars) {
      best[n] = stars;
      try { localStorage.setItem(STARS_KEY, JSON.stringify(best)); } catch (e) { /* private mode: not remembered */ }
    }
  }

  async function getJSON(url, opts) {
    const r = await fetch(url, opts);
    const body = await r.json();
    if (!r.ok) {
      const err = new Error(body.error || r.statusText);
      err.field = body.field;
      throw err;
    }
    return body;
  }

  // ---- controls ----
  function readControls() {
    const s = Object.assign({}, state.scenario);
    s.protocol = $("protocol").value;
    s.routing = $("routing").value;
    s.limit_store = $("limit_store").value;
    for (const k of SLIDERS) s[k] = parseInt($(k).value, 10);
    for (const k of NUMBERS) {
      const v = parseFloat($(k).value);
      s[k] = Number.isFinite(v) ? v : 0;
    }
    for (const k of INTEGERS) {
      const v = parseInt($(k).value, 10);
      s[k] = Number.isFinite(v) ? v : 0;
    }
    s.idempotency = $("idempotency").checked;
    for (const k of TOGGLES) s[k] = $(k).getAttribute("aria-pressed") === "true";
    return s;
  }
  function writeControls(s) {
    for (const k of FIELDS) $(k).value = String(s[k]);
    for (const k of SLIDERS) $(k + "-out").textContent = String(s[k]);
    $("idempotency").checked = !!s.idempotency;
    for (const k of TOGGLES) $(k).setAttribute("aria-pressed", s[k] ? "true" : "false");
    $("seed-label").textContent = "seed " + s.seed;
  }

  function changed() {
    state.scenario = readControls();
    for (const k of SLIDERS) $(k + "-out").textContent = String(state.scenario[k]);
    schedule();
  }

  // schedule runs the current scenario; changes made while a run is in
  // flight coalesce into one more run after it.
  function schedule() {
    state.changedAt = performance.now();
    window.labIdle = false;
    if (state.inFlight) { state.pending = true; return; }
    runNow();
  }

  async function runNow() {
    state.inFlight = true;
    state.pending = false;
    const t0 = state.changedAt;
    const scenario = Object.assign({}, state.scenario);
    try {
      const body = { scenario: scenario };
      if (state.active) body.mission = state.active;
      const resp = await getJSON("/api/run", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      if (state.pinned && state.pinned.seed !== scenario.seed) await rerunPinned(scenario.seed);
      state.result = resp.result;
      showError(null);
      draw(resp);
      const ms = performance.now() - t0;
      window.lastRedrawMs = Math.round(ms * 10) / 10;
      $("redraw").textContent = "redrawn in " + Math.round(ms) + " ms";
    } catch (e) {
      showError(e);
    } finally {
      state.inFlight = false;
      state.runs++;
      window.labRuns = state.runs;
      if (state.pending) runNow(); else window.labIdle = true;
    }
  }

  async function rerunPinned(seed) {
    state.pinned = Object.assign({}, state.pinned, { seed: seed });
    const r = await getJSON("/api/run", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ scenario: state.pinned }) });
    state.pinnedResult = r.result;
  }

  function showError(e) {
    const box = $("error");
    document.querySelectorAll("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
    if (!e) { box.hidden = true; box.textContent = ""; return; }
    box.hidden = false;
    box.textContent = "Not run: " + e.message;
    if (e.field && $(e.field)) $(e.field).setAttribute("aria-invalid", "true");
  }

  // ---- drawing ----
  function draw(resp) {
    const r = resp.result;
    state.lastResp = resp;
    drawFigures();
    renderStory(r);
    renderStars(resp.stars);
    renderCompare();
    renderAssumptions(r.assumptions);
  }

  // drawFigures draws what a real run overlays: the tiles and both charts.
  function drawFigures() {
    const r = state.result, real = state.real ? state.real.result : null;
    renderTiles($("tiles"), r, real);
    drawTimeline(r, real);
    drawLatency(r, real);
    window.mcpfleetReal.header(state.real);
  }

  const BAD = ["failed", "duplicate_mutations", "executions_killed", "idle_cuts", "not_found", "refused_others", "unknown_tool"];

  function fmtReplicas(list) {
    if (!list.length) return "—";
    return list.map((x) => x.name + " " + (x.utilization * 100).toFixed(0) + "%/q" + x.longest_queue).join(" · ");
  }

  function fmt(v, kind) {
    switch (kind) {
      case "int": return String(v);
      case "s": return v.toFixed(3) + " s";
      case "pct": return (v * 100).toFixed(1) + "%";
      case "int1": return String(Math.round(v));
      case "rate": return v.toFixed(2) + " /s";
      default: return String(v);
    }
  }

  // renderTiles draws one tile per figure of r and, given a real run, its
  // value beside the simulated one (.real-value).
  function renderTiles(box, r, real) {
    const frag = document.createDocumentFragment();
    for (const [key, label, kind] of FIGURES) {
      const tile = document.createElement("div");
      tile.className = "tile";
      tile.dataset.figure = key;
      const l = document.createElement("div");
      l.className = "label";
      l.textContent = label;
      const v = document.createElement("div");
      v.className = "value";
      if (kind === "replicas") {
        v.textContent = fmtReplicas(r.replicas);
        v.dataset.raw = JSON.stringify(r.replicas);
        tile.classList.add("wide");
      } else {
        v.textContent = fmt(r[key], kind);
        v.dataset.raw = String(r[key]);
        if (BAD.includes(key) && r[key] > 0) tile.classList.add("bad");
      }
      tile.append(l, v);
      if (real) {
        const rv = document.createElement("div");
        rv.className = "real-value";
        rv.textContent = kind === "replicas" ? fmtReplicas(real.replicas) : fmt(real[key], kind);
        rv.dataset.raw = kind === "replicas" ? JSON.stringify(real.replicas) : String(real[key]);
        if (BAD.includes(key) && real[key] > 0) rv.classList.add("bad");
        tile.classList.add("with-real");
        tile.title = label + ": simulated / real";
        tile.append(rv);
      }
      frag.append(tile);
    }
    box.replaceChildren(frag);
  }

  function sentence(list, text) { const li = document.createElement("li"); li.textContent = text; list.push(li); }

  function renderStory(r) {
    const s = r.scenario, out = [];
    const pct = (n) => r.calls_issued ? (100 * n / r.calls_issued).toFixed(1) + "%" : "0%";
    sentence(out, `${r.calls_issued} calls arrived over ${s.traffic_s} s; ${r.completed} were answered and ${r.failed} given up. Half were answered within ${r.latency_p50_s.toFixed(2)} s, 95% within ${r.latency_p95_s.toFixed(2)} s.`);
    if (r.idle_cuts > 0) {
      const fix = s.keep_alive_s > 0 ? `the keep-alive every ${s.keep_alive_s} s is longer than the timeout; one at most ${s.idle_timeout_s} s prevents that` : `a keep-alive at most ${s.idle_timeout_s} s prevents that`;
      sentence(out, `The proxy's ${s.idle_timeout_s} s idle timeout cut ${r.idle_cuts} silent streams; ${fix}.`);
      if (s.protocol === "2026-07-28") sentence(out, `In 2026-07-28 a cut stream cancels its call, so ${r.executions_cancelled} executions were cancelled and re-issued.`);
      else if (r.resumes > 0) sentence(out, `${r.resumes} cut streams were resumed with Last-Event-ID.`);
    } else if (s.slow_tools && s.idle_timeout_s > 0) {
      sentence(out, `No stream was cut: the keep-alive (${s.keep_alive_s} s) beats the ${s.idle_timeout_s} s idle timeout.`);
    }
    if (r.not_found > 0) {
      sentence(out, `${r.not_found} requests reached a replica that did not hold their session and got 404 (${pct(r.calls_with_404)} of calls); the clients re-initialized ${r.reinitializations} times.` +
        (s.protocol === "2025-11-25-local" ? " A shared session store, or routing that keeps a session on its replica, stops that." : ""));
    }
    if (r.executions_killed > 0) sentence(out, `The rolling deploy killed ${r.executions_killed} executions still running when the ${s.drain_s} s drain window ended; a longer window lets them finish.`);
    else if (s.deploy) sentence(out, `The rolling deploy killed nothing: every call finished inside the ${s.drain_s} s drain window.`);
    storyOfNewTool(r, out);
    if (r.duplicate_mutations > 0) sentence(out, `${r.duplicate_mutations} calls mutated state twice because a re-issued call ran again` + (s.idempotency ? "." : "; idempotent tools, or keeping streams from being cut, prevent that."));
    storyOfLimits(r, out);
    if (r.failed > 0) sentence(out, `${r.failed} calls were given up after ${s.max_reissues} re-issues.`);
    const worst = r.replicas.reduce((a, b) => (b.longest_queue > a.longest_queue ? b : a), r.replicas[0]);
    if (worst && worst.longest_queue > 0) sentence(out, `The longest queue was ${worst.longest_queue} calls, at ${worst.name}; waiting counts in latency.`);
    sentence(out, `The fleet cost ${Math.round(r.replica_seconds)} replica-seconds at ${(r.utilization * 100).toFixed(1)}% utilization.`);
    $("story").replaceChildren(...out);
  }

  // storyOfNewTool tells what became of the calls of the tool the deploy adds.
  function storyOfNewTool(r, out) {
    const s = r.scenario;
    if (!s.new_tool) return;
    if (!s.deploy) { sentence(out, "The new tool comes with the rolling deploy: without it no replica serves the tool, and no call asks for it."); return; }
    const watched = s.routing === "mcpfleet" && s.tools_refresh_s > 0;
    if (r.unknown_tool > 0) {
      let text = `${r.unknown_tool} calls of the new tool reached a replica the deploy had not upgraded yet and failed with unknown tool.`;
      if (s.routing === "mcpfleet" && s.protocol === "2025-11-25-local") text += " Their sessions are pinned to the replica that minted them, whatever its tools.";
      else if (s.routing === "mcpfleet" && !watched) text += " The gateway's tool watcher is off (tools refresh 0), so it routes without looking at the replicas' tools.";
      else text += " Tool-aware routing (mcpfleet) sends a call only among the replicas that declare its tool.";
      sentence(out, text);
    } else {
      sentence(out, watched ? "Every call of the new tool reached a replica that serves it: the gateway routed each among the replicas that declare it." : "No call of the new tool reached a replica without it.");
    }
  }

  // storyOfLimits tells what the gateways' limits did, and to the runaway agent.
  function storyOfLimits(r, out) {
    const s = r.scenario;
    const limited = s.limit_rate > 0 || s.limit_concurrency > 0;
    if (s.runaway && r.runaway_client >= 0) {
      let text = `The runaway agent (client ${r.runaway_client}, +${s.runaway_rate} calls/s) got ${r.runaway_admitted_rate.toFixed(2)} calls/s through`;
      if (s.limit_rate > 0) text += `, ${(r.runaway_admitted_rate / s.limit_rate).toFixed(1)}x its ${s.limit_rate}/s limit`;
      text += ".";
      if (limited && s.gateways > 1 && s.limit_store === "local") text += ` Each of the ${s.gateways} gateways keeps its own budget per caller, so the limit is multiplied by the gateways; a shared store gives each caller one budget.`;
      if (!limited) text += " No limit is set.";
      sentence(out, text);
    }
    if (r.refused > 0) {
      sentence(out, `The limits refused ${r.refused} requests with 429; the clients re-sent them after the retry hint, each re-send counting against the ${s.max_reissues} re-issues.` +
        (r.refused_others > 0 ? ` ${r.refused_others} of the 429s went to other clients than the runaway agent.` : ""));
    }
  }

  // phases derives each replica's drain and reboot from the scenario, as
  // the engine runs the deploy: replica i drains when replica i-1 is back up.
  function phases(s) {
    if (!s.deploy) return [];
    const out = [];
    let t = s.deploy_at_s;
    for (let i = 0; i < s.replicas; i++) {
      out.push({ replica: i, drain: [t, t + s.drain_s], down: [t + s.drain_s, t + s.drain_s + s.reboot_s] });
      t += s.drain_s + s.reboot_s;
    }
    return out;
  }

  function setupCanvas(c) {
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth || c.width, h = c.clientHeight || c.height;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = "12px system-ui, sans-serif";
    return { ctx, w, h };
  }

  // seconds is the length of a timeline's series.
  function seconds(tl) { return tl.in_flight.length ? tl.in_flight[0].length : tl.cuts.length; }

  // drawTimeline draws r's in flight per replica and, given a real run, the
  // real series dashed in the same colours on the same axes.
  function drawTimeline(r, real) {
    const canvas = $("timeline");
    const { ctx, w, h } = setupCanvas(canvas);
    const tl = r.timeline, rtl = real ? real.timeline : null;
    const n = Math.max(seconds(tl), rtl ? seconds(rtl) : 0);
    const L = 36, R = 8, T = 8, strip = 16 * MARKS.length, B = 22 + strip;
    const ph = h - T - B;
    let ymax = 10;
    for (const series of tl.in_flight.concat(rtl ? rtl.in_flight : [])) for (const v of series) if (v > ymax) ymax = v;
    const x = (t) => L + (w - L - R) * t / Math.max(n, 1);
    const y = (v) => T + ph - ph * v / ymax;
    // deploy phases
    for (const p of phases(r.scenario)) {
      ctx.fillStyle = "rgba(245, 158, 11, 0.18)";
      ctx.fillRect(x(p.drain[0]), T, x(p.drain[1]) - x(p.drain[0]), ph);
      ctx.fillStyle = "rgba(107, 114, 128, 0.25)";
      ctx.fillRect(x(p.down[0]), T, Math.max(1, x(p.down[1]) - x(p.down[0])), ph);
      ctx.fillStyle = "#92400e";
      ctx.fillText("r" + p.replica, x(p.drain[0]) + 2, T + 12);
    }
    // axes
    ctx.strokeStyle = "#9ca3af";
    ctx.fillStyle = "#374151";
    ctx.beginPath(); ctx.moveTo(L, T); ctx.lineTo(L, T + ph); ctx.lineTo(w - R, T + ph); ctx.stroke();
    ctx.textAlign = "right";
    for (const v of [0, Math.round(ymax / 2), ymax]) ctx.fillText(String(v), L - 4, y(v) + 4);
    ctx.textAlign = "center";
    const step = n > 900 ? 300 : 60;
    for (let t = 0; t <= n; t += step) ctx.fillText(t + " s", x(t), h - 4);
    // lines: the simulated run solid, the real one dashed
    const line = (series, i, dash) => {
      ctx.strokeStyle = COLORS[i % COLORS.length];
      ctx.lineWidth = dash.length ? 1.6 : 1.2;
      ctx.setLineDash(dash);
      ctx.beginPath();
      series.forEach((v, t) => (t ? ctx.lineTo(x(t), y(v)) : ctx.moveTo(x(t), y(v))));
      ctx.stroke();
    };
    tl.in_flight.forEach((series, i) => line(series, i, []));
    if (rtl) rtl.in_flight.forEach((series, i) => line(series, i, [6, 4]));
    ctx.setLineDash([]);
    canvas.dataset.simSeries = String(tl.in_flight.length);
    canvas.dataset.realSeries = String(rtl ? rtl.in_flight.length : 0);
    canvas.setAttribute("aria-label", "In flight per replica over the run" + (rtl ? ", the real run dashed" : ""));
    // the end of the traffic: after it, calls still running finish
    ctx.strokeStyle = "#6b7280";
    ctx.setLineDash([4, 4]);
    ctx.beginPath(); ctx.moveTo(x(r.scenario.traffic_s), T); ctx.lineTo(x(r.scenario.traffic_s), T + ph); ctx.stroke();
    ctx.setLineDash([]);
    // event markers, one strip per kind
    MARKS.forEach(([key, label, color], k) => {
      const yy = T + ph + 6 + 16 * k;
      ctx.fillStyle = "#6b7280";
      ctx.textAlign = "right";
      ctx.font = "10px system-ui, sans-serif";
      ctx.fillText(STRIP[k], L - 4, yy + 9);
      // with a real run, the upper half of the strip is simulated, the lower real
      const bar = (series, top, height) => series.forEach((v, t) => { if (v > 0) ctx.fillRect(x(t), top, Math.max(1.5, x(t + 1) - x(t)), height); });
      ctx.fillStyle = color;
      bar(tl[key] || [], yy, rtl ? 5 : 10);
      if (rtl) {
        ctx.globalAlpha = 0.55;
        bar(rtl[key] || [], yy + 5, 5);
        ctx.globalAlpha = 1;
      }
    });
    renderLegend(r, real);
  }

  function legendItem(color, text) {
    const span = document.createElement("span");
    const sw = document.createElement("i");
    sw.style.background = color;
    span.append(sw, text);
    return span;
  }

  function renderLegend(r, real) {
    const parts = [];
    const sum = (tl, key) => (tl[key] || []).reduce((a, b) => a + b, 0);
    r.timeline.in_flight.forEach((_, i) => parts.push(legendItem(COLORS[i % COLORS.length], r.replicas[i].name + " in flight")));
    if (real) parts.push(legendItem("repeating-linear-gradient(90deg, #374151 0 4px, transparent 4px 6px)", "real run: dashed, lower half of each strip"));
    if (r.scenario.deploy) {
      parts.push(legendItem("rgba(245,158,11,.4)", "draining"), legendItem("rgba(107,114,128,.5)", "rebooting"));
    }
    for (const [key, label, color] of MARKS) {
      const total = sum(r.timeline, key) + (real ? " / " + sum(real.timeline, key) : "");
      parts.push(legendItem(color, label + " (" + total + ")"));
    }
    $("timeline-legend").replaceChildren(...parts);
  }

  // drawLatency places r's percentiles on a log axis and, given a real
  // run, the real ones as dashed lines.
  function drawLatency(r, real) {
    const { ctx, w, h } = setupCanvas($("latency"));
    const pts = [["p50", r.latency_p50_s], ["mean", r.latency_mean_s], ["p95", r.latency_p95_s], ["p99", r.latency_p99_s]];
    const lo = 0.1, hi = Math.max(300, r.latency_p99_s * 1.2, real ? real.latency_p99_s * 1.2 : 0);
    const L = 20, R = 20, yAxis = h - 30;
    const x = (v) => L + (w - L - R) * (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo));
    ctx.strokeStyle = "#9ca3af";
    ctx.fillStyle = "#374151";
    ctx.beginPath(); ctx.moveTo(L, yAxis); ctx.lineTo(w - R, yAxis); ctx.stroke();
    ctx.textAlign = "center";
    for (const t of [0.1, 1, 10, 60, 300]) if (t <= hi) { ctx.fillText(t + " s", x(t), h - 10); ctx.beginPath(); ctx.moveTo(x(t), yAxis); ctx.lineTo(x(t), yAxis + 4); ctx.stroke(); }
    // bar from p50 to p99, the body of the distribution
    ctx.fillStyle = "rgba(37, 99, 235, 0.15)";
    ctx.fillRect(x(r.latency_p50_s), 30, x(r.latency_p99_s) - x(r.latency_p50_s), yAxis - 40);
    pts.sort((a, b) => a[1] - b[1]).forEach(([label, v], i) => {
      ctx.fillStyle = label === "mean" ? "#6b7280" : "#2563eb";
      ctx.fillRect(x(v) - 1.5, 30, 3, yAxis - 34);
      const text = label + " " + v.toFixed(2) + " s";
      const tw = ctx.measureText(text).width;
      ctx.fillText(text, Math.min(Math.max(x(v), L + tw / 2), w - R - tw / 2), i % 2 ? 26 : 12);
    });
    const cap = $("latency-real");
    cap.hidden = !real;
    if (!real) return;
    ctx.strokeStyle = "#92400e";
    ctx.setLineDash([4, 3]);
    for (const v of [real.latency_p50_s, real.latency_p95_s, real.latency_p99_s]) {
      ctx.beginPath(); ctx.moveTo(x(v), 30); ctx.lineTo(x(v), yAxis); ctx.stroke();
    }
    ctx.setLineDash([]);
    cap.textContent = `Real run (dashed): p50 ${real.latency_p50_s.toFixed(2)} s, mean ${real.latency_mean_s.toFixed(2)} s, p95 ${real.latency_p95_s.toFixed(2)} s, p99 ${real.latency_p99_s.toFixed(2)} s.`;
  }

  function renderStars(st) {
    const el = $("stars");
    if (!state.active || !st) { el.textContent = "—"; el.dataset.stars = ""; $("stars-detail").textContent = ""; return; }
    el.textContent = "★".repeat(st.stars) + "☆".repeat(3 - st.stars) + " (" + st.stars + "/3)";
    el.dataset.stars = String(st.stars);
    const met = (st.goal_on_other_seeds || []).filter(Boolean).length;
    $("stars-detail").textContent = `Goal on the mission's seed: ${st.goal_on_mission_seed ? "yes" : "no"}; on the next ${(st.goal_on_other_seeds || []).length} seeds: ${met} met; efficient: ${st.efficient ? "yes" : "no"}.`;
    saveStars(state.active, st.stars);
    renderMissions();
  }

  function renderCompare() {
    const box = $("compare");
    if (!state.pinned || !state.pinnedResult) { box.hidden = true; return; }
    box.hidden = false;
    renderTiles($("tiles-a"), state.pinnedResult);
    renderTiles($("tiles-b"), state.result);
    $("a-desc").textContent = describe(state.pinned);
    $("b-desc").textContent = describe(state.scenario);
    markDiffs();
  }

  function markDiffs() {
    for (const [key] of FIGURES) {
      const a = document.querySelector(`#tiles-a [data-figure="${key}"]`);
      const b = document.querySelector(`#tiles-b [data-figure="${key}"]`);
      const diff = a.querySelector(".value").dataset.raw !== b.querySelector(".value").dataset.raw;
      a.classList.toggle("diff", diff);
      b.classList.toggle("diff", diff);
    }
  }

  function describe(s) {
    const inj = TOGGLES.filter((k) => s[k]).map((k) => k.replace("_", " "));
    const lim = s.limit_rate > 0 || s.limit_concurrency > 0 ? `, limits ${s.limit_rate || "-"}/s ${s.limit_concurrency || "-"} in flight (${s.limit_store})` : "";
    return `${s.protocol}, ${s.routing}, ${s.replicas} replicas, ${s.gateways} gateway${s.gateways > 1 ? "s" : ""}${lim}, idle ${s.idle_timeout_s} s, keep-alive ${s.keep_alive_s || "off"}, drain ${s.drain_s} s${s.idempotency ? ", idempotent" : ""}${inj.length ? "; " + inj.join(", ") : ""}`;
  }

  function renderAssumptions(list) {
    const box = $("assumptions");
    if (box.childElementCount) return;
    box.replaceChildren(...list.map((a) => { const li = document.createElement("li"); li.textContent = a; return li; }));
  }

  // ---- a real run ----
  // loadReal checks file (mcpfleet load --json) and draws it beside the
  // simulated run; a file that is not a result changes nothing but the
  // error shown.
  async function loadReal(file) {
    try {
      const real = await window.mcpfleetReal.read(file, FIGURES);
      state.real = real;
      $("real-clear").disabled = false;
      showRealError(null);
      if (state.result) drawFigures();
    } catch (e) {
      showRealError(e);
    } finally {
      $("real-file").value = "";
      window.labRealLoads++;
    }
  }

  function showRealError(e) {
    const box = $("real-error");
    box.hidden = !e;
    box.textContent = e ? "Not loaded: " + e.message : "";
  }

  // ---- missions ----
  function unlocked(n) { return n === 1 || (bestStars()[n - 1] || 0) >= 1; }

  function renderMissions() {
    const best = bestStars();
    const items = state.missions.map((m) => {
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.id = "mission-" + m.number;
      const open = unlocked(m.number);
      b.disabled = !open;
      const stars = best[m.number] || 0;
      b.textContent = `${m.number}. ${m.name} ${open ? "★".repeat(stars) + "☆".repeat(3 - stars) : "(locked)"}`;
      b.setAttribute("aria-current", state.selected === m.number ? "true" : "false");
      b.addEventListener("click", () => selectMission(m.number));
      li.append(b);
      return li;
    });
    $("mission-list").replaceChildren(...items);
  }

  function selectMission(n) {
    state.selected = n;
    const m = state.missions[n - 1];
    $("mission-detail").hidden = false;
    $("mission-name").textContent = `${m.number}. ${m.name}` + (state.active === n ? " (playing)" : "");
    $("mission-goal").textContent = m.goal;
    $("mission-efficient").textContent = m.efficient;
    renderMissions();
  }

  function loadMission() {
    const m = state.missions[state.selected - 1];
    if (!m) return;
    state.active = m.number;
    state.scenario = Object.assign({}, m.broken);
    writeControls(state.scenario);
    selectMission(m.number);
    schedule();
  }

  // ---- wiring ----
  function wire() {
    const form = $("form");
    form.addEventListener("submit", (ev) => ev.preventDefault());
    // the sliders re-run on "input", as they move
    form.addEventListener("change", (ev) => { if (!SLIDERS.includes(ev.target.id)) changed(); });
    for (const k of SLIDERS) $(k).addEventListener("input", changed);
    for (const k of TOGGLES) {
      $(k).addEventListener("click", (ev) => {
        const b = ev.currentTarget;
        b.setAttribute("aria-pressed", b.getAttribute("aria-pressed") === "true" ? "false" : "true");
        changed();
      });
    }
    $("new-seed").addEventListener("click", () => {
      const a = new Uint32Array(1);
      crypto.getRandomValues(a);
      state.scenario.seed = a[0] + 1;
      writeControls(state.scenario);
      schedule();
    });
    $("reset").addEventListener("click", () => {
      state.scenario = Object.assign({}, state.defaults, { seed: state.scenario.seed });
      writeControls(state.scenario);
      schedule();
    });
    $("pin").addEventListener("click", () => {
      state.pinned = Object.assign({}, state.scenario);
      state.pinnedResult = state.result;
      $("unpin").disabled = false;
      renderCompare();
    });
    $("unpin").addEventListener("click", () => {
      state.pinned = null;
      state.pinnedResult = null;
      $("unpin").disabled = true;
      renderCompare();
    });
    $("real-file").addEventListener("change", (ev) => { if (ev.target.files.length) loadReal(ev.target.files[0]); });
    $("real-clear").addEventListener("click", () => {
      state.real = null;
      $("real-clear").disabled = true;
      showRealError(null);
      if (state.result) drawFigures();
    });
    $("load-mission").addEventListener("click", loadMission);
    $("leave-mission").addEventListener("click", () => {
      state.active = 0;
      if (state.selected) selectMission(state.selected);
      schedule();
    });
    let resize = 0;
    window.addEventListener("resize", () => {
      clearTimeout(resize);
      resize = setTimeout(() => {
        const real = state.real ? state.real.result : null;
        if (state.result) { drawTimeline(state.result, real); drawLatency(state.result, real); }
      }, 100);
    });
  }

  async function start() {
    wire();
    try {
      const [defaults, missions] = await Promise.all([getJSON("/api/defaults"), getJSON("/api/missions")]);
      state.defaults = defaults;
      state.missions = missions;
      state.scenario = Object.assign({}, defaults);
      writeControls(state.scenario);
      renderMissions();
      schedule();
    } catch (e) {
      showError(e);
    }
  }

  start();
})();
