// sceneforge explorer: plain DOM + SVG, no libraries, works from file:// (docs/explorer.md).
// Data: window.SF_META (vocabularies, units, stats), window.SF_INDEX (facet codes + numbers per
// sample, filtered here in memory), shards data/shard_NNNN.js loaded on demand by <script>.
"use strict";
const M = window.SF_META, I = window.SF_INDEX, N = M.n, PAGE = 48;
const SVGNS = "http://www.w3.org/2000/svg";
const LABEL_COLORS = {front: "#1e88e5", back: "#8e24aa", left: "#43a047", right: "#fb8c00"};
const ROLE_COLORS = {source: "#e65100", target: "#1565c0", human: "#2e7d32", object: "#6a1b9a", clutter: "#9e9e9e"};
const state = {facets: {}, ranges: {}, rejFree: false, page: 0, matches: null};
const shards = {}, waiting = {};

const $ = (sel, root) => (root || document).querySelector(sel);
function el(tag, attrs, ...kids) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVGNS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}
const src = p => M.root + "/" + p;
const fmt = (v, d = 1) => (v === null || v === undefined) ? "–" : (+v).toFixed(d);

// ---- shards: details of SHARD_SIZE samples, loaded once by a <script> tag -------------------
window.SF_SHARD = (n, rows) => { shards[n] = rows; (waiting[n] || []).forEach(f => f()); delete waiting[n]; };
function details(i) {
  const n = Math.floor(i / M.shard_size);
  return new Promise(resolve => {
    if (shards[n]) return resolve(shards[n][i % M.shard_size]);
    (waiting[n] = waiting[n] || []).push(() => resolve(shards[n][i % M.shard_size]));
    if (waiting[n].length === 1)
      document.head.append(el("script", {src: `data/shard_${String(n).padStart(4, "0")}.js`}));
  });
}

// ---- filtering: one pass; a row failing exactly one facet still counts for that facet -------
function filter() {
  const names = Object.keys(M.facets), nums = M.numbers;
  const counts = Object.fromEntries(names.map(f => [f, new Int32Array(M.facets[f].length)]));
  const allowed = names.map(f => state.facets[f] && state.facets[f].size ? state.facets[f] : null);
  const ranges = nums.map(k => state.ranges[k] || null);
  const rej = I.numbers.rejections, out = [];
  for (let i = 0; i < N; i++) {
    let bad = 0;
    for (let r = 0; r < nums.length; r++) {
      const g = ranges[r]; if (!g) continue;
      const v = I.numbers[nums[r]][i];
      if (v === null || (g[0] !== null && v < g[0]) || (g[1] !== null && v > g[1])) { bad = 2; break; }
    }
    if (!bad && state.rejFree && rej && rej[i] > 0) bad = 2;
    if (bad) continue;
    let failed = -1;
    for (let f = 0; f < names.length; f++) {
      if (allowed[f] && !allowed[f].has(I.facets[names[f]][i])) { if (failed >= 0) { failed = -2; break; } failed = f; }
    }
    if (failed === -2) continue;
    if (failed >= 0) { counts[names[failed]][I.facets[names[failed]][i]]++; continue; }
    for (let f = 0; f < names.length; f++) counts[names[f]][I.facets[names[f]][i]]++;
    out.push(i);
  }
  state.matches = out;
  return counts;
}

