// An answer's table (several years or figures beneath its short lead) and how each computed
// figure in it was reached, behind a "How it was computed" disclosure. Every cell and
// working goes in as text (dom.js), never as HTML.

import { h } from "./dom.js";

/** The answer's table, or null when it has none. A cell holding no figure reads "—". */
export function answerTableView(table) {
  if (!table || !Array.isArray(table.columns) || !Array.isArray(table.rows) || !table.rows.length) return null;
  const [first, ...rest] = table.columns;
  return h(
    "div",
    { class: "answer-table-wrap" },
    h(
      "table",
      { class: "answer-table" },
      table.caption ? h("caption", null, table.caption) : null,
      h("thead", null, h("tr", null, h("th", { scope: "col" }, first), rest.map((column) => h("th", { scope: "col" }, column)))),
      h(
        "tbody",
        null,
        table.rows.map((row) =>
          h(
            "tr",
            null,
            h("th", { scope: "row" }, row.label),
            (row.cells || []).map((cell) => (cell === null || cell === undefined ? h("td", { class: "empty", title: "No figure held" }, "—") : h("td", null, cell))),
          ),
        ),
      ),
    ),
  );
}

/** Each computed figure's working (formula with its inputs and result), or null. */
export function workingsView(workings) {
  if (!Array.isArray(workings) || !workings.length) return null;
  return h(
    "details",
    { class: "workings" },
    h("summary", null, "How it was computed"),
    h(
      "ul",
      null,
      workings.map((working) => h("li", { class: "working" }, h("span", { class: "working-figure" }, working.figure), h("span", { class: "working-text" }, working.text))),
    ),
  );
}
