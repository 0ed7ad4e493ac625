// The coaty-edge dashboard page: follows the dashboard's server-sent events (a snapshot, then every event as
// `coaty-edge observe --json` writes it) and draws the values, routes, IO contexts, agents and shared objects.
// Every state is written as text; colours only repeat it.
"use strict";

const state = {
  agents: new Map(),        // agentId -> {agentId, name, namespace, sources, actors, gone: ms | null}
  devices: new Map(),       // agentId -> [{label, state, error?}]
  contexts: new Map(),      // objectId -> {name, objectId, version, object}
  associations: new Map(),  // "context\nsourceId\nactorId" -> {context, sourceId, actorId, rule, updateRate, route}
  values: new Map(),        // sourceId -> {value (text), number, time, rate}
  histories: new Map(),     // sourceId -> History
  shared: new Map(),        // objectId -> shared object event
  brokerOnline: true,
  historyWindow: 3600000,
  bucketWidth: 5000,
};
const goneAgentsKept = 50;
const chartsAvailable = typeof window.Dygraph === "function";
const cards = new Map();    // sourceId -> {element, valueText, meta, actors, chart, chartElement, chartDrawn}

// The same downsampling as the server's ValueHistory: buckets of mean, minimum, maximum and count.
class History {
  constructor(buckets) { this.buckets = buckets || []; }
  record(value, time) {
    const width = state.bucketWidth;
    const start = time - (((time % width) + width) % width);
    const last = this.buckets[this.buckets.length - 1];
    if (last && start <= last[0]) {
      last[4] += 1;
      last[1] += (value - last[1]) / last[4];
      last[2] = Math.min(last[2], value);
      last[3] = Math.max(last[3], value);
    } else {
      this.buckets.push([start, value, value, value, 1]);
    }
    const cutoff = time - state.historyWindow;
    while (this.buckets.length > 1 && this.buckets[0][0] + width <= cutoff) this.buckets.shift();
  }
}

// ---- names and formats

function sourceInfo(sourceId) {
  for (const agent of state.agents.values()) {
    const source = agent.sources.find((s) => s.objectId === sourceId);
    if (source) return { ...source, agentName: agent.name, agentId: agent.agentId, gone: agent.gone };
  }
  return null;
}

function actorInfo(actorId) {
  for (const agent of state.agents.values()) {
    const actor = agent.actors.find((a) => a.objectId === actorId);
    if (actor) return { ...actor, agentName: agent.name, gone: agent.gone };
  }
  return null;
}

const unitSymbols = { Celsius: "°C", Fahrenheit: "°F", Kelvin: "K", Percent: "%", Pascal: "Pa", Hectopascal: "hPa" };

/// The unit of a value type such as "coaty-edge.Temperature[Celsius]".
function unitOf(valueType) {
  const match = /\[([^\]]+)\]\s*$/.exec(valueType || "");
  return match ? (unitSymbols[match[1]] || match[1]) : "";
}

function valueText(event) {
  if (event.value === undefined) return `<${event.length} bytes>`;
  if (typeof event.value === "boolean") return event.value ? "true (on)" : "false (off)";
  return typeof event.value === "string" ? event.value : JSON.stringify(event.value);
}

function clock(ms) { return new Date(ms).toLocaleTimeString(); }

function ago(ms) {
  const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  return `at ${clock(ms)}`;
}