function buildFilters() {
  const box = $("#filters");
  box.replaceChildren();
  for (const [name, vocab] of Object.entries(M.facets)) {
    const fs = el("fieldset", {"data-facet": name}, el("legend", {text: name}));
    vocab.forEach((v, code) => fs.append(el("label", {title: v},
      el("input", {type: "checkbox", value: code, "data-facet": name, onchange: onFacet}), " " + v + " ",
      el("span", {class: "n", "data-count": `${name}:${code}`}))));
    box.append(fs);
  }
  for (const name of M.numbers) {
    const unit = M.units[name] ? ` (${M.units[name]})` : "";
    box.append(el("fieldset", {"data-range": name}, el("legend", {text: name + unit}),
      el("input", {type: "number", step: "any", placeholder: "min", "data-range": name, "data-end": 0, onchange: onRange}), " – ",
      el("input", {type: "number", step: "any", placeholder: "max", "data-range": name, "data-end": 1, onchange: onRange})));
  }
  if (I.numbers.rejections) box.append(el("fieldset", {}, el("legend", {text: "rejections"}), el("label", {},
    el("input", {type: "checkbox", id: "rejection-free", onchange: e => { state.rejFree = e.target.checked; refresh(); }}),
    " rejection-free only (first candidate kept)")));
}
function onFacet(e) {
  const f = e.target.dataset.facet, code = +e.target.value;
  const s = state.facets[f] = state.facets[f] || new Set();
  e.target.checked ? s.add(code) : s.delete(code);
  refresh();
}
function onRange(e) {
  const k = e.target.dataset.range, r = state.ranges[k] = state.ranges[k] || [null, null];
  const v = e.target.value === "" ? null : +e.target.value;
  if (r[+e.target.dataset.end] === v) return;       // a second change event (blur): the grid stays
  r[+e.target.dataset.end] = v;
  if (r[0] === null && r[1] === null) delete state.ranges[k];
  refresh();
}
function refresh() {
  const t0 = performance.now();
  const counts = filter();
  for (const [f, c] of Object.entries(counts)) c.forEach((n, code) => {
    const s = document.querySelector(`[data-count="${f}:${code}"]`); if (s) s.textContent = n;
  });
  $("#count").textContent = `${state.matches.length} of ${N} samples`;
  $("#count").dataset.count = state.matches.length;
  window.SF_LAST_FILTER_MS = performance.now() - t0;
  state.page = 0;
  if (!location.hash.startsWith("#sample") && !location.hash.startsWith("#plots")) drawGrid();
}

// ---- grid -----------------------------------------------------------------------------------
function facetValue(name, i) { return M.facets[name] ? M.facets[name][I.facets[name][i]] : ""; }
function drawGrid() {
  const view = $("#view"), m = state.matches, pages = Math.max(1, Math.ceil(m.length / PAGE));
  state.page = Math.min(state.page, pages - 1);
  const grid = el("div", {class: "grid", id: "grid"});
  for (const i of m.slice(state.page * PAGE, (state.page + 1) * PAGE)) {
    const badge = [facetValue("label", i) || facetValue("pattern", i), facetValue("env", i)].filter(Boolean).join(" · ");
    const wrong = I.facets.correct && facetValue("correct", i) === "no";
    grid.append(el("a", {class: "cell" + (wrong ? " wrong" : ""), href: `#sample/${i}`, "data-index": i, title: `sample ${I.key[i]}`},
      el("img", {src: `thumbs/${I.key[i]}.jpg`, loading: "lazy", alt: ""}), el("span", {class: "badge", text: badge})));
  }
  const pager = el("div", {class: "pager"},
    el("button", {text: "◀ prev", disabled: state.page === 0 ? "" : null, onclick: () => { state.page--; drawGrid(); }}),
    el("span", {id: "page", text: `page ${state.page + 1} of ${pages}`}),
    el("button", {text: "next ▶", disabled: state.page >= pages - 1 ? "" : null, onclick: () => { state.page++; drawGrid(); }}));
  const extra = I.facets.correct ? el("a", {href: "#grid", id: "misclassified", onclick: showWrong, text: "show misclassified"}) : null;
  view.replaceChildren(pager, extra || "", grid);
}
function showWrong(e) {
  e.preventDefault();
  const code = M.facets.correct.indexOf("no");
  state.facets.correct = new Set([code]);
  document.querySelectorAll('input[data-facet="correct"]').forEach(c => c.checked = +c.value === code);
  refresh();
}

