// finq's web app: chat with grounded answers (citations, chart, validation, how it was
// answered), document upload with progress, the metric catalog and the portfolio.
// Everything shown from the server or the user goes in as text (dom.js), never as HTML.

import { ApiError, api, ask, auth, onUnauthorized, upload } from "./api.js";
import { answerTableView, workingsView } from "./answertable.js";
import { renderChart } from "./chart.js";
import { showCompanies } from "./companies.js";
import { h, replaceChildren, s, safeUrl } from "./dom.js";
import { conversationDeleteButton, showDocuments } from "./yourdata.js";

const $ = (id) => document.getElementById(id);

const STARTERS = [
  "What was Apple's revenue in fiscal 2023?",
  "How did NVIDIA's net income change over the last five years?",
  "Compare Apple's and Alphabet's operating margin in fiscal 2024.",
  "Which valuation metrics do you have?",
];
const PORTFOLIO_QUESTIONS = [
  "What is my portfolio worth?",
  "How did my portfolio do this year?",
  "What are my holdings?",
  "Which of my holdings did worst this year?",
];
// The stages POST /v1/ask/stream reports, in order, as the page names them.
const STAGES = [
  ["accepted", "Question received"],
  ["routed", "Understood the question"],
  ["tools_done", "Fetched the data"],
  ["drafted", "Wrote the answer"],
  ["validated", "Checked every figure"],
];
const PIPELINE_ORDER = ["gateway", "router", "tools", "answerer", "validator"];

const state = {
  conversationId: null,
  asking: false,
  catalog: null,
};

// --- sign in ------------------------------------------------------------------------

let pendingSignIn = null;

function requestKey(reason) {
  if (pendingSignIn) return pendingSignIn;
  const dialog = $("sign-in-dialog");
  $("sign-in-reason").textContent = reason || "";
  $("api-key").value = "";
  showAccount();
  pendingSignIn = new Promise((resolve) => {
    let entered = false;
    const submit = (event) => {
      event.preventDefault();
      const key = $("api-key").value.trim();
      if (!key) return;
      auth.set(key);
      entered = true;
      dialog.close();
    };
    const cancel = () => dialog.close();
    const closed = () => {
      $("sign-in-form").removeEventListener("submit", submit);
      $("sign-in-cancel").removeEventListener("click", cancel);
      pendingSignIn = null;
      showAccount();
      resolve(entered);
    };
    $("sign-in-form").addEventListener("submit", submit);
    $("sign-in-cancel").addEventListener("click", cancel);
    dialog.addEventListener("close", closed, { once: true });
    dialog.showModal();
    $("api-key").focus();
  });
  return pendingSignIn;
}

function showAccount() {
  const signedIn = Boolean(auth.key);
  $("signed-in").textContent = signedIn ? "Signed in with an API key" : "";
  $("sign-in-button").hidden = signedIn;
  $("sign-out-button").hidden = !signedIn;
}

function afterIdentityChange() {
  startNewConversation();
  state.catalog = null;
  loadConversations();
  if (!$("view-portfolio").hidden) loadPortfolio();
  if (!$("view-documents").hidden) loadDocuments();
  if (!$("view-companies").hidden) loadCompanies();
}

// --- views --------------------------------------------------------------------------

const VIEWS = ["chat", "companies", "documents", "metrics", "portfolio"];