function element(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value; else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

// ---- events

function apply(event) {
  switch (event.event) {
    case "agentJoined":
    case "agentUpdated": {
      state.agents.set(event.agentId, {
        agentId: event.agentId, name: event.name, namespace: event.namespace,
        sources: event.ioSources || [], actors: event.ioActors || [], gone: null,
      });
      scheduleRender();
      break;
    }
    case "agentLeft": {
      const agent = state.agents.get(event.agentId);
      if (agent) agent.gone = event.time;
      for (const source of event.ioSources || []) {
        state.values.delete(source.objectId);
        state.histories.delete(source.objectId);
      }
      const gone = [...state.agents.values()].filter((a) => a.gone).sort((a, b) => a.gone - b.gone);
      for (const agent of gone.slice(0, Math.max(0, gone.length - goneAgentsKept))) state.agents.delete(agent.agentId);
      scheduleRender();
      break;
    }
    case "deviceStatus":
      state.devices.set(event.agentId, event.devices || []);
      scheduleRender();
      break;
    case "context":
      state.contexts.set(event.objectId, { name: event.context, objectId: event.objectId, version: event.contextVersion, object: event.object });
      scheduleRender();
      break;
    case "associated":
      state.associations.set([event.context, event.sourceId, event.actorId].join("\n"), event);
      scheduleRender();
      break;
    case "disassociated":
      state.associations.delete([event.context, event.sourceId, event.actorId].join("\n"));
      scheduleRender();
      break;
    case "value": {
      const number = typeof event.value === "number" ? event.value : typeof event.value === "boolean" ? Number(event.value) : null;
      state.values.set(event.sourceId, { text: valueText(event), number, time: event.time, rate: event.rate });
      if (number !== null && Number.isFinite(number)) {
        if (!state.histories.has(event.sourceId)) state.histories.set(event.sourceId, new History());
        state.histories.get(event.sourceId).record(number, event.time);
      }
      if (cards.has(event.sourceId)) updateValue(event.sourceId); else scheduleRender();
      break;
    }
    case "sharedObject":
      state.shared.set(event.objectId, event);
      scheduleRender();
      break;
    case "sharedObjectGone":
      state.shared.delete(event.objectId);
      scheduleRender();
      break;
    case "broker":
      state.brokerOnline = event.online;
      showStatus();
      break;
  }
}

function reset(snapshot) {
  state.agents.clear(); state.devices.clear(); state.contexts.clear(); state.associations.clear();
  state.values.clear(); state.histories.clear(); state.shared.clear();
  state.brokerOnline = snapshot.broker.online;
  state.historyWindow = snapshot.history.window;
  state.bucketWidth = snapshot.history.bucketWidth;
  for (const event of snapshot.events) apply(event);
  for (const [sourceId, buckets] of Object.entries(snapshot.history.sources)) {
    state.histories.set(sourceId, new History(buckets.map((b) => [b[0], b[1], b[2], b[3], b[4] || 1])));
  }
  for (const object of snapshot.sharedObjects) apply(object);
  for (const card of cards.values()) card.chartDrawn = 0;
  scheduleRender();
}

// ---- drawing

let renderPending = false;
function scheduleRender() {
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(() => { renderPending = false; render(); });
}

function render() {
  renderValues();
  renderRoutes();
  renderContexts();
  renderAgents();
  renderShared();
  showStatus();
}

function showStatus() {
  const status = document.getElementById("status");
  if (!connected) {
    status.dataset.state = "connecting";
    status.textContent = "Reconnecting to the dashboard…";
  } else if (!state.brokerOnline) {
    status.dataset.state = "offline";
    status.textContent = "Live, but the broker is unreachable: values may be stale";
  } else {
    const online = [...state.agents.values()].filter((a) => !a.gone).length;
    status.dataset.state = "live";
    status.textContent = `Live: ${online} agent${online === 1 ? "" : "s"} online`;
  }
}

function receiversOf(sourceId) {
  return [...state.associations.values()].filter((a) => a.sourceId === sourceId)
    .map((a) => actorInfo(a.actorId)?.name || a.actorName || a.actorId);
}

function renderValues() {
  const list = document.getElementById("value-list");
  const sources = [];
  for (const agent of state.agents.values()) {
    if (agent.gone) continue;
    for (const source of agent.sources) sources.push({ ...source, agentName: agent.name });
  }
  sources.sort((a, b) => (a.agentName + "\n" + a.name).localeCompare(b.agentName + "\n" + b.name));
  const wanted = new Set(sources.map((s) => s.objectId));
  for (const [sourceId, card] of cards) {
    if (!wanted.has(sourceId)) { card.chart?.destroy(); card.element.remove(); cards.delete(sourceId); }
  }
  list.querySelector(".empty")?.remove();
  if (sources.length === 0) list.append(element("p", { class: "empty", text: "No source yet." }));
  for (const source of sources) {
    let card = cards.get(source.objectId);
    if (!card) card = makeCard(source);
    list.append(card.element);  // keeps the order; moving a node keeps its chart
    card.title.textContent = source.name;
    card.meta.textContent = `${source.agentName} · ${source.context} · ${source.valueType}`;
    updateValue(source.objectId);
  }
}

function makeCard(source) {
  const title = element("h3", { text: source.name });
  const valueText = element("p", { class: "value-text", "aria-live": "off", text: "no value yet" });
  const meta = element("p", { class: "meta" });
  const freshness = element("p", { class: "meta freshness" });
  const actors = element("p", { class: "meta receivers" });
  const chartElement = element("div", { class: "chart", role: "img", "aria-label": `History of ${source.name}` });
  const node = element("article", { class: "card source", "data-source-id": source.objectId }, title, valueText, freshness, actors, meta);
  if (chartsAvailable) node.append(chartElement);
  const card = { element: node, title, valueText, meta, freshness, actors, chartElement, chart: null, chartDrawn: 0, unit: unitOf(source.valueType), visible: true };
  if ("IntersectionObserver" in window) {
    new IntersectionObserver((entries) => {
      card.visible = entries[entries.length - 1].isIntersecting;
      if (card.visible) drawChart(source.objectId, true);
    }).observe(node);
  }
  cards.set(source.objectId, card);
  return card;
}

function updateValue(sourceId) {
  const card = cards.get(sourceId);
  if (!card) return;
  const value = state.values.get(sourceId);
  const unit = card.unit;
  card.valueText.textContent = value ? (value.number !== null && unit ? `${value.text} ${unit}` : value.text) : "no value yet";
  card.valueText.dataset.time = value ? String(value.time) : "";
  card.freshness.textContent = value
    ? `received ${ago(value.time)}${value.rate != null ? `, ${value.rate} values/s` : ""}` : "";
  const receivers = receiversOf(sourceId);
  card.actors.textContent = receivers.length ? `goes to ${receivers.sort().join(", ")}` : "goes to no actor";
  drawChart(sourceId, false);
}

const chartInterval = 2000;
function drawChart(sourceId, now) {
  const card = cards.get(sourceId);
  const history = state.histories.get(sourceId);
  if (!chartsAvailable || !card || !history || history.buckets.length === 0 || !card.visible) return;
  if (!now && Date.now() - card.chartDrawn < chartInterval) {
    if (!card.chartTimer) card.chartTimer = setTimeout(() => { card.chartTimer = null; drawChart(sourceId, true); }, chartInterval);
    return;
  }
  card.chartDrawn = Date.now();
  const rows = history.buckets.map((b) => [new Date(b[0]), [b[2], b[1], b[3]]]);
  if (!card.chart) {
    card.chart = new Dygraph(card.chartElement, rows, {
      labels: ["time", card.unit || "value"], customBars: true, legend: "never", drawPoints: rows.length < 3,
      axisLabelFontSize: 11, ylabel: card.unit, animatedZooms: false, interactionModel: {},
    });
  } else {
    card.chart.updateOptions({ file: rows, drawPoints: rows.length < 3 });
  }
}

function routeName(info, fallback) {
  if (!info) return fallback;
  return `${info.name} (${info.agentName}${info.gone ? ", gone" : ""})`;
}

function renderRoutes() {
  const list = document.getElementById("route-list");
  const byContext = new Map();
  for (const association of state.associations.values()) {
    if (!byContext.has(association.context)) byContext.set(association.context, []);
    byContext.get(association.context).push(association);
  }
  list.replaceChildren();
  if (byContext.size === 0) { list.append(element("p", { class: "empty", text: "No route yet." })); return; }
  for (const context of [...byContext.keys()].sort()) {
    const pairs = byContext.get(context).map((a) => ({
      ...a, source: routeName(sourceInfo(a.sourceId), a.sourceName || a.sourceId),
      actor: routeName(actorInfo(a.actorId), a.actorName || a.actorId),
    })).sort((a, b) => (a.source + a.actor).localeCompare(b.source + b.actor));
    const section = element("div", { class: "route-context", "data-context": context });
    section.append(element("h3", { text: `IO context ${context}: ${pairs.length} route${pairs.length === 1 ? "" : "s"}` }));
    section.append(element("div", { class: "route-picture-frame" }, picture(pairs)));
    const body = element("tbody");
    for (const pair of pairs) {
      body.append(element("tr", { class: "route", "data-source-id": pair.sourceId, "data-actor-id": pair.actorId, "data-context": context },
        element("td", { "data-label": "Source", text: pair.source }),
        element("td", { "data-label": "Actor", text: pair.actor }),
        element("td", { "data-label": "Rule", text: pair.rule || "(not told)" }),
        element("td", { "data-label": "Rate", text: pair.updateRate != null ? `every ${pair.updateRate} ms` : "as published" })));
    }
    section.append(element("table", { class: "route-table" },
      element("caption", { text: `Routes of ${context}, source to actor` }),
      element("thead", {}, element("tr", {}, ...["Source", "Actor", "Rule", "Agreed rate"].map((h) => element("th", { scope: "col", text: h })))),
      body));
    list.append(section);
  }
}

/// Sources on the left, actors on the right, a line for each route; the table below says the same in words.
function picture(pairs) {
  const ns = "http://www.w3.org/2000/svg";
  const sources = [...new Set(pairs.map((p) => p.source))];
  const actors = [...new Set(pairs.map((p) => p.actor))];
  const rowHeight = 34, width = 640, boxWidth = 250;
  const height = Math.max(sources.length, actors.length) * rowHeight + 8;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("class", "route-picture");
  svg.setAttribute("aria-hidden", "true");
  const y = (index) => 4 + index * rowHeight + rowHeight / 2;
  function box(x, index, label) {
    const rect = document.createElementNS(ns, "rect");
    Object.entries({ x, y: y(index) - 13, width: boxWidth, height: 26, rx: 4 }).forEach(([k, v]) => rect.setAttribute(k, v));
    const text = document.createElementNS(ns, "text");
    Object.entries({ x: x + 6, y: y(index) + 4 }).forEach(([k, v]) => text.setAttribute(k, v));
    text.textContent = label.length > 34 ? label.slice(0, 33) + "…" : label;
    svg.append(rect, text);
  }
  for (const pair of pairs) {
    const line = document.createElementNS(ns, "line");
    Object.entries({ x1: boxWidth, y1: y(sources.indexOf(pair.source)), x2: width - boxWidth, y2: y(actors.indexOf(pair.actor)) })
      .forEach(([k, v]) => line.setAttribute(k, v));
    svg.append(line);
  }
  sources.forEach((label, index) => box(0, index, label));
  actors.forEach((label, index) => box(width - boxWidth, index, label));
  return svg;
}

const contextCore = new Set(["coreType", "objectType", "objectId", "name", "parentObjectId", "contextVersion"]);
const contextDrafts = new Map();  // what the person typed, kept across redraws

function renderContexts() {
  const list = document.getElementById("context-list");
  const focused = document.activeElement?.closest?.(".context-form") ? document.activeElement : null;
  if (focused) return;  // do not redraw under someone typing; the next event redraws
  list.replaceChildren();
  const contexts = [...state.contexts.values()].sort((a, b) => a.name.localeCompare(b.name));
  if (contexts.length === 0) { list.append(element("p", { class: "empty", text: "No IO context yet." })); return; }
  for (const context of contexts) {
    const properties = element("tbody");
    for (const [key, value] of Object.entries(context.object)) {
      if (contextCore.has(key)) continue;
      properties.append(element("tr", { "data-key": key }, element("th", { scope: "row", text: key }), element("td", { class: "property-value", text: JSON.stringify(value) })));
    }
    const draft = contextDrafts.get(context.name) || {};
    const keys = Object.keys(context.object).filter((k) => !contextCore.has(k));
    const keyInput = element("input", { name: "key", required: true, list: `keys-${context.objectId}`, value: draft.key || (keys.includes("operatingState") ? "operatingState" : keys[0] || ""), autocomplete: "off" });
    const valueInput = element("input", { name: "value", required: true, value: draft.value || "", placeholder: 'e.g. emergency or 21.5', autocomplete: "off" });
    const result = element("output", { class: "context-result", role: "status", "aria-live": "polite", text: draft.result || "" });
    if (draft.failed) result.classList.add("state-bad");
    const form = element("form", { class: "context-form", "data-context": context.name },
      element("label", {}, "Property", keyInput),
      element("datalist", { id: `keys-${context.objectId}` }, ...keys.map((k) => element("option", { value: k }))),
      element("label", {}, "New value (JSON, or else text)", valueInput),
      element("button", { type: "submit", text: "Set" }));
    form.addEventListener("submit", (submit) => {
      submit.preventDefault();
      changeContext(context.name, context.version, keyInput.value, valueInput.value);
    });
    list.append(element("article", { class: "card context", "data-context": context.name, "data-version": String(context.version) },
      element("h3", { text: `${context.name}, version ${context.version}` }),
      element("table", {}, element("caption", { text: "Properties" }), properties),
      form, result));
  }
}

// Sent with the version shown: the router refuses it if someone changed the context since (the refusal is shown).
async function changeContext(name, version, key, value) {
  contextDrafts.set(name, { key, value, result: `Setting ${key}…` });
  document.activeElement?.blur?.();
  renderContexts();
  let draft;
  try {
    const response = await fetch("api/context", {
      method: "POST", headers: { "Content-Type": "application/json", "X-Coaty-Dashboard": "1" },
      body: JSON.stringify({ context: name, key, value, expectedVersion: version }),
    });
    const answer = await response.json();
    draft = answer.ok ? { key, value: "", result: `Done: ${answer.result}` } : { key, value, result: `Refused: ${answer.error}`, failed: true };
  } catch (error) {
    draft = { key, value, result: `Not sent: ${error}`, failed: true };
  }
  contextDrafts.set(name, draft);
  renderContexts();
}

function renderAgents() {
  const list = document.getElementById("agent-list");
  list.replaceChildren();
  const agents = [...state.agents.values()].sort((a, b) => (!!a.gone - !!b.gone) || a.name.localeCompare(b.name));
  if (agents.length === 0) { list.append(element("p", { class: "empty", text: "No agent yet." })); return; }
  for (const agent of agents) {
    const status = agent.gone
      ? element("p", { class: "agent-state state-bad", text: `gone (left ${clock(agent.gone)})` })
      : element("p", { class: "agent-state state-ok", text: "online" });
    const card = element("article", { class: `card agent${agent.gone ? " gone" : ""}`, "data-agent-id": agent.agentId, "data-state": agent.gone ? "gone" : "online" },
      element("h3", { text: agent.name }), status, element("p", { class: "meta", text: `namespace ${agent.namespace} · ${agent.agentId}` }));
    const contexts = new Set([...agent.sources, ...agent.actors].map((p) => p.context));
    for (const context of [...contexts].sort()) {
      const points = element("ul");
      for (const s of agent.sources.filter((p) => p.context === context)) points.append(element("li", { text: `source ${s.name} (${s.valueType})` }));
      for (const a of agent.actors.filter((p) => p.context === context)) points.append(element("li", { text: `actor ${a.name} (${a.valueType})` }));
      card.append(element("p", { class: "meta", text: `IO node in ${context}` }), points);
    }
    const devices = state.devices.get(agent.agentId);
    if (devices && devices.length) {
      const items = element("ul", { class: "devices" });
      for (const device of devices) {
        const ok = device.state === "ok";
        items.append(element("li", { class: ok ? "state-ok" : "state-bad", "data-device-state": device.state || "",
          text: `${device.label || "device"}: ${device.state || "unknown"}${device.error ? `: ${device.error}` : ""}` }));
      }
      card.append(element("p", { class: "meta", text: "Devices" }), items);
    }
    list.append(card);
  }
}

function renderShared() {
  const list = document.getElementById("shared-list");
  list.replaceChildren();
  const objects = [...state.shared.values()].sort((a, b) => a.name.localeCompare(b.name));
  if (objects.length === 0) { list.append(element("p", { class: "empty", text: "No shared object." })); return; }
  for (const object of objects) {
    const host = state.agents.get(object.hostId)?.name || object.hostId;
    const rows = element("tbody");
    for (const [key, value] of Object.entries(object.data)) {
      rows.append(element("tr", {}, element("th", { scope: "row", text: key }), element("td", { text: JSON.stringify(value) })));
    }
    if (Object.keys(object.data).length === 0) rows.append(element("tr", {}, element("td", { text: "no keys" })));
    list.append(element("table", { class: "shared-object", "data-name": object.name },
      element("caption", { text: `${object.name}, version ${object.version}, hosted by ${host}${object.readOnly ? ", read-only" : ""}` }),
      rows));
  }
}

// ---- the stream

let connected = false;
function connect() {
  const stream = new EventSource("events");
  stream.addEventListener("snapshot", (message) => { connected = true; reset(JSON.parse(message.data)); });
  stream.onmessage = (message) => apply(JSON.parse(message.data));
  stream.onerror = () => { connected = false; showStatus(); };
}

document.getElementById("chart-note").hidden = chartsAvailable;
setInterval(() => {
  for (const [sourceId, card] of cards) {
    const value = state.values.get(sourceId);
    if (value) card.freshness.textContent = `received ${ago(value.time)}${value.rate != null ? `, ${value.rate} values/s` : ""}`;
  }
}, 1000);
connect();
