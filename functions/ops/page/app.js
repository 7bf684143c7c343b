// The operator's page: reads the JSON routes beside it with the key in a header, renders with
// textContent only (no HTML from data), and sends every action once with an Idempotency-Key.
"use strict";

const KEY = "firmspace-ops-key";
// The routes sit beside the page, whichever prefix the gateway put before /ops.
const BASE = location.pathname.replace(/\/?$/, "/");
const state = { key: sessionStorage.getItem(KEY), admin: false, org: "" };
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "class") node.className = value;
    else if (name.startsWith("data-")) node.setAttribute(name, value);
    else node[name] = value;
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function api(path, options = {}) {
  const headers = { Authorization: "Bearer " + state.key, ...(options.headers || {}) };
  const res = await fetch(BASE + path, { ...options, headers, cache: "no-store" });
  const body = await res.json().catch(() => ({}));
  if (res.status === 401) { signOut("The key was not accepted."); throw new Error("unauthorized"); }
  return { status: res.status, body };
}

function scoped(path) {
  if (!state.org) return path;
  return path + (path.includes("?") ? "&" : "?") + "org=" + encodeURIComponent(state.org);
}

function say(text) { $("status").textContent = text; }

function signOut(why) {
  sessionStorage.removeItem(KEY);
  state.key = null;
  $("main").hidden = true;
  $("who").hidden = true;
  $("login").hidden = false;
  $("login-error").hidden = !why;
  $("login-error").textContent = why || "";
}

async function signIn(key) {
  state.key = key;
  const { status, body } = await api("orgs");
  if (status !== 200) { signOut(body.detail || "The key was not accepted."); return; }
  sessionStorage.setItem(KEY, key);
  const summary = await api("summary");
  state.admin = summary.body.queues !== null && summary.body.queues !== undefined;
  const picker = $("org");
  picker.replaceChildren();
  if (state.admin) picker.append(el("option", { value: "" }, "all organisations"));
  for (const org of body.items) picker.append(el("option", { value: org.id }, org.name ? `${org.name} (${org.id})` : org.id));
  state.org = state.admin ? (body.items.length === 1 ? body.items[0].id : "") : "";
  picker.value = state.org;
  $("login").hidden = true;
  $("main").hidden = false;
  $("who").hidden = false;
  $("queues-card").hidden = !state.admin;
  $("dlq-card").hidden = !state.admin;
  $("consumers-card").hidden = !state.admin;
  await refresh();
}

function figure(value, level) {
  const cls = value === 0 ? "zero" : level || "";
  return el("td", { class: cls }, value);
}

function renderSummary(s) {
  const rows = Object.entries(s.events).map(([kind, c]) =>
    el("tr", { "data-kind": kind }, el("td", {}, kind), figure(c.today), figure(c.week), figure(c.waiting, "warn"),
      el("td", { class: c.oldest_waiting_at ? "warn" : "zero" }, c.oldest_waiting_at ? when(c.oldest_waiting_at) : "—"),
      el("td", { class: c.today ? "units" : "zero" },
        c.today ? `${c.units.write} W · ${c.units.read} R · ${c.units.sqs} SQS` : "—")));
  $("events-summary").tBodies[0].replaceChildren(...rows);
  $("review-open").textContent = s.review.open;
  $("review-open").className = s.review.open > 0 ? "alert" : "";
  $("review-reasons").replaceChildren(...Object.entries(s.review.by_reason).map(([r, n]) => el("li", {}, `${r}: ${n}`)));
  $("runs-check").textContent = s.runs.needs_check;
  $("runs-check").className = s.runs.needs_check > 0 ? "alert" : "";
  $("runs-failed").textContent = s.runs.failed;
  $("runs-failed").className = s.runs.failed > 0 ? "warn" : "";
  if (s.queues) {
    const rows = Object.entries(s.queues).map(([name, q]) =>
      el("tr", { "data-queue": name }, el("td", {}, name), figure(q.waiting), figure(q.in_flight), figure(q.dead, "alert")));
    $("queues").tBodies[0].replaceChildren(...rows);
  }
}

