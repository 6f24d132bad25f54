// The companies view: every company finq can answer for (GET /v1/companies), what it holds
// of each, and questions it can answer about each, asked with one click. Built as text
// (dom.js), like the rest of the page.

import { api } from "./api.js";
import { h, replaceChildren } from "./dom.js";

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

// "Apple's", "Meta Platforms'": how a question names what belongs to the company.
function possessive(name) {
  return /s$/i.test(name) ? `${name}'` : `${name}'s`;
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** Questions finq can answer from what it holds of `company`: a figure of its last whole
 * fiscal year, a five-year trend when there are years to compare, its last close. */
export function suggestedQuestions(company) {
  const who = company.display_name || company.name;
  const questions = [];
  const years = (company.figures && company.figures.annual_fiscal_years) || [];
  if (years.length) questions.push(`What was ${possessive(who)} revenue in fiscal ${years[years.length - 1]}?`);
  if (years.length > 1) questions.push(`How did ${possessive(who)} net income change over the last five years?`);
  if (company.prices) questions.push(`What did ${who} close at on ${company.prices.last_day}?`);
  return questions;
}

function yearEnd(end) {
  return end ? `${MONTHS[end.month - 1]} ${end.day}` : null;
}

function figuresHeld(figures) {
  if (!figures) return "none";
  const span = figures.first_fiscal_year === figures.last_fiscal_year ? `FY${figures.first_fiscal_year}` : `FY${figures.first_fiscal_year}–FY${figures.last_fiscal_year}`;
  return `${span} (${plural(figures.fiscal_years.length, "fiscal year")}, ${figures.values.toLocaleString()} figures)`;
}

function companyView(company, ask) {
  const facts = [
    ["Tickers", company.tickers.join(", ")],
    ["CIK", company.cik],
    ["Fiscal year ends", yearEnd(company.fiscal_year_end)],
    ["Figures", figuresHeld(company.figures)],
    ["Prices", company.prices ? `${company.prices.first_day} to ${company.prices.last_day}` : "none"],
    ["Documents", `${plural(company.documents.filings, "filing")} · ${plural(company.documents.uploads, "upload")} of yours`],
  ].filter(([, value]) => value !== null && value !== undefined);
  const questions = suggestedQuestions(company);
  const headingId = `company-${company.symbol.replace(/[^A-Za-z0-9]/g, "-")}`;
  return h(
    "li",
    { class: "company", "data-symbol": company.symbol },
    h("h3", { class: "company-name", id: headingId }, company.display_name || company.name, " ", h("span", { class: "muted small" }, company.name)),
    h("dl", { class: "facts-list company-facts" }, facts.map(([term, value]) => [h("dt", null, term), h("dd", null, String(value))])),
    questions.length
      ? h(
          "ul",
          { class: "chips company-questions", "aria-labelledby": headingId },
          questions.map((text) => h("li", null, h("button", { type: "button", class: "chip", onclick: () => ask(text) }, text))),
        )
      : null,
  );
}

/** Fill `list` with the companies, saying in `status` how many (or why none); a chip asks
 * its question with `ask(text)`. Read again each time: the uploads counted are the
 * signed-in user's. */
export async function showCompanies(list, status, ask) {
  status.textContent = "Loading the companies…";
  let companies;
  try {
    ({ companies } = await api("/v1/companies"));
  } catch (error) {
    status.textContent = `The companies could not be loaded: ${error.message}`;
    return;
  }
  status.textContent = companies.length ? `${companies.length} ${companies.length === 1 ? "company" : "companies"} finq can answer for` : "No companies are held yet: `finq ingest default` loads the bundled ones.";
  replaceChildren(list, companies.map((company) => companyView(company, ask)));
}
