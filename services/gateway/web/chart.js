// An answer's chart, drawn as inline SVG from its Vega-Lite spec. finq emits two shapes
// (services/answerer/extras.py chart_spec): a line over periods (x temporal `period_end`,
// y `value`, color by company or metric, points on) and bars per company (x nominal, y
// `value`, color by metric, sometimes xOffset by metric). Those, and specs of the same
// form with other fields, are drawn here; anything else returns null. Figures of
// different units (revenue in USD beside growth in %) get a panel each, so one scale
// never flattens the other.

import { h, s } from "./dom.js";

const WIDTH = 600;
const HEIGHT = 240;
const MARGIN = { top: 12, right: 16, bottom: 40, left: 72 };
const SERIES_CLASSES = 8;

const compact = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });
const plain = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

/** A figure in its unit: $383.3B, 44.1%, 1.52×, 6.13 $/share. */
export function formatValue(value, unit) {
  if (typeof value !== "number" || !Number.isFinite(value)) return String(value);
  const sign = value < 0 ? "-" : "";
  const magnitude = Math.abs(value);
  switch (unit) {
    case "USD":
      return `${sign}$${compact.format(magnitude)}`;
    case "USD/share":
      return `${sign}$${plain.format(magnitude)}`;
    case "%":
      return `${plain.format(value)}%`;
    case "x":
      return `${plain.format(value)}×`;
    case "days":
      return `${plain.format(value)} days`;
    default:
      return Math.abs(value) >= 10000 ? compact.format(value) : plain.format(value);
  }
}

function niceTicks(low, high, count = 5) {
  if (low === high) {
    const pad = Math.abs(low) || 1;
    low -= pad;
    high += pad;
  }
  const raw = (high - low) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const normal = raw / magnitude;
  const step = (normal < 1.5 ? 1 : normal < 3 ? 2 : normal < 7 ? 5 : 10) * magnitude;
  const start = Math.floor(low / step) * step;
  const end = Math.ceil(high / step) * step;
  const ticks = [];
  for (let tick = start; tick <= end + step / 2; tick += step) ticks.push(Number(tick.toPrecision(12)));
  return ticks;
}

function titleText(title) {
  if (typeof title === "string") return title;
  if (title && typeof title.text === "string") return title.text;
  return "";
}

function markType(mark) {
  return typeof mark === "string" ? mark : mark && mark.type;
}

function distinct(items) {
  return [...new Set(items)];
}

function yScale(values) {
  const ticks = niceTicks(Math.min(0, ...values), Math.max(0, ...values));
  const low = ticks[0];
  const high = ticks[ticks.length - 1];
  const inner = HEIGHT - MARGIN.top - MARGIN.bottom;
  return { ticks, y: (v) => MARGIN.top + inner - ((v - low) / (high - low)) * inner };
}

function axes(svg, scale, unit, yTitle) {
  for (const tick of scale.ticks) {
    const y = scale.y(tick);
    svg.append(
      s("line", { class: tick === 0 ? "axis" : "grid", x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y, y2: y }),
      s("text", { class: "tick", x: MARGIN.left - 6, y: y + 4, "text-anchor": "end" }, formatValue(tick, unit)),
    );
  }
  if (yTitle) {
    svg.append(s("text", { class: "axis-title", x: 12, y: MARGIN.top + 4, "text-anchor": "start" }, yTitle));
  }
}

function seriesClass(index) {
  return `series-${index % SERIES_CLASSES}`;
}

function describe(datum, fields) {
  return fields
    .map((field) => datum[field])
    .filter((part) => part !== undefined && part !== null && part !== "")
    .join(" · ");
}