function renderChart(hours) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  const width = 960, height = 180, pad = 20, slot = (width - pad) / hours.length;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const totals = hours.map((h) => Object.values(h.stored).reduce((a, b) => a + b, 0));
  const top = Math.max(1, ...totals, ...hours.map((h) => h.duplicates));
  const bar = (x, value, cls, w) => {
    const r = document.createElementNS(ns, "rect");
    const h = (height - 2 * pad) * (value / top);
    r.setAttribute("x", x); r.setAttribute("y", height - pad - h);
    r.setAttribute("width", w); r.setAttribute("height", h); r.setAttribute("class", cls);
    const title = document.createElementNS(ns, "title");
    title.textContent = `${value}`;
    r.append(title);
    return r;
  };
  hours.forEach((h, i) => {
    const x = pad + i * slot;
    svg.append(bar(x + 2, totals[i], "stored", slot / 2 - 3), bar(x + slot / 2, h.duplicates, "dup", slot / 2 - 3));
    if (i % 3 === 0) {
      const t = document.createElementNS(ns, "text");
      t.setAttribute("x", x + 2); t.setAttribute("y", height - 5);
      t.textContent = h.hour.slice(11, 16);
      svg.append(t);
    }
  });
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", 0); label.setAttribute("y", 12);
  label.textContent = `max ${top}`;
  svg.append(label);
  $("chart").replaceChildren(svg);
}

function when(at) { return at ? at.replace("T", " ").slice(0, 19) : ""; }

// An action sent once: one key per click, the button held until the answer.
async function act(button, path, body) {
  button.disabled = true;
  try {
    const { status, body: answer } = await api(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": newKey() },
      body: JSON.stringify(body || {}),
    });
    const what = path.split("/").filter((p) => !/^[A-Za-z0-9_-]{20,}$/.test(p)).join(" ");
    $("last-action").textContent = status < 300
      ? `${what}: ${JSON.stringify(answer)}`
      : `${what}: ${answer.error}: ${answer.detail}`;
  } finally {
    button.disabled = false;
    await refresh();
  }
}

function noOrg(table, columns) {
  table.tBodies[0].replaceChildren(el("tr", {}, el("td", { class: "empty", colSpan: columns }, "Choose an organisation to see its items.")));
  return true;
}

function empty(table, columns, text) {
  table.tBodies[0].replaceChildren(el("tr", {}, el("td", { class: "empty", colSpan: columns }, text)));
}

async function renderReview(current) {
  const table = $("review");
  if (state.admin && !state.org) return noOrg(table, 5);
  const { body } = await api(scoped(`review?state=${$("review-state").value}`));
  if (!current()) return;
  if (!body.items.length) return empty(table, 5, "Nothing here.");
  table.tBodies[0].replaceChildren(...body.items.map((item) => {
    const cell = el("td");
    if (item.state === "open" && item.reason === "payment_proposed") {
      // A model's proposal: a person reads its cause, then books it (Apply, at most the amount
      // proposed) or not (Dismiss).
      const d = item.detail || {};
      cell.append(cause(d));
      const note = el("input", { placeholder: "note", class: "note" });
      const amount = el("input", { placeholder: d.amount, class: "amount", size: 8 });
      const apply = el("button", { type: "button", class: "apply" }, `Apply ${d.amount} ${d.currency}`);
      const dismiss = el("button", { type: "button", class: "dismiss" }, "Dismiss");
      const decide = (button, decision) => {
        const body = { note: note.value || decision, decision };
        if (decision === "apply" && amount.value) body.amount = amount.value;
        return act(button, `review/${item.id}/resolve`, body);
      };
      apply.addEventListener("click", () => decide(apply, "apply"));
      dismiss.addEventListener("click", () => decide(dismiss, "dismiss"));
      cell.append(`${d.invoice_number || d.invoice_id}: `, amount, " ", note, " ", apply, " ", dismiss);
    } else if (item.state === "open" && item.reason === "possible_same_money") {
      // Lookalike money: a person says whether it is the same (the later payment reversed
      // once) or two payments (nothing moves). Never merged by the machine.
      const d = item.detail || {};
      const earlier = (d.lookalikes || []).map((l) => el("li", {}, `${l.source} ${l.external_id} · ${l.amount} · ${when(l.at)}`));
      cell.append(el("div", { class: "cause" }, `Like ${d.amount} ${d.currency} on ${d.invoice_number || d.invoice_id}:`, el("ul", {}, ...earlier)));
      const note = el("input", { placeholder: "note", class: "note" });
      const same = el("button", { type: "button", class: "same-money" }, "Same money");
      const distinct = el("button", { type: "button", class: "distinct" }, "Distinct");
      const decide = (button, decision) => act(button, `review/${item.id}/resolve`, { note: note.value || decision, decision });
      same.addEventListener("click", () => decide(same, "same_money"));
      distinct.addEventListener("click", () => decide(distinct, "distinct"));
      cell.append(note, " ", same, " ", distinct);
    } else if (item.state === "open" && item.reason === "possible_same_contact") {
      const note = el("input", { placeholder: "note", class: "note" });
      const distinct = el("button", { type: "button", class: "distinct" }, "Distinct");
      distinct.addEventListener("click", () => act(distinct, `review/${item.id}/resolve`, { note: note.value || "distinct", decision: "distinct" }));
      cell.append(note, " ", distinct);
    } else if (item.state === "open") {
      const note = el("input", { placeholder: "note", class: "note" });
      const button = el("button", { type: "button", class: "resolve" }, "Resolve");
      button.addEventListener("click", () => act(button, `review/${item.id}/resolve`, { note: note.value || "resolved" }));
      cell.append(note, " ", button);
    } else {
      const decided = item.decision ? `${item.decision} · ` : "";
      cell.append(`${decided}${item.resolved_by} · ${when(item.resolved_at)} · ${item.note || ""}`);
    }
    return el("tr", { "data-id": item.id }, el("td", {}, when(item.at)), el("td", {}, item.reason),
      el("td", {}, el("div", { class: "about" }, item.about), el("div", { class: "key" }, item.key)),
      el("td", {}, item.state), cell);
  }));
}

