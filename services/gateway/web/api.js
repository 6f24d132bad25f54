// The gateway's HTTP API as the page uses it: JSON requests with the API key (kept in this
// tab's sessionStorage, sent as Bearer), a sign-in prompt on a 401 and the request sent
// again, an upload with its progress, and the answer's stages streamed when the gateway
// offers POST /v1/ask/stream.

const KEY_ITEM = "finq.apiKey";

export const auth = {
  get key() {
    return sessionStorage.getItem(KEY_ITEM);
  },
  set(key) {
    sessionStorage.setItem(KEY_ITEM, key);
  },
  clear() {
    sessionStorage.removeItem(KEY_ITEM);
  },
};

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || `the request failed (${status})`);
    this.status = status;
    this.code = code || "http_error";
  }
}

// Called with the server's message on a 401; resolves true once a key is entered (the
// request is then sent again with it), false if the user declines.
let askForKey = async () => false;

export function onUnauthorized(handler) {
  askForKey = handler;
}

function headers(extra) {
  const all = { Accept: "application/json", ...(extra || {}) };
  if (auth.key) all.Authorization = `Bearer ${auth.key}`;
  return all;
}

async function errorOf(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: a proxy's page, a dropped connection
  }
  const code = body && typeof body.code === "string" ? body.code : "http_error";
  const message =
    body && typeof body.message === "string"
      ? body.message
      : `${response.status} ${response.statusText || "error"}`;
  return new ApiError(response.status, code, message);
}

async function send(path, init) {
  for (;;) {
    let response;
    try {
      response = await fetch(path, { ...init, headers: headers(init.headers) });
    } catch {
      throw new ApiError(0, "network", "finq could not be reached; check the connection");
    }
    if (response.status === 401) {
      const error = await errorOf(response);
      auth.clear(); // a key refused is forgotten
      if (await askForKey(error.message)) continue;
      throw error;
    }
    return response;
  }
}

/** GET or POST JSON; resolves to the parsed body, rejects with an ApiError. */
export async function api(path, { method = "GET", json, signal } = {}) {
  const init = { method, signal };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers = { "Content-Type": "application/json" };
  }
  const response = await send(path, init);
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return null; // a deletion answers with no body
  return response.json();
}

// Whether the gateway has POST /v1/ask/stream; null until the first question finds out.
let streaming = null;

function isMissingRoute(error) {
  return (
    error.status === 405 ||
    (error.status === 404 && (error.code === "not_found" || error.code === "http_error"))
  );
}

/** Ask a question. `onStage(name, data)` hears each stage as it passes when the gateway
 * streams (and `draft_text`, a model's answer as it writes it); the promise resolves to the
 * answer object either way. */
export async function ask(question, conversationId, onStage) {
  const json = { question };
  if (conversationId) json.conversation_id = conversationId;
  if (streaming !== false) {
    const response = await send("/v1/ask/stream", {
      method: "POST",
      body: JSON.stringify(json),
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    });
    if (response.ok && (response.headers.get("content-type") || "").includes("event-stream")) {
      streaming = true;
      return readStream(response, onStage);
    }
    const error = response.ok
      ? new ApiError(response.status, "not_a_stream", "not an event stream")
      : await errorOf(response);
    if (!isMissingRoute(error) && error.code !== "not_a_stream") throw error;
    streaming = false;
  }
  return api("/v1/ask", { method: "POST", json });
}

/** Server-Sent Events: `event:` and `data:` lines, an empty line ending each event. */
async function readStream(response, onStage) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") name = text;
        else if (field === "data") data.push(text);
      }
      let payload = data.join("\n");
      try {
        payload = payload ? JSON.parse(payload) : null;
      } catch {
        // plain text data stays text
      }
      if (name === "answer") {
        reader.cancel().catch(() => {});
        return payload;
      }
      if (name === "error") {
        const body = payload && typeof payload === "object" ? payload : {};
        throw new ApiError(body.status || 502, body.code || "stream_error", body.message);
      }
      if (onStage) onStage(name, payload);
    }
    if (done) throw new ApiError(502, "stream_ended", "the answer stream ended without an answer");
  }
}

/** Upload a file (multipart) with its progress: `onProgress(fraction)` as bytes go out.
 * Resolves to the document job; a 401 prompts for a key and sends it again. */
export function upload(form, onProgress) {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", "/v1/documents");
    request.setRequestHeader("Accept", "application/json");
    if (auth.key) request.setRequestHeader("Authorization", `Bearer ${auth.key}`);
    request.responseType = "json";
    request.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable && onProgress) onProgress(event.loaded / event.total);
    });
    request.addEventListener("error", () =>
      reject(new ApiError(0, "network", "the upload could not reach finq")),
    );
    request.addEventListener("load", async () => {
      const body = request.response;
      if (request.status >= 200 && request.status < 300) {
        resolve(body);
        return;
      }
      const error = new ApiError(
        request.status,
        body && body.code,
        body && typeof body.message === "string" ? body.message : `${request.status} error`,
      );
      if (request.status === 401) auth.clear();
      if (request.status === 401 && (await askForKey(error.message))) {
        upload(form, onProgress).then(resolve, reject);
        return;
      }
      reject(error);
    });
    request.send(form);
  });
}
