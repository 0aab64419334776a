// mcpfleet lab: a real run's result (mcpfleet load --json) beside the
// simulated one. read checks a file with the server (POST /api/validate,
// sim.ResultSchema) and against the tiles' figures; header writes its run
// member. app.js draws it on the tiles and charts.
"use strict";

window.mcpfleetReal = (function () {
  const $ = (id) => document.getElementById(id);
  const MAX_BYTES = 4 << 20; // the server's bound, lab.MaxResultBody

  // read validates file and returns {result, run, mission, goalMet, name},
  // or throws an Error saying why the file is not a result.
  async function read(file, figures) {
    if (file.size > MAX_BYTES) throw new Error(`${file.name} is over 4 MiB`);
    const text = await file.text();
    const resp = await fetch("/api/validate", { method: "POST", headers: { "Content-Type": "application/json" }, body: text });
    let body;
    try { body = await resp.json(); } catch (e) { throw new Error(`checking ${file.name}: answer ${resp.status}`); }
    if (!resp.ok) throw new Error(body.error || resp.statusText);
    const doc = JSON.parse(text);
    const wrapped = doc.result !== undefined;
    const r = wrapped ? doc.result : doc;
    for (const [key] of figures) {
      if (r[key] === undefined) throw new Error(`${file.name} has no figure ${key}`);
    }
    let mission = 0;
    if (wrapped) mission = typeof doc.mission === "number" ? doc.mission : doc.mission.number;
    return { result: r, run: r.run || null, mission: mission, goalMet: doc.goal_met, name: file.name };
  }

  function item(text) { const li = document.createElement("li"); li.textContent = text; return li; }

  // header shows real's run member, or hides the box when real is null.
  function header(real) {
    const box = $("real-run");
    if (!real) { box.hidden = true; return; }
    box.hidden = false;
    $("real-name").textContent = real.name;
    const run = real.run;
    let mission = "";
    if (real.mission) mission = ` Mission ${real.mission}` + (real.goalMet === undefined ? "." : real.goalMet ? ": goal met." : ": goal not met.");
    if (!run) {
      $("real-desc").textContent = "This file has no run member: it is a simulator's result." + mission;
      $("real-cpu").textContent = "";
      $("real-notes").replaceChildren();
      return;
    }
    const fleet = run.fleet > 0 ? `${run.fleet} replica${run.fleet > 1 ? "s" : ""} started by the load generator` : "an existing endpoint";
    $("real-desc").textContent = `${run.url}: ${fleet}; speed ${run.speed}x (model seconds per real second); era ${run.era}; ${run.wall_s} s of wall time.` + mission;
    const cpu = run.cpu;
    $("real-cpu").textContent = cpu ? `CPU (${cpu.cores} cores, ${(cpu.machine_busy * 100).toFixed(0)}% busy): ${cpu.verdict.text}` : "";
    $("real-notes").replaceChildren(...(run.notes || []).map(item));
  }

  return { read: read, header: header };
})();