// What led a model to propose: the message and its sender, what the invoice owes now, and a
// warning when the invoice is not the sender's. Shown as text, never as markup.
function cause(d) {
  const t = d.trigger || {};
  const box = el("div", { class: "cause" });
  const sender = (t.sender && (t.sender.name || t.sender.contact_id)) || "an event";
  box.append(el("div", {}, `From ${sender}` + (t.conversation_id ? ` in ${t.conversation_id}` : "")));
  if (t.text) box.append(el("blockquote", { class: "message" }, t.text));
  if (d.open_now) box.append(el("div", {}, `The invoice owes ${d.open_now} ${d.currency} now.`));
  const known = t.sender && t.sender.contact_id;
  if (known && !t.sender_is_invoice_contact) {
    box.append(el("div", { class: "warn not-sender" }, "This invoice is not the sender's."));
  } else if (t.sender && !known) {
    box.append(el("div", { class: "warn unknown-sender" },
      "The sender is no known contact: nothing ties this invoice to them."));
  }
  return box;
}

async function renderRuns(current) {
  const table = $("runs");
  if (state.admin && !state.org) return noOrg(table, 5);
  const { body } = await api(scoped(`runs?state=${$("runs-state").value}`));
  if (!current()) return;
  if (!body.items.length) return empty(table, 5, "Nothing here.");
  table.tBodies[0].replaceChildren(...body.items.map((run) => {
    const cell = el("td");
    if (run.state === "needs_check") {
      const delivered = el("button", { type: "button", class: "second" }, "It arrived");
      delivered.addEventListener("click", () => act(delivered, `runs/${run.id}/decide`, { decision: "delivered" }));
      cell.append(delivered);
      if (run.resendable) {
        const resend = el("button", { type: "button" }, "Send once more");
        resend.addEventListener("click", () => act(resend, `runs/${run.id}/decide`, { decision: "resend" }));
        cell.append(" ", resend);
      }
    }
    // An AI run's tool calls, each with its outcome (a payment is only ever proposed).
    const calls = (run.calls || []).map((c) => `${c.tool}: ${c.outcome}${c.error ? ` (${c.error})` : ""}`);
    if (calls.length) cell.append(calls.join(", "));
    const state = run.tokens ? `${run.state} · ${run.tokens.total} tokens` : run.state;
    return el("tr", { "data-id": run.id }, el("td", {}, when(run.updated_at)), el("td", { class: "key" }, run.key),
      el("td", {}, run.attempts), el("td", {}, run.reason ? `${state} · ${run.reason}` : state), cell);
  }));
}