// ---- a sample ---------------------------------------------------------------------------------
async function drawSample(i) {
  const d = await details(i), view = $("#view");
  const pos = state.matches.indexOf(i);
  const nav = el("div", {class: "pager"}, el("a", {href: "#grid", text: "◀ grid"}),
    pos > 0 ? el("a", {href: `#sample/${state.matches[pos - 1]}`, text: "previous"}) : null,
    pos >= 0 && pos < state.matches.length - 1 ? el("a", {href: `#sample/${state.matches[pos + 1]}`, id: "next-sample", text: "next"}) : null,
    el("b", {text: `sample ${I.key[i]}`, id: "sample-key", "data-key": I.key[i]}), el("span", {text: d.media.image || ""}));
  if (M.kind === "videos") return view.replaceChildren(nav, videoPanel(d));
  const left = el("div", {}, stage(d), toggles(d));
  const right = el("div", {}, el("h3", {text: "Top-down map"}), topDown(d.map), mapLegend(d.map));
  view.replaceChildren(nav, el("div", {class: "sample", id: "sample"}, left, right, paramsTable(d, i)));
}
function stage(d) {
  const [w, h] = d.size && d.size[0] ? d.size : [224, 224];
  const boxes = el("svg:svg", {class: "boxes", id: "layer-boxes", viewBox: `0 0 ${w} ${h}`, preserveAspectRatio: "none"});
  for (const [name, b] of Object.entries(d.boxes || {})) {
    const c = ROLE_COLORS[name] || "#ffeb3b";
    boxes.append(el("svg:rect", {x: b[0], y: b[1], width: b[2] - b[0] + 1, height: b[3] - b[1] + 1, fill: "none", stroke: c, "stroke-width": w / 224}),
      el("svg:text", {x: b[0], y: Math.max(b[1] - 2, 8), fill: c, "font-size": 8 * w / 224, text: name}));
  }
  const tag = d.label ? `${d.task}: target is ${d.label.toUpperCase()} of source (${d.task === "allo" ? "seen by the figure" : "seen by the camera"})` : "";
  return el("div", {class: "stage", id: "stage"},
    el("img", {src: src(d.media.image), alt: "image", id: "layer-image"}),
    d.media.mask ? el("img", {src: src(d.media.mask), class: "mask hidden", id: "layer-mask", alt: ""}) : null,
    d.media.depth ? el("img", {src: `depth/${I.key[d.__i]}.png`, class: "hidden", id: "layer-depth", alt: ""}) : null,
    boxes, tag ? el("div", {class: "labeltag", id: "layer-label", text: tag}) : null);
}
function toggles(d) {
  const t = el("div", {class: "toggles"});
  for (const [name, on] of [["boxes", true], ["mask", false], ["depth", false], ["label", true]]) {
    if ((name === "mask" && !d.media.mask) || (name === "depth" && !d.media.depth) || (name === "label" && !d.label)) continue;
    t.append(el("label", {}, el("input", {type: "checkbox", id: `toggle-${name}`, checked: on ? "" : null,
      onchange: e => $(`#layer-${name}`).classList.toggle("hidden", !e.target.checked)}), " " + name));
  }
  return t;
}
function paramsTable(d, i) {
  const t = el("table", {class: "params", id: "params"});
  const row = (k, v) => t.append(el("tr", {}, el("th", {text: k}), el("td", {text: v})));
  for (const f of Object.keys(M.facets)) row(f, facetValue(f, i));
  for (const k of M.numbers) row(k + (M.units[k] ? ` (${M.units[k]})` : ""), fmt(I.numbers[k][i], 2));
  const p = d.params || {};
  if (p.camera && p.camera.location) {
    const c = p.camera, loc = c.location, rot = c.rotation;
    row("camera location (cm)", Array.isArray(loc) ? loc.map(v => fmt(v)).join(", ") : `${fmt(loc.x)}, ${fmt(loc.y)}, ${fmt(loc.z)}`);
    row("camera rotation (deg)", Array.isArray(rot) ? rot.map(v => fmt(v)).join(", ") : `pitch ${fmt(rot.pitch)}, yaw ${fmt(rot.yaw)}, roll ${fmt(rot.roll)}`);
    if (c.intrinsics) row("camera hfov (deg)", fmt(c.intrinsics.hfov_deg, 2));
  }
  for (const [role, a] of Object.entries(p.actors || {}))
    row(`${role}: ${a.label}`, `x ${fmt(a.location.x)}, y ${fmt(a.location.y)}, z ${fmt(a.location.z)} cm; yaw ${fmt(a.rotation.yaw)}°` +
      (p.assets && p.assets[role] ? `; ${p.assets[role]}` : ""));
  if (d.label) { row("label", d.label); row("margin (deg)", d.margin_deg); row("angle a (deg)", d.angle_deg); }
  if (d.rejections) row("rejected candidates", Object.entries(d.rejections).map(([k, v]) => `${k} ${v}`).join(", ") || "none");
  for (const q of d.questions || []) row(q.category, `${q.question} → ${q.answer}${q.unit ? " " + q.unit : ""}`);
  return t;
}