// The x axis's labels: each point's period name ("FY2023") when every position has one
// name and no name two positions (one company, or companies whose years end on the same
// day); else calendar years, as companies whose fiscal years end in different months share
// no period dates. At most eight labels.
function xTicks(points, position, xField, temporal, low, high) {
  const names = new Map();
  const positions = new Map();
  for (const d of points) {
    const at = position(d);
    const name = d.period || String(d[xField]).slice(0, 10);
    names.set(at, (names.get(at) || new Set()).add(name));
    positions.set(name, (positions.get(name) || new Set()).add(at));
  }
  const oneToOne = [...names.values()].every((set) => set.size === 1) && [...positions.values()].every((set) => set.size === 1);
  let ticks = [];
  if (temporal && !oneToOne) {
    const first = new Date(low).getUTCFullYear() + 1;
    const last = new Date(high).getUTCFullYear();
    for (let year = first; year <= last; year += 1) ticks.push([Date.UTC(year, 0, 1), String(year)]);
  }
  if (ticks.length < 2) {
    ticks = [...names.entries()].sort((a, b) => a[0] - b[0]).map(([at, set]) => [at, [...set].join(" / ")]);
  }
  const every = Math.ceil(ticks.length / 8);
  return ticks.filter((_, i) => i % every === 0);
}

