// The explorable timeline (pages/timeline.py draws it through components.v1): per rank its CPU
// threads as nested slices above its GPU streams, drawn on a canvas. Wheel zooms around the
// pointer, drag pans, click selects; the view is redrawn at once from the slices at hand, and
// the window is sent back to Python, which answers with the detail of the new window.
// Streamlit's component protocol is spoken directly (no npm library, nothing fetched).
"use strict";

const ROW = 16, GPU_ROW = 18, GAP = 6, AXIS = 26, GUTTER = 200, MAX_VIEW = 620;
const NAME_MIN_PX = 36, SEND_AFTER_MS = 140;
const CLASS_COLOURS = {
  gemm: "#4c78a8", attention: "#e45756", conv: "#72b7b2", elementwise: "#54a24b",
  reduction: "#b279a2", norm: "#9d755d", softmax: "#ff9da6", embedding: "#bab0ac",
  optimizer: "#eeca3b", copy: "#79706e", comm: "#f58518", memcpy: "#2a9d8f",
  memset: "#8d6cab", other: "#a0a0a0",
};
const KIND_COLOURS = {
  op: "#5d7fa3", annotation: "#c98f2d", module: "#8a6db8", python: "#7a9a9f", runtime: "#9b9b9b",
};

const canvas = document.getElementById("plot");
const ctx = canvas.getContext("2d");
const wrap = document.getElementById("wrap");
const tip = document.getElementById("tip");
const state = {
  args: null, view: null, seq: 0, sentAt: {}, viewId: null, depth: {}, lanes: [],
  theme: { textColor: "#31333f", backgroundColor: "#ffffff" }, drag: null, timer: null,
  loadedMs: null, hits: [], sel: null, timings: [],
};
window.timeline = state;  // what is drawn and how long it took, for tests and benchmarks

// ---------------------------------------------------------------- Streamlit's protocol
function post(type, data) {
  window.parent.postMessage({ isStreamlitMessage: true, type, ...data }, "*");
}
function sendValue() {
  state.seq += 1;
  state.sentAt[state.seq] = performance.now();
  const [t0, t1] = state.view;
  post("streamlit:setComponentValue", {
    value: { t0, t1, seq: state.seq, sel: state.sel }, dataType: "json",
  });
}
window.addEventListener("message", (event) => {
  if (event.data.type !== "streamlit:render") return;
  if (event.data.theme) {
    state.theme = event.data.theme;
    document.body.style.color = state.theme.textColor;
  }
  receive(event.data.args.payload);
});
post("streamlit:componentReady", { apiVersion: 1 });

// ----------------------------------------------------------------------- data arrives
function receive(p) {
  const arrived = performance.now();
  state.args = p;
  if (p.view_id !== state.viewId || !state.view) {  // Python moved the view (link, search)
    state.viewId = p.view_id;
    state.view = [p.window[0], p.window[1]];
    state.sel = p.selected;
  }
  const answered = p.answers === state.seq && state.sentAt[p.answers] !== undefined;
  for (const [lane, d] of p.cpu.depth.map((d, i) => [p.cpu.lane[i], d])) {
    state.depth[lane] = Math.max(state.depth[lane] || 0, d);  // lanes only grow: no jumps
  }
  layout();
  draw();
  if (answered) {  // the time a zoom step took, from the request to the new detail drawn
    state.loadedMs = performance.now() - state.sentAt[p.answers];
    state.timings.push({ seq: p.answers, total: state.loadedMs,
      wait: arrived - state.sentAt[p.answers], draw: performance.now() - arrived });
    document.getElementById("status").textContent += ` · loaded in ${state.loadedMs.toFixed(0)} ms`;
  }
  legend();
}

function layout() {
  const p = state.args;
  let y = AXIS;
  state.lanes = p.lanes.map((lane, i) => {
    const h = lane.kind === "cpu" ? ((state.depth[i] || 0) + 1) * ROW : GPU_ROW;
    const out = { ...lane, y, h };
    y += h + GAP;
    return out;
  });
  const width = Math.max(wrap.clientWidth || document.body.clientWidth, 400);
  const ratio = window.devicePixelRatio || 1;
  canvas.width = width * ratio;
  canvas.height = y * ratio;
  canvas.style.width = width + "px";
  canvas.style.height = y + "px";
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  wrap.style.maxHeight = MAX_VIEW + "px";
  post("streamlit:setFrameHeight", {
    height: Math.min(y, MAX_VIEW) + document.getElementById("bar").offsetHeight +
      document.getElementById("legend").offsetHeight + 24,
  });
}