// ---- the top-down map: world X up, Y right (UE left-handed, seen from above) ----------------------
function topDown(m) {
  const svg = el("svg:svg", {class: "map", id: "topdown", width: 420, height: 420});
  if (!m) return svg;
  const S = ([x, y]) => [y, -x];                 // world (x, y) cm -> screen
  const dir = deg => [Math.cos(deg * Math.PI / 180), Math.sin(deg * Math.PI / 180)];
  const add = (p, v, s) => [p[0] + v[0] * s, p[1] + v[1] * s];
  const pts = [m.source, m.target, m.human, m.camera && m.camera.xy].filter(Boolean);
  for (const p of Object.values(m.paths || {})) pts.push(...p);
  if (!m.source && m.objects) for (const o of m.objects) if (o.role !== "clutter") pts.push(...o.foot);
  const R = frameRadius(m);                        // the label frame's wedges stay inside the view
  if (R) pts.push([m.source[0] - R, m.source[1] - R], [m.source[0] + R, m.source[1] + R]);
  if (!pts.length) return svg;
  const xs = pts.map(p => S(p)[0]), ys = pts.map(p => S(p)[1]);
  let x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
  const span = Math.max(x1 - x0, y1 - y0, 600) * 1.12, cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
  svg.setAttribute("viewBox", `${cx - span / 2} ${cy - span / 2} ${span} ${span}`);
  const sw = span / 420;                          // one screen pixel in cm
  const poly = (ps, attrs) => el("svg:polygon", {points: ps.map(p => S(p).join(",")).join(" "), ...attrs});
  const line = (a, b, attrs) => el("svg:line", {x1: S(a)[0], y1: S(a)[1], x2: S(b)[0], y2: S(b)[1], "stroke-width": 1.5 * sw, ...attrs});
  const text = (p, t, attrs) => el("svg:text", {x: S(p)[0], y: S(p)[1], "font-size": 12 * sw, "text-anchor": "middle", text: t, ...attrs});
  if (m.camera) {                                   // frustum: the horizontal field of view
    const c = m.camera.xy, L = span * 1.5;
    svg.append(el("svg:g", {id: "frustum"}, poly([c, add(c, dir(m.camera.yaw - m.camera.hfov / 2), L), add(c, dir(m.camera.yaw + m.camera.hfov / 2), L)],
      {fill: "#fff59d", "fill-opacity": .45, stroke: "#f9a825", "stroke-width": sw})));
  }
  if (m.source && m.label) svg.append(labelFrame(m, span, sw, {S, dir, add, poly, line, text}));
  const objs = el("svg:g", {id: "objects"});
  for (const o of m.objects || []) {
    if (o.role === "human" && m.human) continue;
    objs.append(poly(o.foot, {fill: ROLE_COLORS[o.role] || "#777", "fill-opacity": o.role === "clutter" ? .35 : .8,
      stroke: "#333", "stroke-width": .5 * sw, "data-role": o.role}, ), );
  }
  svg.append(objs);
  for (const [name, p] of Object.entries(m.paths || {}))
    svg.append(el("svg:polyline", {points: p.map(q => S(q).join(",")).join(" "), fill: "none", stroke: name === "camera" ? "#f9a825" : "#1565c0", "stroke-width": 2 * sw}));
  const dot = (p, c, t, id) => svg.append(el("svg:g", {id}, el("svg:circle", {cx: S(p)[0], cy: S(p)[1], r: 5 * sw, fill: c, stroke: "#000", "stroke-width": sw}),
    text(add(p, [1, 0], 14 * sw), t, {fill: c, "font-weight": "bold"})));
  if (m.camera) dot(m.camera.xy, "#f9a825", "camera", "map-camera");
  if (m.source) dot(m.source, ROLE_COLORS.source, "source", "map-source");
  if (m.target) dot(m.target, ROLE_COLORS.target, "target", "map-target");
  if (m.human) {
    dot(m.human, ROLE_COLORS.human, "figure", "map-human");
    svg.append(line(m.human, add(m.human, dir(m.human_yaw), 25 * sw), {stroke: ROLE_COLORS.human, "stroke-width": 3 * sw}));
  }
  const bar = [cx - span / 2 + 20 * sw, cy + span / 2 - 15 * sw];   // 5 m scale bar (screen coords)
  svg.append(el("svg:g", {id: "scale"}, el("svg:line", {x1: bar[0], y1: bar[1], x2: bar[0] + 500, y2: bar[1], stroke: "#000", "stroke-width": 2 * sw}),
    el("svg:text", {x: bar[0], y: bar[1] - 4 * sw, "font-size": 11 * sw, text: "5 m   ↑ X (forward)  → Y (right)"})));
  return svg;
}
// The label's frame (docs/datasets.md): apex at the source, f = source - observer; sectors of
// half-width 45 - m centred on f (front), f + 90 (right: UE +Y is right of +X from above), f + 180
// (back), f - 90 (left); ambiguity cones of half-width m around the four diagonals.
function frameRadius(m) {
  return m.source && m.target && m.label ? Math.max(Math.hypot(m.target[0] - m.source[0], m.target[1] - m.source[1]) * 1.35, 300) : 0;
}
function labelFrame(m, span, sw, g) {
  const obs = m.observer === "human" ? m.human : m.camera.xy;
  const f = Math.atan2(m.source[1] - obs[1], m.source[0] - obs[0]) * 180 / Math.PI;
  const R = frameRadius(m);
  const wedge = (centre, half, attrs) => {
    const ps = [m.source];
    for (let a = centre - half; a <= centre + half + 1e-9; a += Math.max(half / 8, .5)) ps.push(g.add(m.source, g.dir(a), R));
    return g.poly(ps, attrs);
  };
  const frame = el("svg:g", {id: "label-frame", "data-f-deg": f.toFixed(2)});
  frame.append(g.line(obs, m.source, {stroke: "#555", "stroke-dasharray": `${6 * sw} ${4 * sw}`, id: "line-of-sight"}));
  for (const [name, off] of [["front", 0], ["right", 90], ["back", 180], ["left", -90]]) {
    const mine = name === m.label;
    frame.append(wedge(f + off, 45 - m.margin_deg, {id: `frame-${name}`, fill: LABEL_COLORS[name],
      "fill-opacity": mine ? .45 : .15, stroke: mine ? LABEL_COLORS[name] : "none", "stroke-width": 2 * sw}));
    frame.append(g.text(g.add(m.source, g.dir(f + off), R * .8), name, {fill: LABEL_COLORS[name], "font-weight": mine ? "bold" : "normal"}));
  }
  for (const off of [45, 135, -45, -135]) {
    frame.append(wedge(f + off, m.margin_deg, {class: "ambiguity", fill: "#616161", "fill-opacity": .25}));
    frame.append(g.line(m.source, g.add(m.source, g.dir(f + off), R), {stroke: "#424242", "stroke-dasharray": `${3 * sw} ${3 * sw}`, class: "diagonal"}));
  }
  return frame;
}
function mapLegend(m) {
  if (!m || !m.label) return el("p", {text: "camera path and subject path over the clip (cm, X up, Y right)"});
  return el("p", {id: "map-legend", text: `label frame of the ${m.observer === "human" ? "figure" : "camera"}: front = beyond the source along the line of sight; ` +
    `grey cones: ±${m.margin_deg}° ambiguity around the diagonals (rejected); bold sector = this sample's label (${m.label}).`});
}

