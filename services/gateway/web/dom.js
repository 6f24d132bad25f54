// Building the page from data: every piece of text goes in as a text node (textContent),
// never as HTML, so a question, an answer or a file name cannot add elements or run code.

const SVG_NS = "http://www.w3.org/2000/svg";

function setAttributes(el, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") el.setAttribute("class", value);
    else if (name === "text") el.textContent = String(value);
    else if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "href") {
      const url = safeUrl(value);
      if (url) el.setAttribute("href", url);
    } else el.setAttribute(name, value === true ? "" : String(value));
  }
}

function appendAll(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** An HTML element: h("p", {class: "x"}, "text", child, …). Strings become text nodes. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttributes(el, attrs);
  appendAll(el, children);
  return el;
}

/** An SVG element, built the same way. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttributes(el, attrs);
  appendAll(el, children);
  return el;
}

/** Remove an element's children and put `children` in their place. */
export function replaceChildren(el, ...children) {
  el.replaceChildren();
  appendAll(el, children);
}

/** An http(s) URL as an absolute string, or null: no javascript:, data: or other schemes. */
export function safeUrl(value) {
  try {
    const url = new URL(String(value), window.location.href);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}