// ---------------------------------------------------------------------------- drawing
function xOf(t) {
  const [v0, v1] = state.view;
  return GUTTER + ((t - v0) / (v1 - v0)) * (canvas.clientWidth - GUTTER - 8);
}
function tOf(x) {
  const [v0, v1] = state.view;
  return v0 + ((x - GUTTER) / (canvas.clientWidth - GUTTER - 8)) * (v1 - v0);
}
function niceStep(span) {
  const raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
}
function fmtMs(us) {
  const ms = us / 1000, a = Math.abs(ms);
  if (a === 0) return "0";
  return a >= 100 ? ms.toFixed(0) : a >= 1 ? ms.toFixed(2) : ms.toFixed(4);
}
let charPx = 0;  // the font's mean character width: measuring each label cost 0.3 s a frame
function clipText(text, px) {
  if (!charPx) charPx = ctx.measureText("abcdefghijklmnopqrstuvwxyz_:0123456789").width / 38;
  const fit = Math.floor(px / charPx);
  if (text.length <= fit) return text;
  return fit > 2 ? text.slice(0, fit - 1) + "…" : "";
}

function draw() {
  const p = state.args, names = p.names, [v0, v1] = state.view;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  ctx.fillStyle = state.theme.backgroundColor;
  ctx.fillRect(0, 0, w, h);
  ctx.font = "11px system-ui, sans-serif";
  charPx = 0;
  ctx.textBaseline = "middle";
  // axis
  const step = niceStep(v1 - v0);
  ctx.fillStyle = state.theme.textColor;
  ctx.strokeStyle = "rgba(128,128,128,.25)";
  for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
    const x = xOf(t);
    ctx.beginPath(); ctx.moveTo(x, AXIS - 4); ctx.lineTo(x, h); ctx.stroke();
    ctx.fillText(fmtMs(t) + " ms", x + 2, 9);
  }
  // lanes and their labels
  for (const lane of state.lanes) {
    ctx.fillStyle = lane.kind === "cpu" ? "rgba(128,128,128,.07)" : "rgba(76,120,168,.07)";
    ctx.fillRect(GUTTER, lane.y, w - GUTTER, lane.h);
    ctx.fillStyle = state.theme.textColor;
    ctx.fillText(clipText(lane.label + (lane.kind === "cpu" ? " (CPU)" : " (GPU)"), GUTTER - 8),
      4, lane.y + Math.min(lane.h, ROW) / 2);
  }
  // busy grid under the GPU slices when the window holds too many to draw one by one
  if (p.grid) {
    const g = p.grid;
    ctx.fillStyle = "rgb(76,120,168)";
    for (let i = 0; i < g.lane.length; i++) {
      const lane = state.lanes[g.lane[i]];
      if (!lane) continue;
      const x0 = xOf(g.ts[i]), x1 = xOf(g.ts[i] + g.width);
      if (x1 < GUTTER || x0 > w) continue;
      ctx.globalAlpha = 0.15 + 0.7 * g.busy[i];  // one colour, no style string to parse
      ctx.fillRect(Math.max(x0, GUTTER), lane.y, Math.max(x1 - x0, 1), lane.h);
    }
    ctx.globalAlpha = 1;
  }
  const highlight = new Set(p.highlight.names);
  const needle = (p.search || "").toLowerCase();
  const drawn = [];
  state.hits = [];
  // A row's last filled pixel: a slice under a pixel wide inside it is not drawn again
  // (zoomed out, 20 000 slices fall on a few hundred pixels; software canvas pays per fill).
  const filled = new Map();
  const slice = (kind, i, lane, y, hgt, colour, name) => {
    const ts = p[kind].ts[i], dur = p[kind].dur[i];
    if (ts > v1 || ts + dur < v0) return;
    const x0 = Math.max(xOf(ts), GUTTER), x1 = Math.min(xOf(ts + dur), w);
    const width = Math.max(x1 - x0, 1);
    const text = names[name];
    const marked = highlight.has(text) || (needle && text.toLowerCase().includes(needle));
    if (width <= 1 && !marked && filled.get(y) === Math.floor(x0)) return;
    filled.set(y, Math.floor(x0 + width - 0.001));
    ctx.fillStyle = colour;
    ctx.fillRect(x0, y + 1, width, hgt - 2);
    state.hits.push([x0, y, width, hgt, kind, i]);
    if (marked) {
      ctx.strokeStyle = highlight.has(text) ? "#ff7f0e" : "#f2c12e";
      ctx.lineWidth = 2;
      ctx.strokeRect(x0, y + 1, width, hgt - 2);
      ctx.lineWidth = 1;
    }
    if (width >= NAME_MIN_PX) {
      const label = clipText(text, width - 6);
      if (label) {
        ctx.fillStyle = "#fff";
        ctx.fillText(label, x0 + 3, y + hgt / 2);
        drawn.push(text);
      }
    }
  };
  const cpu = p.cpu;
  for (let i = 0; i < cpu.lane.length; i++) {
    const lane = state.lanes[cpu.lane[i]];
    if (lane) slice("cpu", i, lane, lane.y + cpu.depth[i] * ROW, ROW,
      KIND_COLOURS[p.cpu_kinds[cpu.kind[i]]], cpu.name[i]);
  }
  const gpu = p.gpu;
  for (let i = 0; i < gpu.lane.length; i++) {
    const lane = state.lanes[gpu.lane[i]];
    if (lane) slice("gpu", i, lane, lane.y, GPU_ROW,
      CLASS_COLOURS[p.classes[gpu.cls[i]]] || CLASS_COLOURS.other, gpu.name[i]);
  }
  // step boundaries across each rank's lanes
  ctx.setLineDash([4, 3]);
  for (const s of p.steps) {
    const x = xOf(s.ts);
    if (x < GUTTER || x > w) continue;
    const mine = state.lanes.filter((l) => l.rank === s.rank);
    if (!mine.length) continue;
    const top = mine[0].y, bottom = mine[mine.length - 1].y + mine[mine.length - 1].h;
    ctx.strokeStyle = "#d62728";
    ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, bottom); ctx.stroke();
    ctx.fillStyle = "#d62728";
    ctx.fillText(s.label, x + 3, AXIS - 8);
  }
  ctx.setLineDash([]);
  // what the selection links: its launch, its op, its kernels; arrows launch -> kernel
  ctx.strokeStyle = "#d62728";
  ctx.lineWidth = 2;
  for (const b of p.highlight.boxes) {
    const lane = state.lanes[b.lane];
    if (!lane) continue;
    const y = lane.y + (lane.kind === "cpu" ? b.depth * ROW : 0);
    ctx.strokeRect(xOf(b.ts), y, Math.max(xOf(b.ts + b.dur) - xOf(b.ts), 2),
      lane.kind === "cpu" ? ROW : GPU_ROW);
  }
  for (const f of p.highlight.flows) {
    const a = state.lanes[f.from_lane], b = state.lanes[f.to_lane];
    if (!a || !b) continue;
    const ax = xOf(f.from_ts), ay = a.y + f.from_depth * ROW + ROW / 2;
    const bx = xOf(f.to_ts), by = b.y + GPU_ROW / 2;
    ctx.beginPath(); ctx.moveTo(ax, ay); ctx.lineTo(bx, by); ctx.stroke();
    ctx.beginPath(); ctx.arc(bx, by, 3, 0, 2 * Math.PI); ctx.fill();
  }
  ctx.lineWidth = 1;
  document.getElementById("labels").innerHTML =
    drawn.map((n) => "<li>" + n.replace(/&/g, "&amp;").replace(/</g, "&lt;") + "</li>").join("");
  document.getElementById("status").textContent =
    `${fmtMs(v0)}–${fmtMs(v1)} ms · ${p.status} · ${drawn.length} names shown`;
}