// ---- videos: the four variants side by side, one clock, with their questions and answers -------
function videoPanel(d) {
  const vids = Object.entries(d.media.videos).map(([v, p]) =>
    el("figure", {}, el("figcaption", {text: v}), el("video", {src: src(p), muted: "", preload: "auto", "data-variant": v, playsinline: ""})));
  const box = el("div", {class: "videos", id: "videos"}, ...vids);
  const all = () => [...box.querySelectorAll("video")];
  const slider = el("input", {type: "range", min: 0, max: 1000, value: 0, id: "video-seek", oninput: e => {
    const v0 = all()[0]; all().forEach(v => v.currentTime = (v0.duration || 0) * e.target.value / 1000); }});
  const play = el("button", {text: "play all", id: "video-play", onclick: () => {
    const vs = all(), t = vs[0].currentTime; vs.forEach(v => { v.currentTime = t; v.paused ? v.play() : v.pause(); }); }});
  setTimeout(() => { const [lead, ...rest] = all(); if (lead) lead.addEventListener("timeupdate", () => {
    rest.forEach(v => { if (Math.abs(v.currentTime - lead.currentTime) > .06) v.currentTime = lead.currentTime; });
    slider.value = lead.duration ? 1000 * lead.currentTime / lead.duration : 0; }); }, 0);
  const qa = el("table", {class: "params qa", id: "qa"}, el("tr", {}, el("th", {text: "question"}), ...Object.keys(d.qa).map(v => el("th", {text: v}))));
  const std = d.qa.std || Object.values(d.qa)[0] || [];
  std.forEach((q, k) => qa.append(el("tr", {}, el("td", {text: `[${q.category || q.cate}] ${q.question}\n${q.options}`}),
    ...Object.values(d.qa).map(rows => el("td", {class: "gt", text: rows[k] ? rows[k].GT : "–"})))));
  return el("div", {class: "sample", id: "sample"}, el("div", {}, box, el("div", {class: "pager"}, play, slider)),
    el("div", {}, el("h3", {text: "Questions (answer letter per variant)"}), qa, el("h3", {text: "Camera and subject paths"}), topDown(d.map), paramsTable(d, d.__i)));
}

