// The user's own data in the page: their uploads listed (GET /v1/documents?scope=uploads),
// and a delete button on each upload and each conversation. A deletion is asked about
// first, in the page's own dialog (window.confirm would stop the page and read as the
// browser's, not finq's), then the list is drawn again. Built as text (dom.js).

import { api } from "./api.js";
import { h, replaceChildren } from "./dom.js";

const $ = (id) => document.getElementById(id);

const STATUS_WORDS = { pending: "waiting to be read", parsing: "being read", embedding: "being indexed", ready: "ready", failed: "failed" };

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function formatDay(iso) {
  const when = new Date(iso);
  return Number.isNaN(when.getTime()) ? "" : when.toLocaleDateString(undefined, { dateStyle: "medium" });
}

/** Ask in the page's dialog whether to delete; resolves true when the user confirms. The
 * focus starts on Cancel: Enter alone never deletes. */
export function confirmDeletion(heading, text) {
  const dialog = $("confirm-dialog");
  $("confirm-heading").textContent = heading;
  $("confirm-text").textContent = text;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    const cancel = () => dialog.close("");
    $("confirm-cancel").addEventListener("click", cancel);
    dialog.addEventListener(
      "close",
      () => {
        $("confirm-cancel").removeEventListener("click", cancel);
        resolve(dialog.returnValue === "delete");
      },
      { once: true },
    );
    dialog.showModal();
    $("confirm-cancel").focus();
  });
}

/** DELETE `path`, once confirmed; true when it is gone (a 404: gone already). */
async function deleteConfirmed(path, heading, text, report) {
  if (!(await confirmDeletion(heading, text))) return false;
  try {
    await api(path, { method: "DELETE" });
  } catch (error) {
    if (error.status !== 404) {
      report(`It could not be deleted: ${error.message}`);
      return false;
    }
  }
  return true;
}

function deleteButton(label, onclick) {
  return h("button", { type: "button", class: "delete-button", "aria-label": label, onclick }, "Delete");
}

/** The user's uploads, newest first, each with its delete button, in `list`; `status` says
 * how many (or why they could not be read). */
export async function showDocuments(list, status) {
  status.textContent = "Loading your documents…";
  let page;
  try {
    page = await api("/v1/documents?scope=uploads&limit=100");
  } catch (error) {
    status.textContent = `Your documents could not be loaded: ${error.message}`;
    return;
  }
  const { documents, total } = page;
  const shown = total > documents.length ? ` (the newest ${documents.length} shown)` : "";
  status.textContent = total ? `${plural(total, "document")}${shown}` : "No documents yet: upload one above.";
  const refresh = () => showDocuments(list, status);
  replaceChildren(list, documents.map((doc) => documentItem(doc, refresh, status)));
}

function documentItem(doc, refresh, status) {
  const name = doc.title || doc.source_name || "Untitled document";
  const file = doc.source_name && doc.source_name !== name ? `${doc.source_name} · ` : "";
  const remove = async () => {
    const gone = await deleteConfirmed(
      `/v1/documents/${encodeURIComponent(doc.id)}`,
      "Delete this document?",
      `“${name}” and everything finq read from it will be deleted, and finq will not find it again when it answers. This cannot be undone.`,
      (message) => {
        status.textContent = message;
      },
    );
    if (!gone) return;
    // Its upload card, if this page made one, goes with it.
    for (const card of document.querySelectorAll(".job")) if (card.dataset.documentId === doc.id) card.remove();
    refresh();
  };
  return h(
    "li",
    { class: "document", "data-id": doc.id, "data-status": doc.status },
    h(
      "div",
      { class: "document-text" },
      h("span", { class: "document-title" }, name),
      h("span", { class: "muted small" }, `${file}${STATUS_WORDS[doc.status] || doc.status} · uploaded ${formatDay(doc.created_at)}`),
    ),
    deleteButton(`Delete ${name}`, remove),
  );
}

/** The delete button of a conversation in the list: once confirmed and done, `deleted(id)`
 * redraws what showed it; `report` says why it could not be deleted. */
export function conversationDeleteButton(conversation, deleted, report) {
  const remove = async () => {
    const gone = await deleteConfirmed(
      `/v1/conversations/${encodeURIComponent(conversation.id)}`,
      "Delete this conversation?",
      `“${conversation.title}”, every question and answer in it, will be deleted. This cannot be undone.`,
      report,
    );
    if (gone) deleted(conversation.id);
  };
  return deleteButton(`Delete conversation: ${conversation.title}`, remove);
}
