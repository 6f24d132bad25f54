// The operators' page: every user's failed validations, unanswerable questions, metric
// names the catalog did not know, the slowest questions, and the dead letters with a
// replay button. Everything shown comes from data and goes in as text (dom.js).

import { ApiError, api, auth, onUnauthorized } from "./api.js";
import { h, replaceChildren } from "./dom.js";

const $ = (id) => document.getElementById(id);

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

function table(caption, columns, rows) {
  if (!rows.length) return h("p", { class: "muted" }, `None ${caption}.`);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "admin-table" },
      h("thead", null, h("tr", null, columns.map(([title]) => h("th", { scope: "col" }, title)))),
      h(
        "tbody",
        null,
        rows.map((row) => h("tr", null, columns.map(([, cell]) => h("td", null, cell(row))))),
      ),
    ),
  );
}

const QUESTION_COLUMNS = [
  ["Asked", (q) => when(q.asked_at)],
  ["User", (q) => q.user || "?"],
  ["Question", (q) => h("span", { class: "question-cell" }, q.question)],
  ["Intent", (q) => q.intent || "-"],
];

const KINDS = {
  failed: [
    ...QUESTION_COLUMNS,
    [
      "What failed",
      (q) =>
        q.issues.length
          ? h("ul", { class: "plain" }, q.issues.map((i) => h("li", null, `${i.severity}: ${i.message}`)))
          : "-",
    ],
  ],
  unanswerable: [
    ...QUESTION_COLUMNS,
    ["No data for", (q) => (q.missing.length ? q.missing.join(", ") : "out of scope")],
  ],
  slowest: [
    ...QUESTION_COLUMNS,
    ["Time", (q) => (q.total_ms === null ? "-" : `${Math.round(q.total_ms).toLocaleString()} ms`)],
  ],
};

async function showQuestions(kind, days) {
  const body = await api(`/v1/admin/questions?kind=${kind}&days=${days}&limit=50`);
  replaceChildren($(`admin-${kind}-body`), table("in this time", KINDS[kind], body.questions));
}

async function showMisses() {
  const body = await api("/v1/admin/metric-misses?limit=50");
  replaceChildren(
    $("admin-misses-body"),
    table(
      "so far",
      [
        ["Phrase", (m) => m.example],
        ["Times", (m) => String(m.count)],
        ["Last", (m) => when(m.last_seen)],
        [
          "Read as",
          (m) => (m.resolved_to ? `${m.resolved_to} (${m.method}, ${Math.round((m.confidence || 0) * 100)}%)` : "nothing"),
        ],
      ],
      body.misses,
    ),
  );
}

async function replay(letter, button, status) {
  button.disabled = true;
  status.textContent = "sending again…";
  try {
    const replayed = await api(`/v1/admin/dead-letters/${letter.seq}/replay`, { method: "POST" });
    status.textContent = `asked again as ${replayed.request_id}`;
    button.remove();
  } catch (error) {
    status.textContent = error instanceof ApiError ? error.message : String(error);
    status.classList.add("error");
    button.disabled = error instanceof ApiError && error.status === 409;
  }
}

async function showDeadLetters() {
  const body = await api("/v1/admin/dead-letters?limit=100");
  replaceChildren(
    $("admin-dead-body"),
    table(
      "now",
      [
        ["Dead since", (d) => when(d.dead_at)],
        ["Stage", (d) => d.stage || "?"],
        ["Request", (d) => d.request_id || "-"],
        ["Reason", (d) => d.reason],
        [
          "",
          (d) => {
            const status = h("span", { class: "small muted", role: "status" });
            const button = h("button", { type: "button", class: "replay", "data-seq": String(d.seq) }, "Replay");
            button.addEventListener("click", () => replay(d, button, status));
            return h("span", { class: "replay-cell" }, button, " ", status);
          },
        ],
      ],
      body.dead_letters,
    ),
  );
}

async function refresh() {
  const days = $("admin-days").value;
  $("admin-error").textContent = "";
  try {
    await Promise.all([
      showDeadLetters(),
      showQuestions("failed", days),
      showQuestions("unanswerable", days),
      showMisses(),
      showQuestions("slowest", days),
    ]);
    $("admin-main").dataset.loaded = "true";
  } catch (error) {
    $("admin-error").textContent =
      error instanceof ApiError && error.status === 403
        ? "This page is for finq's operators; sign in with an operator's key."
        : error.message;
    if (error instanceof ApiError && error.status === 403) askForKey("");
  }
}

let keyWanted = null;

function askForKey(reason) {
  $("admin-sign-in-reason").textContent = reason;
  $("admin-sign-in").hidden = false;
  $("admin-key").focus();
  return new Promise((resolve) => {
    keyWanted = resolve;
  });
}

$("admin-sign-in").addEventListener("submit", (event) => {
  event.preventDefault();
  auth.set($("admin-key").value.trim());
  $("admin-key").value = "";
  $("admin-sign-in").hidden = true;
  if (keyWanted) keyWanted(true);
  keyWanted = null;
  refresh();
});
onUnauthorized(askForKey);
$("admin-refresh").addEventListener("click", refresh);
$("admin-days").addEventListener("change", refresh);
refresh();