// ---- dataset plots ---------------------------------------------------------------------------------
function bars(title, entries, id) {
  // The x labels are rotated 40° down to the right: the plot grows by what the longest one needs
  // (below and past the last bar), so no axis label is cut off (issue 47: long facet values were).
  const W = 360, H = 180, max = Math.max(1, ...entries.map(e => e[1])), bw = (W - 40) / Math.max(entries.length, 1);
  const every = Math.ceil(entries.length / 12), PX = 6.2;  // px per character at font-size 9, generous
  const longest = PX * Math.max(0, ...entries.filter((e, j) => j % every === 0).map(e => String(e[0]).length));
  const a = 40 * Math.PI / 180, below = Math.ceil(longest * Math.sin(a) + 9 * Math.cos(a)) + 14;
  const svg = el("svg:svg", {width: Math.ceil(30 + entries.length * bw + longest * Math.cos(a)) + 6, height: H + below, id});
  entries.forEach(([k, v, color], j) => {
    const h = H * v / max, x = 30 + j * bw;
    svg.append(el("svg:rect", {x, y: H - h, width: Math.max(bw - 2, 1), height: h, fill: color || "#546e7a"}, el("svg:title", {text: `${k}: ${v}`})));
    if (j % every === 0) svg.append(el("svg:text", {x: x + bw / 2, y: H + 10, "font-size": 9, transform: `rotate(40 ${x + bw / 2} ${H + 10})`, text: k}));
  });
  svg.append(el("svg:text", {x: 0, y: 10, "font-size": 10, text: String(max)}));
  return el("div", {class: "plot"}, el("h3", {text: title}), svg);
}
function histogram(name) {
  const vals = state.matches.map(i => I.numbers[name][i]).filter(v => v !== null);
  if (!vals.length) return null;
  let lo = Math.min(...vals), hi = Math.max(...vals); if (hi === lo) hi = lo + 1;
  const B = 24, c = new Array(B).fill(0);
  for (const v of vals) c[Math.min(B - 1, Math.floor((v - lo) / (hi - lo) * B))]++;
  return bars(`${name} (${M.units[name] || ""}) ${fmt(lo)} – ${fmt(hi)}`, c.map((n, j) => [fmt(lo + (j + .5) * (hi - lo) / B), n]), `hist-${name}`);
}
function drawPlots() {
  const out = el("div", {class: "plots", id: "plots"});
  const label = M.facets.label;
  for (const f of Object.keys(M.facets)) {
    if (f === "label" || !label) continue;
    const e = [];
    M.facets[f].forEach((v, code) => label.forEach((lab, lc) => {
      const n = state.matches.filter(i => I.facets[f][i] === code && I.facets.label[i] === lc).length;
      e.push([`${v}/${lab}`, n, LABEL_COLORS[lab]]);
    }));
    out.append(bars(`label balance per ${f}`, e, `balance-${f}`));
  }
  if (label) out.append(bars("labels", label.map((lab, lc) => [lab, state.matches.filter(i => I.facets.label[i] === lc).length, LABEL_COLORS[lab]]), "balance-label"));
  if (!label) for (const f of Object.keys(M.facets))
    out.append(bars(f, M.facets[f].map((v, c) => [v, state.matches.filter(i => I.facets[f][i] === c).length]), `count-${f}`));
  for (const k of M.numbers) { const h = histogram(k); if (h) out.append(h); }
  const rej = (M.stats || {}).rejection_reasons || {};
  if (Object.keys(rej).length) out.append(bars("rejection reasons (whole dataset)", Object.entries(rej).sort((a, b) => b[1] - a[1]), "rejections"));
  $("#view").replaceChildren(out);
}

// ---- routing: #grid, #plots, #sample/<row> ---------------------------------------------------------
function route() {
  const h = location.hash;
  if (h.startsWith("#sample/")) { const i = +h.slice(8); details(i).then(d => { d.__i = i; drawSample(i); }); }
  else if (h === "#plots") drawPlots();
  else drawGrid();
}
document.title = $("#title").textContent = `sceneforge explorer: ${M.name} (${M.kind}, ${N} samples)`;
buildFilters();
refresh();
window.addEventListener("hashchange", route);
route();
window.SF_READY = true;