function legend() {
  const p = state.args;
  const used = new Set(p.gpu.cls.map((c) => p.classes[c]));
  const items = [...Object.entries(KIND_COLOURS).filter(([k]) => p.cpu.kind.includes(p.cpu_kinds.indexOf(k)))
    .map(([k, c]) => [`CPU ${k}`, c]),
  ...p.classes.filter((c) => used.has(c)).map((c) => [c, CLASS_COLOURS[c] || CLASS_COLOURS.other])];
  document.getElementById("legend").innerHTML =
    items.map(([label, c]) => `<span><i style="background:${c}"></i>${label}</span>`).join("");
}

// ------------------------------------------------------------------------ interaction
function clampView(t0, t1) {
  const [s0, s1] = state.args.span;
  const width = Math.min(Math.max(t1 - t0, 0.001), s1 - s0);
  t0 = Math.min(Math.max(t0, s0), s1 - width);
  return [t0, t0 + width];
}
function later() {
  clearTimeout(state.timer);
  state.timer = setTimeout(() => sendValue(), SEND_AFTER_MS);
}
canvas.addEventListener("wheel", (e) => {
  if (!state.args || e.offsetX < GUTTER) return;
  e.preventDefault();
  const t = tOf(e.offsetX), k = Math.exp(e.deltaY * 0.0015);
  const [v0, v1] = state.view;
  state.view = clampView(t - (t - v0) * k, t + (v1 - t) * k);
  draw();
  later();
}, { passive: false });
canvas.addEventListener("mousedown", (e) => {
  state.drag = { x: e.offsetX, view: state.view.slice(), moved: false };
  canvas.classList.add("dragging");
});
window.addEventListener("mouseup", (e) => {
  const d = state.drag;
  state.drag = null;
  canvas.classList.remove("dragging");
  if (!d) return;
  if (d.moved) later(); else select(e.offsetX, e.offsetY);
});
canvas.addEventListener("mousemove", (e) => {
  const d = state.drag;
  if (d) {
    const dt = tOf(d.x) - tOf(e.offsetX);
    if (Math.abs(e.offsetX - d.x) > 2) d.moved = true;
    state.view = clampView(d.view[0] + dt, d.view[1] + dt);
    draw();
    return;
  }
  hover(e.offsetX, e.offsetY);
});
canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
canvas.addEventListener("dblclick", () => {
  state.view = state.args.span.slice();
  draw();
  later();
});
function hit(x, y) {
  for (let i = state.hits.length - 1; i >= 0; i--) {
    const [hx, hy, hw, hh, kind, at] = state.hits[i];
    if (x >= hx - 1 && x <= hx + hw + 1 && y >= hy && y <= hy + hh) return [kind, at];
  }
  return null;
}
function describe(kind, i) {
  const p = state.args, s = p[kind], us = s.dur[i];
  const dur = us >= 1000 ? (us / 1000).toFixed(3) + " ms" : us.toFixed(1) + " µs";
  const what = kind === "gpu" ? p.classes[s.cls[i]] : "CPU " + p.cpu_kinds[s.kind[i]];
  const extra = kind === "gpu" ? "\n" + p.names[s.info[i]] : "";
  return `${p.names[s.name[i]]}\n${what} · ${dur} · at ${fmtMs(s.ts[i])} ms${extra}`;
}
function hover(x, y) {
  const h = hit(x, y);
  if (!h) { tip.style.display = "none"; return; }
  tip.textContent = describe(h[0], h[1]);
  tip.style.display = "block";
  tip.style.left = Math.min(x + 12, canvas.clientWidth - 420) + "px";
  tip.style.top = (y + 14 + canvas.offsetTop - wrap.scrollTop) + "px";
}
function select(x, y) {
  const h = hit(x, y);
  if (!h) {
    state.sel = null;  // a click beside every slice clears the selection
  } else {
    const [kind, i] = h, p = state.args, s = p[kind];
    const lane = p.lanes[s.lane[i]];
    state.sel = {
      lane: lane.kind, kind: kind === "gpu" ? "gpu" : p.cpu_kinds[s.kind[i]], rank: lane.rank,
      link: s.link[i], ts: s.ts[i], dur: s.dur[i], name: p.names[s.name[i]],
    };
  }
  sendValue();
}
window.addEventListener("resize", () => { if (state.args) { layout(); draw(); } });