function linePanel(data, enc, unit, colorOf) {
  const xField = enc.x.field;
  const yField = enc.y.field;
  const colorField = enc.color && enc.color.field;
  const temporal = enc.x.type === "temporal";
  const quantitative = enc.x.type === "quantitative";
  const order = distinct(data.map((d) => String(d[xField])));
  const position = (d) =>
    temporal ? Date.parse(d[xField]) : quantitative ? Number(d[xField]) : order.indexOf(String(d[xField]));
  const points = data.filter((d) => Number.isFinite(position(d)) && Number.isFinite(Number(d[yField])));
  if (!points.length) return null;
  const xs = points.map(position);
  let [low, high] = [Math.min(...xs), Math.max(...xs)];
  if (low === high) [low, high] = [low - 1, high + 1];
  const x = (v) => MARGIN.left + 12 + ((v - low) / (high - low)) * (WIDTH - MARGIN.left - MARGIN.right - 24);
  const scale = yScale(points.map((d) => Number(d[yField])));
  const svg = s("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "chart-svg", role: "img" });
  axes(svg, scale, unit);
  for (const [at, label] of xTicks(points, position, xField, temporal, low, high)) {
    svg.append(s("text", { class: "tick", x: x(at).toFixed(1), y: HEIGHT - MARGIN.bottom + 18, "text-anchor": "middle" }, label));
  }
  const groups = new Map();
  for (const d of points) {
    const key = colorField ? String(d[colorField]) : "";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(d);
  }
  for (const [key, group] of groups) {
    group.sort((a, b) => position(a) - position(b));
    const css = seriesClass(colorOf(key));
    const path = group.map((d, i) => `${i ? "L" : "M"}${x(position(d)).toFixed(1)},${scale.y(Number(d[yField])).toFixed(1)}`);
    svg.append(s("path", { class: `line ${css}`, d: path.join(" ") }));
    for (const d of group) {
      svg.append(
        s(
          "circle",
          { class: `point ${css}`, cx: x(position(d)).toFixed(1), cy: scale.y(Number(d[yField])).toFixed(1), r: 4 },
          s("title", null, `${describe(d, [colorField, "period"])}: ${formatValue(Number(d[yField]), unit)}`),
        ),
      );
    }
  }
  return svg;
}

function barPanel(data, enc, unit, colorOf) {
  const xField = enc.x.field;
  const yField = enc.y.field;
  const colorField = enc.color && enc.color.field;
  const offsetField = (enc.xOffset && enc.xOffset.field) || (colorField !== xField ? colorField : null);
  const bars = data.filter((d) => Number.isFinite(Number(d[yField])));
  if (!bars.length) return null;
  const categories = distinct(bars.map((d) => String(d[xField])));
  const offsets = offsetField ? distinct(bars.map((d) => String(d[offsetField]))) : [""];
  const band = (WIDTH - MARGIN.left - MARGIN.right) / categories.length;
  const inner = band * 0.8;
  const slot = inner / offsets.length;
  const scale = yScale(bars.map((d) => Number(d[yField])));
  const svg = s("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "chart-svg", role: "img" });
  axes(svg, scale, unit);
  categories.forEach((category, i) => {
    svg.append(
      s("text", { class: "tick", x: MARGIN.left + band * (i + 0.5), y: HEIGHT - MARGIN.bottom + 18, "text-anchor": "middle" }, category),
    );
  });
  const zero = scale.y(0);
  for (const d of bars) {
    const i = categories.indexOf(String(d[xField]));
    const j = offsetField ? offsets.indexOf(String(d[offsetField])) : 0;
    const top = scale.y(Number(d[yField]));
    const key = colorField ? String(d[colorField]) : "";
    svg.append(
      s(
        "rect",
        {
          class: `bar ${seriesClass(colorOf(key))}`,
          x: (MARGIN.left + band * i + (band - inner) / 2 + slot * j + 1).toFixed(1),
          y: Math.min(top, zero).toFixed(1),
          width: Math.max(slot - 2, 1).toFixed(1),
          height: Math.max(Math.abs(zero - top), 1).toFixed(1),
        },
        s("title", null, `${describe(d, [xField, offsetField, "period"])}: ${formatValue(Number(d[yField]), unit)}`),
      ),
    );
  }
  return svg;
}

function dataTable(values, enc) {
  const fields = distinct(
    [enc.color && enc.color.field, enc.x.field === "period_end" ? "period" : enc.x.field, enc.y.field].filter(Boolean),
  );
  return h(
    "details",
    { class: "chart-data" },
    h("summary", null, "Chart data"),
    h(
      "table",
      null,
      h("thead", null, h("tr", null, fields.map((f) => h("th", { scope: "col" }, f)))),
      h(
        "tbody",
        null,
        values.map((d) =>
          h(
            "tr",
            null,
            fields.map((f) => h("td", null, f === enc.y.field ? formatValue(Number(d[f]), d.unit) : String(d[f] ?? ""))),
          ),
        ),
      ),
    ),
  );
}

/** A <figure> drawing `spec`, or null when the spec is not a shape drawn here. */
export function renderChart(spec) {
  if (!spec || typeof spec !== "object") return null;
  const values = spec.data && Array.isArray(spec.data.values) ? spec.data.values.filter((d) => d && typeof d === "object") : [];
  const enc = spec.encoding || {};
  const type = markType(spec.mark);
  if (!values.length || !enc.x || !enc.y || !enc.x.field || !enc.y.field) return null;
  if (type !== "line" && type !== "bar") return null;
  const colorField = enc.color && enc.color.field;
  const keys = colorField ? distinct(values.map((d) => String(d[colorField]))) : [""];
  const colorOf = (key) => Math.max(keys.indexOf(key), 0);
  const units = distinct(values.map((d) => d.unit ?? ""));
  const title = titleText(spec.title);
  const panels = [];
  for (const unit of units) {
    const subset = values.filter((d) => (d.unit ?? "") === unit);
    const svg = type === "line" ? linePanel(subset, enc, unit, colorOf) : barPanel(subset, enc, unit, colorOf);
    if (!svg) continue;
    const names = colorField ? distinct(subset.map((d) => String(d[colorField]))) : [];
    const label = units.length > 1 ? `${names.join(", ")} (${unit || "value"})` : title || "Chart";
    svg.setAttribute("aria-label", label);
    if (units.length > 1) panels.push(h("p", { class: "panel-title" }, label));
    panels.push(svg);
  }
  if (!panels.length) return null;
  const legend =
    colorField && keys.length > 1
      ? h(
          "ul",
          { class: "legend" },
          keys.map((key) => h("li", null, h("span", { class: `swatch ${seriesClass(colorOf(key))}`, "aria-hidden": "true" }), key)),
        )
      : null;
  return h("figure", { class: "chart" }, title ? h("figcaption", null, title) : null, legend, panels, dataTable(values, enc));
}