// The events list's filters as the API takes them: from and to in UTC (the inputs are read as
// UTC), and the text to find.
function eventFilters() {
  const utc = (id) => ($(id).value ? new Date($(id).value + "Z").toISOString() : "");
  return { from: utc("events-from"), to: utc("events-to"), q: $("events-q").value.trim() };
}

function eventsPath(cursor) {
  const f = eventFilters();
  let path = `events?kind=${$("events-kind").value}&limit=20`;
  for (const name of ["from", "to", "q"]) if (f[name]) path += `&${name}=${encodeURIComponent(f[name])}`;
  if (cursor) path += `&cursor=${encodeURIComponent(cursor)}`;
  return scoped(path);
}

function eventRow(event) {
  const badges = el("td");
  for (const c of event.consequences) badges.append(el("span", { class: `badge ${c.state}`, title: c.key }, `${c.kind} ${c.state}`));
  const replay = el("button", { type: "button", class: "second" }, "Replay");
  replay.addEventListener("click", () => act(replay, `events/${event.id}/replay`, {}));
  return el("tr", { "data-id": event.id }, el("td", {}, when(event.at)), el("td", { class: "key" }, event.key),
    el("td", { class: "summary" }, event.summary), el("td", {}, event.outcome), badges, el("td", {}, replay));
}

async function renderEvents(current, cursor) {
  const table = $("events");
  $("events-more").hidden = true;
  if (state.admin && !state.org) return noOrg(table, 6);
  const { status, body } = await api(eventsPath(cursor));
  if (!current()) return;
  if (status !== 200) return empty(table, 6, `${body.error}: ${body.detail}`);
  const rows = body.items.map(eventRow);
  if (cursor) table.tBodies[0].append(...rows);
  else if (!rows.length) empty(table, 6, "No events of this kind here.");
  else table.tBodies[0].replaceChildren(...rows);
  state.eventsCursor = body.cursor;
  $("events-more").hidden = !body.cursor;
}

// A bulk replay: the dry run's count first, then the person confirms; each call sends for
// 15 s at most and the next goes on from its cursor.
async function bulkReplay() {
  const f = eventFilters();
  if (!f.from || !f.to) { $("last-action").textContent = "events replay: set from and to first"; return; }
  const window = { kind: $("events-kind").value, from: f.from, to: f.to };
  // The count goes on from its cursor while a call's 20 s ran out before the window's end.
  let events = 0, missing = 0, cursor = null;
  do {
    const { status, body } = await api(scoped("events/replay"), {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": newKey() },
      body: JSON.stringify(cursor ? { ...window, dry_run: true, cursor } : { ...window, dry_run: true }),
    });
    if (status !== 200) { $("last-action").textContent = `events replay: ${body.error}: ${body.detail}`; return; }
    events += body.events; missing += body.missing; cursor = body.cursor;
  } while (cursor);
  $("bulk-count").textContent = `${events} events in this window, ${missing} consequences missing.`;
  $("bulk-go").disabled = missing === 0;
  $("bulk-confirm").hidden = false;
  state.bulk = window;
}

async function bulkGo() {
  $("bulk-go").disabled = true;
  let sent = 0, events = 0, cursor = null;
  try {
    do {
      const { status, body } = await api(scoped("events/replay"), {
        method: "POST",
        headers: { "Content-Type": "application/json", "Idempotency-Key": newKey() },
        body: JSON.stringify(cursor ? { ...state.bulk, cursor } : state.bulk),
      });
      if (status !== 200) { $("last-action").textContent = `events replay: ${body.error}: ${body.detail}`; return; }
      sent += body.sent; events += body.events; cursor = body.cursor;
    } while (cursor);
    $("last-action").textContent = `events replay: ${JSON.stringify({ events, sent })}`;
  } finally {
    $("bulk-confirm").hidden = true;
    await refresh();
  }
}

async function renderDlq(current) {
  if (!state.admin) return;
  const { body } = await api(`dlq/${$("dlq-queue").value}`);
  if (!current()) return;
  const table = $("dlq");
  if (!body.items.length) return empty(table, 3, "No dead letters.");
  table.tBodies[0].replaceChildren(...body.items.map((m) =>
    el("tr", { "data-id": m.id }, el("td", {}, when(m.first_at)), el("td", { class: "alert" }, m.receives),
      el("td", { class: "key" }, JSON.stringify(m.body)))));
}