function showView(name, { focus = false } = {}) {
  if (!VIEWS.includes(name)) name = "chat";
  for (const view of VIEWS) $(`view-${view}`).hidden = view !== name;
  for (const tab of document.querySelectorAll(".tab")) {
    if (tab.dataset.view === name) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  if (name === "metrics") loadCatalog();
  if (name === "portfolio") loadPortfolio();
  if (name === "documents") loadDocuments();
  if (name === "companies") loadCompanies();
  if (focus) {
    const first = { chat: "question", companies: "companies-heading", documents: "upload-file", metrics: "metric-query", portfolio: "portfolio-heading" }[name];
    const el = $(first);
    if (el.tabIndex < 0 && !["INPUT", "TEXTAREA", "SELECT", "BUTTON"].includes(el.tagName)) el.tabIndex = -1;
    el.focus();
  }
  if (window.location.hash !== `#${name}`) history.replaceState(null, "", `#${name}`);
}

// --- conversations ------------------------------------------------------------------

function formatWhen(iso) {
  const when = new Date(iso);
  return Number.isNaN(when.getTime()) ? "" : when.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

async function loadConversations() {
  const status = $("conversations-status");
  try {
    const { conversations } = await api("/v1/conversations?limit=50");
    status.textContent = conversations.length ? "" : "No conversations yet.";
    replaceChildren(
      $("conversation-list"),
      conversations.map((c) =>
        h(
          "li",
          { class: "conversation-item" },
          h(
            "button",
            {
              type: "button",
              class: "conversation",
              "data-id": c.id,
              "aria-current": c.id === state.conversationId ? "true" : null,
              onclick: () => openConversation(c.id),
            },
            h("span", { class: "conversation-title" }, c.title),
            h("span", { class: "muted small" }, `${formatWhen(c.updated_at)} · ${c.message_count} messages`),
          ),
          conversationDeleteButton(c, conversationDeleted, (message) => {
            status.textContent = message;
          }),
        ),
      ),
    );
  } catch (error) {
    status.textContent = `Conversations could not be loaded: ${error.message}`;
  }
}

// A deleted conversation leaves the list; the thread is emptied when it was the open one.
function conversationDeleted(id) {
  if (state.conversationId === id) startNewConversation();
  loadConversations();
}

function markCurrentConversation() {
  for (const button of document.querySelectorAll(".conversation")) {
    if (button.dataset.id === state.conversationId) button.setAttribute("aria-current", "true");
    else button.removeAttribute("aria-current");
  }
}

function clearThread() {
  replaceChildren($("thread"), $("thread-empty"));
}

function startNewConversation() {
  state.conversationId = null;
  clearThread();
  $("thread-empty").hidden = false;
  markCurrentConversation();
}

async function openConversation(id) {
  if (state.asking) return;
  showView("chat");
  let detail;
  try {
    detail = await api(`/v1/conversations/${encodeURIComponent(id)}`);
  } catch (error) {
    $("ask-error").textContent = `That conversation could not be opened: ${error.message}`;
    return;
  }
  state.conversationId = detail.id;
  clearThread();
  $("thread-empty").hidden = true;
  const thread = $("thread");
  thread.append(h("h3", { class: "thread-title", tabindex: "-1", id: "thread-title" }, detail.title));
  for (const message of detail.messages) {
    if (message.role === "user") thread.append(questionView(message.content));
    else thread.append(storedAnswerView(message));
  }
  markCurrentConversation();
  $("ask-error").textContent = "";
  $("thread-title").focus();
}

// --- asking -------------------------------------------------------------------------

function questionView(text) {
  return h("div", { class: "turn question" }, h("span", { class: "who" }, "You"), h("p", { class: "question-text" }, text));
}

function pendingView() {
  const stages = h(
    "ol",
    { class: "stages", hidden: true, "aria-label": "Progress" },
    STAGES.map(([name, label]) => h("li", { "data-stage": name }, h("span", { class: "stage-mark", "aria-hidden": "true" }), label)),
  );
  const started = performance.now();
  const view = h(
    "div",
    { class: "turn answer pending", "aria-busy": "true" },
    h("span", { class: "who" }, "finq"),
    h("p", { class: "working" }, h("span", { class: "spinner", "aria-hidden": "true" }), "Working on it…"),
    stages,
  );
  // A model's answer as it writes it (draft_text events): shown as text, marked as a draft
  // until the checked answer takes its place.
  const draftMark = h("span", { class: "draft-mark small" }, "writing…");
  const draftText = h("p", { class: "answer-text draft-text" });
  const draft = h("div", { class: "draft", hidden: true, "aria-label": "Draft answer, not yet checked" }, draftMark, draftText);
  let draftAttempt = null;
  let draftSoFar = "";
  const failure = h("p", { class: "error", hidden: true });
  view.append(draft, failure);
  view.draft = () => (draftAttempt === null ? null : draftSoFar);
  view.onStage = (name, event) => {
    if (name === "draft_text") {
      const summary = (event && event.summary) || {};
      if (typeof summary.text !== "string") return;
      // An answer sent back to be written again starts a new draft.
      if (event.attempt !== draftAttempt) {
        draftAttempt = event.attempt;
        draftSoFar = "";
        draftMark.textContent = draftAttempt > 0 ? "writing again…" : "writing…";
      }
      draftSoFar += summary.text;
      draftText.textContent = draftSoFar;
      if (draft.hidden) {
        draft.hidden = false;
        draft.scrollIntoView({ block: "nearest" });
      }
      return;
    }
    if (name === "drafted" && draftAttempt !== null) draftMark.textContent = "draft · checking…";
    if (name === "failed") {
      const summary = (event && event.summary) || {};
      failure.hidden = false;
      failure.textContent = `The ${(event && event.stage) || "a"} stage gave up: ${summary.message || "no reason given"}`;
      return;
    }
    const item = stages.querySelector(`[data-stage="${CSS.escape(name)}"]`);
    if (!item) return;
    stages.hidden = false;
    // A later stage means the earlier ones are done too.
    let done = true;
    for (const li of stages.children) {
      if (done && !li.classList.contains("done")) {
        li.classList.add("done");
        li.append(h("span", { class: "stage-time muted small" }, ` ${((performance.now() - started) / 1000).toFixed(1)} s`));
      }
      if (li === item) done = false;
    }
    const detail = stageDetail(name, event);
    if (detail) {
      const old = item.querySelector(".stage-detail");
      if (old) old.remove();
      item.append(h("span", { class: "stage-detail muted small" }, ` · ${detail}`));
    }
  };
  return view;
}

function stageDetail(name, event) {
  const summary = event && event.summary;
  if (!summary) return "";
  const count = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  switch (name) {
    case "routed":
      return `${summary.intent} (${summary.decided_by})`;
    case "tools_done": {
      const tools = summary.tools || [];
      const facts = tools.reduce((sum, tool) => sum + (tool.facts || 0), 0);
      const passages = tools.reduce((sum, tool) => sum + (tool.passages || 0), 0);
      return `${count(tools.length, "tool")}: ${count(facts, "figure")}${passages ? `, ${count(passages, "passage")}` : ""}`;
    }
    case "drafted":
      return summary.mode === "llm" ? "by a model" : "from a template";
    case "validated":
      return summary.passed ? (summary.repairs ? `passed after ${count(summary.repairs, "repair")}` : "passed") : `not passed (${summary.severity})`;
    default:
      return "";
  }
}

async function askQuestion(text, { newConversation = false } = {}) {
  const question = text.trim();
  if (!question || state.asking) return;
  showView("chat");
  if (newConversation) startNewConversation();
  state.asking = true;
  $("send").disabled = true;
  $("ask-error").textContent = "";
  $("thread-empty").hidden = true;
  const thread = $("thread");
  thread.append(questionView(question));
  const pending = pendingView();
  thread.append(pending);
  pending.scrollIntoView({ block: "end" });
  try {
    const answer = await ask(question, state.conversationId, (name, data) => {
      // The question is saved in its conversation once accepted, answered or not.
      if (name === "accepted" && data && data.conversation_id) state.conversationId = data.conversation_id;
      pending.onStage(name, data);
    });
    state.conversationId = answer.conversation_id;
    const view = answerView(answer);
    const revised = revisedNote(pending.draft(), answer);
    if (revised) view.querySelector(".answer-head").after(revised);
    pending.replaceWith(view);
    view.scrollIntoView({ block: "nearest" });
    loadConversations();
  } catch (error) {
    const retry = h("button", { type: "button", class: "chip", onclick: () => { failure.remove(); thread.lastElementChild.remove(); askQuestion(question); } }, "Try again");
    const failure = h(
      "div",
      { class: "turn answer failed", role: "alert" },
      h("span", { class: "who" }, "finq"),
      h("p", { class: "error" }, explain(error)),
      retry,
    );
    pending.replaceWith(failure);
  } finally {
    state.asking = false;
    $("send").disabled = false;
  }
}

// Said when the checked answer is not the draft the model was seen writing (the check
// repaired it, had it written again, or put the template's answer in its place).
function revisedNote(draft, answer) {
  if (draft === null || draft.trim() === String(answer.answer || "").trim()) return null;
  return h("p", { class: "revised muted small" }, "Revised after checking: this differs from the draft shown while it was written.");
}

function explain(error) {
  if (!(error instanceof ApiError)) return `Something went wrong: ${error.message}`;
  if (error.status === 504 || error.code === "deadline_exceeded") return `No answer in time. ${error.message}`;
  if (error.status === 429 || error.status === 503 || error.code === "unavailable") return `finq is busy; try again in a moment. (${error.message})`;
  return error.message;
}

// --- an answer ----------------------------------------------------------------------

function answerView(answer) {
  const view = h("div", { class: "turn answer", "data-request-id": answer.request_id });
  view.append(
    h("div", { class: "answer-head" }, h("span", { class: "who" }, "finq"), validationBadge(answer.validation, answer)),
    h("p", { class: "answer-text" }, answer.answer),
  );
  if (answer.needs_clarification && answer.clarifying_question && answer.clarifying_question !== answer.answer) {
    view.append(h("p", { class: "clarify" }, answer.clarifying_question));
  }
  // Several years or figures: the table under the lead, each computed figure's working behind it.
  for (const part of [answerTableView(answer.table), workingsView(answer.workings)]) if (part) view.append(part);
  const chart = answer.chart ? renderChart(answer.chart) : null;
  if (chart) view.append(chart);
  if (answer.citations && answer.citations.length) view.append(citationsView(answer.citations));
  if (answer.suggestions && answer.suggestions.length) view.append(suggestionsView(answer.suggestions));
  view.append(howView(answer));
  return view;
}

function validationBadge(validation, answer) {
  if (!validation || typeof validation.passed !== "boolean") return null;
  const repairs = validation.repairs || [];
  const issues = validation.issues || [];
  const label = validation.passed ? (repairs.length ? "Verified, with repairs" : "Verified") : `Not verified (${validation.severity})`;
  const facts = (answer && answer.facts) || [];
  const citations = (answer && answer.citations) || [];
  const checked = validation.passed
    ? "Every number, year, date and citation in this answer was checked against the data finq fetched"
    : "The check of this answer's numbers, years, dates and citations found problems";
  const counts = answer && answer.facts ? ` (${facts.length} figure${facts.length === 1 ? "" : "s"}, ${citations.length} source${citations.length === 1 ? "" : "s"}).` : ".";
  return h(
    "details",
    { class: `validation ${validation.passed ? "passed" : "failed"}` },
    h("summary", { class: "badge" }, h("span", { "aria-hidden": "true" }, validation.passed ? "✓ " : "⚠ "), label),
    h(
      "div",
      { class: "validation-body" },
      h("p", null, checked + counts),
      validation.attempts > 1 ? h("p", null, `Written ${validation.attempts} times before this answer.`) : null,
      repairs.length ? [h("p", { class: "label" }, "Repairs made"), h("ul", null, repairs.map((r) => h("li", null, r)))] : null,
      issues.length
        ? [
            h("p", { class: "label" }, "Issues"),
            h("ul", null, issues.map((i) => h("li", null, `${i.kind} (${i.severity}): ${i.message}`, i.text ? h("q", null, i.text) : null))),
          ]
        : null,
    ),
  );
}

function citationsView(citations) {
  return h(
    "details",
    { class: "citations" },
    h("summary", null, `Sources (${citations.length})`),
    h(
      "ol",
      null,
      citations.map((c) => {
        const where = [c.form, c.page ? `page ${c.page}` : null, !c.page && c.accession ? `accession ${c.accession}` : null].filter(Boolean).join(" · ");
        const url = c.url ? safeUrl(c.url) : null;
        const host = url ? new URL(url).hostname : "";
        return h(
          "li",
          { class: "citation" },
          h("span", { class: "citation-label" }, c.label),
          where ? h("span", { class: "muted small citation-where" }, where) : null,
          url
            ? h(
                "a",
                { href: url, target: "_blank", rel: "noopener noreferrer", class: "citation-link" },
                host.endsWith("sec.gov") ? "View on EDGAR" : `Open source (${host})`,
              )
            : null,
        );
      }),
    ),
  );
}

function suggestionsView(suggestions) {
  return h(
    "ul",
    { class: "chips suggestions", "aria-label": "Ask next" },
    suggestions.map((text) => h("li", null, h("button", { type: "button", class: "chip", onclick: () => askQuestion(text) }, text))),
  );
}

function understoodText(understood) {
  if (!understood) return [];
  const parts = [];
  const companies = (understood.companies || []).map((c) => (c.symbol ? `${c.name} (${c.symbol})` : c.name));
  if (companies.length) parts.push(["Companies", companies.join(", ")]);
  const metrics = (understood.metrics || []).map((m) => m.id);
  if (metrics.length) parts.push(["Metrics", metrics.join(", ")]);
  const periods = ((understood.periods && understood.periods.asked) || []).map((p) => p.text);
  if (periods.length) parts.push(["Periods", periods.join(", ")]);
  return parts;
}

function howView(answer) {
  const route = answer.route;
  const rows = [];
  if (route) {
    rows.push(["Intent", route.intent], ["Decided by", route.decided_by]);
    if (typeof route.confidence === "number") rows.push(["Confidence", `${Math.round(route.confidence * 100)}%`]);
    rows.push(...understoodText(route.understood));
  }
  const generation = answer.generation;
  if (generation && generation.mode) {
    const model = generation.mode === "llm" ? `a model (${generation.model || "unnamed"}; ${generation.prompt_tokens + generation.completion_tokens} tokens)` : "a template";
    rows.push(["Written by", model]);
    if (generation.fallback_reason) rows.push(["Model answer not used", generation.fallback_reason]);
  }
  const calls = (route && route.tool_calls) || [];
  const stages = h("div", { class: "stages-panel" });
  const panel = h(
    "details",
    { class: "how" },
    h("summary", null, "How this was answered"),
    h("div", { class: "how-body" },
      rows.length ? h("dl", { class: "facts-list" }, rows.map(([term, value]) => [h("dt", null, term), h("dd", null, String(value))])) : null,
      calls.length
        ? [
            h("p", { class: "label" }, "Tool calls"),
            h("ol", { class: "tool-calls" }, calls.map((call) => h("li", null, h("code", { class: "tool-name" }, call.tool), h("pre", { class: "tool-args" }, JSON.stringify(call.arguments, null, 2))))),
          ]
        : null,
      stages,
      h("p", { class: "muted small ids" }, `request ${answer.request_id || "–"}${answer.trace_id ? ` · trace ${answer.trace_id}` : ""}`),
    ),
  );
  let loaded = false;
  panel.addEventListener("toggle", () => {
    if (panel.open && !loaded) {
      loaded = true;
      loadStages(answer, stages);
    }
  });
  return panel;
}

// --- how long each stage took -------------------------------------------------------

function number(value) {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

// GET /v1/traces/{trace_id}: the trace's questions, each with its stages (start, duration,
// what the stage decided) and how it was routed and checked, in words.
function traceWaterfall(trace, requestId) {
  const questions = Array.isArray(trace.questions) ? trace.questions : [];
  const question = questions.find((q) => q.request_id === requestId) || questions[questions.length - 1];
  if (!question || !Array.isArray(question.stages) || !question.stages.length) return null;
  const origin = Date.parse(question.asked_at);
  const stages = question.stages.map((stage) => {
    const at = Date.parse(stage.started_at);
    const notes = [stage.decision, ...(stage.errors || [])].filter((note) => typeof note === "string" && note);
    return {
      name: stage.attempt > 0 ? `${stage.stage} (try ${stage.attempt + 1})` : String(stage.stage),
      start: Number.isFinite(at) && Number.isFinite(origin) ? Math.max(at - origin, 0) : null,
      duration: number(stage.duration_ms) ?? 0,
      explanation: notes.join(" "),
    };
  });
  const jaeger = trace.jaeger_url ? safeUrl(trace.jaeger_url) : null;
  const view = waterfall(stages, number(question.total_ms), question.explanation || null, "trace");
  if (jaeger) view.append(h("a", { href: jaeger, target: "_blank", rel: "noopener noreferrer" }, "Spans in Jaeger"));
  return view;
}

async function loadStages(answer, container) {
  replaceChildren(container, h("p", { class: "muted small" }, "Loading the stages…"));
  if (answer.trace_id) {
    try {
      const view = traceWaterfall(await api(`/v1/traces/${encodeURIComponent(answer.trace_id)}`), answer.request_id);
      if (view) {
        replaceChildren(container, view);
        return;
      }
    } catch {
      // no trace endpoint on this gateway, or the trace is not kept: the request log has
      // the stages' timings
    }
  }
  if (!answer.request_id) {
    replaceChildren(container);
    return;
  }
  try {
    const log = await api(`/v1/requests/${encodeURIComponent(answer.request_id)}`);
    const timings = Object.entries(log.timings_ms || {}).filter(([, ms]) => number(ms) !== null);
    timings.sort(([a], [b]) => rank(a) - rank(b));
    const stages = timings.map(([name, ms]) => ({ name, start: null, duration: ms, explanation: null }));
    replaceChildren(container, stages.length ? waterfall(stages, number(log.total_ms), null, "request log") : null);
  } catch (error) {
    replaceChildren(container, h("p", { class: "muted small" }, `Stage timings are not available: ${error.message}`));
  }
}

function rank(stage) {
  const at = PIPELINE_ORDER.indexOf(stage);
  return at < 0 ? PIPELINE_ORDER.length : at;
}

function waterfall(stages, totalMs, explanation, source) {
  let clock = 0;
  const placed = stages.map((stage) => {
    const start = stage.start ?? clock;
    clock = Math.max(clock, start + stage.duration);
    return { ...stage, start };
  });
  const total = Math.max(totalMs || 0, clock, 1);
  return h(
    "div",
    { class: "waterfall" },
    h("p", { class: "label" }, `Stages (${Math.round(total)} ms, from the ${source})`),
    explanation ? h("p", { class: "explanation" }, explanation.charAt(0).toUpperCase() + explanation.slice(1)) : null,
    h(
      "ol",
      { class: "waterfall-rows" },
      placed.map((stage) =>
        h(
          "li",
          { class: "waterfall-row" },
          h("span", { class: "stage-name" }, stage.name),
          s(
            "svg",
            { class: "waterfall-bar", viewBox: "0 0 100 10", preserveAspectRatio: "none", "aria-hidden": "true" },
            s("rect", { class: "track", x: 0, y: 0, width: 100, height: 10 }),
            s("rect", { class: "span", x: ((stage.start / total) * 100).toFixed(2), y: 0, width: Math.max((stage.duration / total) * 100, 0.8).toFixed(2), height: 10 }),
          ),
          h("span", { class: "stage-ms muted small" }, `${stage.duration < 10 ? stage.duration.toFixed(1) : Math.round(stage.duration)} ms`),
          stage.explanation ? h("span", { class: "stage-explanation muted small" }, stage.explanation) : null,
        ),
      ),
    ),
  );
}

// --- answers read back from a conversation ------------------------------------------

function storedAnswerView(message) {
  // The answer as it was first shown: its chart, sources, badge and suggestions.
  if (message.answer) return answerView(message.answer);
  const badge = h("span", { class: "badge-slot" });
  const how = h("div", { class: "how-slot" });
  const view = h(
    "div",
    { class: "turn answer", "data-request-id": message.request_id },
    h("div", { class: "answer-head" }, h("span", { class: "who" }, "finq"), badge),
    h("p", { class: "answer-text" }, message.content),
    how,
  );
  api(`/v1/requests/${encodeURIComponent(message.request_id)}`)
    .then((log) => {
      const answer = { request_id: message.request_id, route: log.route, validation: log.validation };
      badge.replaceWith(validationBadge(log.validation, null) || badge);
      how.replaceWith(howView(answer));
    })
    .catch(() => {
      if (message.intent) how.append(h("p", { class: "muted small" }, `Intent: ${message.intent}`));
    });
  return view;
}

// --- documents ----------------------------------------------------------------------

async function uploadDocument(event) {
  event.preventDefault();
  const fileInput = $("upload-file");
  const file = fileInput.files && fileInput.files[0];
  if (!file) return;
  const form = new FormData();
  form.append("file", file, file.name);
  const title = $("upload-title").value.trim();
  const symbol = $("upload-symbol").value.trim();
  if (title) form.append("title", title);
  if (symbol) form.append("symbol", symbol);
  const progress = h("progress", { max: "1", value: "0", class: "job-progress" });
  const status = h("p", { class: "job-status", role: "status" }, "Uploading…");
  const card = h("article", { class: "job" }, h("h3", { class: "job-name" }, file.name), progress, status);
  const name = card.querySelector(".job-name");
  name.id = `job-${Date.now()}`;
  progress.setAttribute("aria-labelledby", name.id);
  $("upload-jobs").prepend(card);
  $("upload-form").reset();
  let job;
  try {
    job = await upload(form, (fraction) => {
      status.textContent = `Uploading… ${Math.round(fraction * 100)}%`;
    });
  } catch (error) {
    card.classList.add("failed");
    status.textContent = `Upload refused: ${error.message}`;
    return;
  }
  card.dataset.documentId = job.id;
  await followJob(job, card, progress, status);
  loadDocuments();
}

// The user's uploads, each with its delete button (yourdata.js).
function loadDocuments() {
  showDocuments($("document-list"), $("documents-status"));
}

const STATUS_WORDS = { pending: "Waiting to be read", parsing: "Reading", embedding: "Indexing", ready: "Ready", failed: "Failed" };

async function followJob(job, card, progress, status) {
  for (;;) {
    progress.value = Math.max(0, Math.min(1, Number(job.progress) || 0));
    card.dataset.status = job.status;
    if (job.status === "ready") {
      progress.value = 1;
      const pages = job.page_count ? `${job.page_count} page${job.page_count === 1 ? "" : "s"}, ` : "";
      status.textContent = `Ready: ${pages}${job.chunk_count} passage${job.chunk_count === 1 ? "" : "s"} to search.`;
      const draft = () => {
        startNewConversation();
        showView("chat");
        $("question").value = `In ${job.title}, what does it say about `;
        $("question").focus();
      };
      card.append(h("button", { type: "button", class: "chip", onclick: draft }, "Ask about it"));
      return;
    }
    if (job.status === "failed") {
      card.classList.add("failed");
      status.textContent = `Failed: ${(job.error && job.error.message) || "the file could not be read"}`;
      return;
    }
    status.textContent = `${STATUS_WORDS[job.status] || job.status}… ${Math.round(progress.value * 100)}%`;
    await new Promise((resolve) => setTimeout(resolve, 500));
    try {
      job = await api(`/v1/documents/${encodeURIComponent(job.id)}`);
    } catch (error) {
      if (error.status === 0 || error.status === 503 || error.status === 429) continue;
      status.textContent = `Progress could not be read: ${error.message}`;
      return;
    }
  }
}

// --- metric catalog -----------------------------------------------------------------

// A label as it reads inside a sentence: "Free cash flow" → "free cash flow", "EPS" stays.
function midSentence(label) {
  return label.length > 1 && /[A-Z]/.test(label[0]) && /[a-z]/.test(label[1]) ? label[0].toLowerCase() + label.slice(1) : label;
}

function categoryName(category) {
  const words = category.replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

async function loadCatalog() {
  if (state.catalog) return;
  $("metric-count").textContent = "Loading the catalog…";
  try {
    state.catalog = await api("/v1/metrics/catalog");
  } catch (error) {
    $("metric-count").textContent = `The catalog could not be loaded: ${error.message}`;
    return;
  }
  const select = $("metric-category");
  replaceChildren(select, h("option", { value: "" }, "All categories"), state.catalog.categories.map((c) => h("option", { value: c }, categoryName(c))));
  showMetrics();
}

function showMetrics() {
  if (!state.catalog) return;
  const words = $("metric-query").value.toLowerCase().split(/\s+/).filter(Boolean);
  const category = $("metric-category").value;
  const matches = state.catalog.metrics.filter((m) => {
    if (category && m.category !== category) return false;
    const text = [m.id, m.label, m.category, m.description, m.formula || "", ...m.aliases].join(" ").toLowerCase();
    return words.every((word) => text.includes(word));
  });
  $("metric-count").textContent = `${matches.length} of ${state.catalog.metrics.length} metrics`;
  replaceChildren(
    $("metric-list"),
    matches.map((m) =>
      h(
        "li",
        { class: "metric", "data-id": m.id },
        h("h3", { class: "metric-label" }, m.label, " ", h("code", { class: "muted small" }, m.id)),
        h("p", { class: "muted small" }, `${categoryName(m.category)} · ${m.unit}${m.formula ? " · derived" : " · reported in filings"}`),
        h("p", null, m.description),
        m.formula ? h("p", { class: "formula" }, h("span", { class: "label" }, "Formula "), h("code", null, m.formula)) : null,
        m.aliases.length ? h("p", { class: "muted small" }, `Also asked as: ${m.aliases.join(", ")}`) : null,
        h("button", { type: "button", class: "chip", onclick: () => askQuestion(`What is ${midSentence(m.label)}?`, { newConversation: true }) }, `What is ${midSentence(m.label)}?`),
      ),
    ),
  );
}

// --- portfolio ----------------------------------------------------------------------

async function loadPortfolio() {
  const status = $("portfolio-status");
  status.textContent = "Loading your accounts…";
  try {
    const { accounts } = await api("/v1/portfolio/accounts");
    $("account-table").hidden = !accounts.length;
    status.textContent = accounts.length
      ? `${accounts.length} account${accounts.length === 1 ? "" : "s"}`
      : "No accounts yet: import your broker's activity CSV with `finq portfolio import` or POST /v1/portfolio/import.";
    replaceChildren(
      $("account-rows"),
      accounts.map((a) => h("tr", null, h("th", { scope: "row" }, a.name), h("td", null, a.kind.replace(/_/g, " ")), h("td", null, a.currency), h("td", null, formatWhen(a.created_at)))),
    );
  } catch (error) {
    status.textContent = `Accounts could not be loaded: ${error.message}`;
  }
}

// --- companies ----------------------------------------------------------------------

// A company's question starts a conversation of its own, as a metric's does.
function loadCompanies() {
  showCompanies($("company-list"), $("companies-status"), (text) => askQuestion(text, { newConversation: true }));
}

// --- wiring -------------------------------------------------------------------------

function chips(list, texts, options) {
  replaceChildren(list, texts.map((text) => h("li", null, h("button", { type: "button", class: "chip", onclick: () => askQuestion(text, options) }, text))));
}

function start() {
  onUnauthorized(requestKey);
  showAccount();
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => showView(tab.dataset.view, { focus: true }));
  }
  window.addEventListener("hashchange", () => showView(window.location.hash.slice(1)));
  $("sign-in-button").addEventListener("click", async () => {
    if (await requestKey("")) afterIdentityChange();
  });
  $("sign-out-button").addEventListener("click", () => {
    auth.clear();
    showAccount();
    afterIdentityChange();
  });
  $("new-conversation").addEventListener("click", () => {
    startNewConversation();
    $("question").focus();
  });
  $("ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const box = $("question");
    const text = box.value;
    if (!text.trim() || state.asking) return;
    box.value = "";
    askQuestion(text);
  });
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey && !event.isComposing) {
      event.preventDefault();
      $("ask-form").requestSubmit();
    }
  });
  $("upload-form").addEventListener("submit", uploadDocument);
  $("metric-search").addEventListener("submit", (event) => event.preventDefault());
  $("metric-query").addEventListener("input", showMetrics);
  $("metric-category").addEventListener("change", showMetrics);
  chips($("starter-chips"), STARTERS);
  chips($("portfolio-questions"), PORTFOLIO_QUESTIONS, { newConversation: true });
  showView(window.location.hash.slice(1) || "chat");
  loadConversations();
}

start();