async function renderPaused(current) {
  const table = $("paused");
  if (state.admin && !state.org) return noOrg(table, 4);
  const { body } = await api(scoped("integrations"));
  if (!current()) return;
  if (!body.items.length) return empty(table, 4, "No integration is paused.");
  table.tBodies[0].replaceChildren(...body.items.map((i) => {
    const resume = el("button", { type: "button" }, "Resume");
    resume.addEventListener("click", () => act(resume, scoped(`integrations/${i.integration_id}/resume`), {}));
    return el("tr", { "data-id": i.integration_id }, el("td", { class: "key" }, `${i.kind} ${i.provider || ""} ${i.integration_id}`),
      el("td", {}, `${i.paused_by} · ${when(i.paused_at)}`), el("td", { class: i.held ? "alert" : "" }, i.held), el("td", {}, resume));
  }));
}

async function renderConsumers(current) {
  if (!state.admin) return;
  const { body } = await api("consumers");
  if (!current()) return;
  const table = $("consumers");
  if (!body.items.length) return empty(table, 4, "No workers to pause here.");
  table.tBodies[0].replaceChildren(...body.items.map((c) => {
    const verb = c.paused ? "resume" : "pause";
    const button = el("button", { type: "button", class: c.paused ? "" : "second" }, c.paused ? "Resume" : "Pause");
    button.addEventListener("click", () => act(button, `consumers/${c.name}/${verb}`, {}));
    const last = c.action ? `${c.action} by ${c.by} · ${when(c.at)}` : "";
    return el("tr", { "data-id": c.name }, el("td", {}, c.name),
      el("td", { class: c.paused ? "alert" : "" }, c.paused ? "paused" : "running"), el("td", {}, last), el("td", {}, button));
  }));
}

// Only the latest refresh draws: an older one that answers late (the organisation changed
// meanwhile) is dropped.
let generation = 0;

async function refresh() {
  const mine = ++generation;
  const current = () => mine === generation;
  say("Loading…");
  const summary = await api(scoped("summary"));
  if (!current()) return;
  if (summary.status !== 200) {
    say(`The summary could not be read (${summary.body.error || summary.status}); try Refresh.`);
    return;
  }
  renderSummary(summary.body);
  if (state.org || !state.admin) {
    const chart = await api(scoped("chart"));
    if (!current()) return;
    renderChart(chart.body.hours);
  } else {
    $("chart").replaceChildren(el("p", { class: "empty" }, "Choose an organisation to see its chart."));
  }
  await Promise.all([renderReview(current), renderRuns(current), renderEvents(current), renderDlq(current), renderConsumers(current), renderPaused(current)]);
  if (!current()) return;
  $("main").dataset.loaded = summary.body.at;
  $("main").dataset.org = state.org;
  say(`Updated ${when(summary.body.at)} UTC`);
}

function start() {
  $("login-form").addEventListener("submit", (e) => { e.preventDefault(); signIn($("key").value.trim()); $("key").value = ""; });
  $("logout").addEventListener("click", () => signOut());
  $("refresh").addEventListener("click", () => refresh());
  $("org").addEventListener("change", () => { state.org = $("org").value; refresh(); });
  for (const id of ["review-state", "runs-state", "events-kind", "dlq-queue"]) $(id).addEventListener("change", () => refresh());
  $("redrive").addEventListener("click", (e) => act(e.target, `dlq/${$("dlq-queue").value}/redrive`, {}));
  $("events-filter").addEventListener("submit", (e) => { e.preventDefault(); refresh(); });
  $("events-more").addEventListener("click", () => renderEvents(() => true, state.eventsCursor));
  $("bulk-replay").addEventListener("click", () => bulkReplay());
  $("bulk-go").addEventListener("click", () => bulkGo());
  $("bulk-cancel").addEventListener("click", () => { $("bulk-confirm").hidden = true; });
  $("pause-integration").addEventListener("click", (e) => {
    const id = $("pause-id").value.trim();
    if (id) act(e.target, `integrations/${id}/pause`, {});
  });
  if (state.key) signIn(state.key); else signOut();
}

start();
