/**
 * One conversation: its messages as the model saw them, each model call with timing, tokens,
 * cost and its exact request body (view and download), and the client's tool operations. While a
 * turn runs the view polls the API and appends what was committed since.
 */
import { conversationPath, getJSON, getRequestBody } from "./api.js";
import { h, show } from "./dom.js";
import { cachedShare, dollars, duration, percent, size, tokens, when } from "./format.js";

const POLL_MS = 1000;
/** A turn runs in these states; `ready` is between turns (docs/dashboard.md, Live view). */
const RUNNING = new Set(["waiting_llm", "waiting_client"]);

/**
 * @param {{main: HTMLElement, live: () => boolean, fail: (error: unknown) => void}} context
 * @param {string} id
 */
export async function renderConversation(context, id) {
  const header = h("section", { id: "summary" });
  const messages = h("ol", { class: "messages", id: "messages" });
  /** The response being streamed now: not history yet, replaced on every poll. */
  const streaming = h("ol", { class: "messages" });
  const calls = h("section", { id: "calls" });
  const operations = h("section", { id: "operations" });
  const body = h("section", { id: "body", hidden: true });
  let next = 0;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;

  const refresh = async () => {
    const detail = await getJSON(conversationPath(id));
    for (;;) {
      const page = await getJSON(`${conversationPath(id)}/messages`, { from: next, limit: 200 });
      for (const stored of page.messages) messages.appendChild(renderMessage(stored));
      next = page.nextFrom;
      if (page.messages.length < 200) break;
    }
    if (!context.live()) return;
    show(
      header,
      ...renderSummary(detail.summary),
      detail.failure
        ? h(
            "p",
            { class: "error", id: "failure" },
            `The last turn failed (${detail.failure.reason}): ${detail.failure.message}`,
          )
        : null,
    );
    show(calls, h("h2", {}, "Model calls"), renderCalls(detail.calls, body));
    show(operations, h("h2", {}, "Tool operations"), renderOperations(detail.operations));
    const running = RUNNING.has(detail.summary.status);
    header.setAttribute("data-live", running ? "yes" : "no");
    const { pending } = running
      ? await getJSON(`${conversationPath(id)}/pending`)
      : { pending: null };
    if (!context.live()) return;
    streaming.replaceChildren();
    if (pending !== null) streaming.appendChild(renderPending(pending));
    if (running) timer = setTimeout(() => refresh().catch(context.fail), POLL_MS);
  };

  await refresh();
  if (!context.live()) return undefined;
  show(
    context.main,
    h("p", {}, h("a", { href: "#/conversations" }, "← Conversations")),
    header,
    h("section", {}, h("h2", {}, "Messages"), messages, streaming),
    calls,
    body,
    operations,
  );
  return () => clearTimeout(timer);
}

/** @param {any} summary */
function renderSummary(summary) {
  const usage = summary.usage;
  return [
    h("h1", { id: "title" }, summary.title || "(no text)"),
    h(
      "dl",
      { class: "figures" },
      figure("Conversation", summary.conversationID),
      figure("Model", `${summary.model || "—"}${summary.provider ? ` (${summary.provider})` : ""}`),
      figure("Status", summary.status, "status"),
      figure("Turns", summary.turns),
      figure("Model calls", summary.modelCalls),
      figure("Input tokens", tokens(usage.input), "input"),
      figure("Cache read", tokens(usage.cacheRead), "cache-read"),
      figure("Cache write", tokens(usage.cacheWrite)),
      figure("Output tokens", tokens(usage.output), "output"),
      figure("Cached input", percent(cachedShare(usage))),
      figure("Cost", dollars(usage.cost), "cost"),
      figure("Last activity", when(summary.updatedAt)),
    ),
  ];
}

/** @param {string} name @param {string | number} value @param {string} [key] */
function figure(name, value, key) {
  return h("div", key ? { "data-figure": key } : {}, h("dt", {}, name), h("dd", {}, value));
}

/** @param {{seq: number, message: any}} stored */
function renderMessage({ seq, message }) {
  const role = message.role;
  const item = h(
    "li",
    { class: `message role-${role}`, "data-seq": seq },
    h("div", { class: "role" }, `${seq} · ${role}`),
  );
  if (role === "user") {
    const blocks =
      typeof message.content === "string"
        ? [{ type: "text", text: message.content }]
        : message.content;
    const lastText = blocks.map((/** @type {any} */ b) => b.type).lastIndexOf("text");
    blocks.forEach((/** @type {any} */ block, /** @type {number} */ index) => {
      // Context supplements come before the user's own text (docs/architecture.md).
      if (block.type === "text" && index < lastText)
        item.appendChild(
          h("details", { class: "context" }, h("summary", {}, "context"), h("pre", {}, block.text)),
        );
      else item.appendChild(renderBlock(block));
    });
  } else if (role === "assistant") {
    for (const block of message.content) item.appendChild(renderBlock(block));
    if (message.errorMessage) item.appendChild(h("p", { class: "error" }, message.errorMessage));
  } else if (role === "toolResult") {
    item.appendChild(
      h(
        "div",
        { class: message.isError ? "tool error" : "tool" },
        `${message.toolName} → ${message.isError ? "error" : "result"} (${message.toolCallId})`,
      ),
    );
    for (const block of message.content) item.appendChild(renderBlock(block));
  }
  return item;
}

/**
 * The streamed part of the current model call (the runner's pending response): shown below the
 * history, marked as not committed.
 * @param {{callID: string, blocks: any[]}} pending
 */
function renderPending(pending) {
  const item = h(
    "li",
    { class: "message role-assistant pending", id: "pending" },
    h("div", { class: "role" }, `assistant · streaming (${pending.callID}), not committed yet`),
  );
  for (const block of pending.blocks) {
    if (block === null) continue;
    if (block.type === "toolCall") {
      item.appendChild(
        h(
          "div",
          { class: "tool-call" },
          h("div", { class: "tool" }, `${block.name} (${block.id})`),
          h("pre", {}, block.argumentsText),
        ),
      );
    } else {
      item.appendChild(renderBlock(block));
    }
  }
  return item;
}

/** @param {any} block */
function renderBlock(block) {
  switch (block.type) {
    case "text":
      return longText(block.text);
    case "thinking":
      return h(
        "details",
        { class: "thinking" },
        h("summary", {}, "thinking"),
        h("pre", {}, block.thinking),
      );
    case "toolCall":
      return h(
        "div",
        { class: "tool-call" },
        h("div", { class: "tool" }, `${block.name} (${block.id})`),
        h("pre", {}, JSON.stringify(block.arguments, null, 2)),
      );
    case "image":
      return h("p", { class: "muted" }, `[image ${block.mimeType}]`);
    default:
      return h("pre", { class: "muted" }, JSON.stringify(block));
  }
}

/** Text beyond this many characters is shown on request, so a huge tool output stays usable. */
const SHOWN_CHARACTERS = 20_000;

/** @param {string} text */
function longText(text) {
  const pre = h(
    "pre",
    { class: "text" },
    text.length > SHOWN_CHARACTERS ? text.slice(0, SHOWN_CHARACTERS) : text,
  );
  if (text.length <= SHOWN_CHARACTERS) return pre;
  const more = h(
    "button",
    {
      type: "button",
      class: "show-all",
      onclick: () => {
        pre.textContent = text;
        more.remove();
      },
    },
    `Show all ${text.length.toLocaleString("en-US")} characters`,
  );
  return h("div", {}, pre, more);
}

/** @param {any[]} calls @param {HTMLElement} body */
function renderCalls(calls, body) {
  if (calls.length === 0) return h("p", { class: "muted" }, "No model calls yet.");
  const rows = calls.map((call) =>
    h(
      "tr",
      { "data-call": call.callID },
      h("td", {}, call.turnID),
      h("td", {}, h("code", {}, call.callID)),
      h("td", {}, call.model),
      h("td", { class: `status status-${call.status}` }, call.status),
      h(
        "td",
        { class: "num", "data-ttft": "" },
        duration(call.firstEventAt === null ? null : call.firstEventAt - call.createdAt),
      ),
      h(
        "td",
        { class: "num" },
        duration(call.endedAt === null ? null : call.endedAt - call.createdAt),
      ),
      h("td", { class: "num", "data-in": "" }, call.usage ? tokens(call.usage.input) : "—"),
      h("td", { class: "num" }, call.usage ? tokens(call.usage.cacheRead) : "—"),
      h("td", { class: "num" }, call.usage ? tokens(call.usage.cacheWrite) : "—"),
      h("td", { class: "num", "data-out": "" }, call.usage ? tokens(call.usage.output) : "—"),
      h("td", { class: "num" }, call.usage ? percent(cachedShare(call.usage)) : "—"),
      h("td", { class: "num", "data-cost": "" }, call.usage ? dollars(call.usage.cost) : "—"),
      h(
        "td",
        {},
        h(
          "button",
          { type: "button", class: "view-body", onclick: () => showBody(call, body) },
          `Request (${size(call.requestBytes)})`,
        ),
      ),
    ),
  );
  const names = [
    "Turn",
    "Call",
    "Model",
    "Status",
    "First token",
    "Duration",
    "Input",
    "Cache read",
    "Cache write",
    "Output",
    "Cached",
    "Cost",
    "Exact body",
  ];
  return h(
    "table",
    { class: "list" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        names.map((name) => h("th", {}, name)),
      ),
    ),
    h("tbody", {}, rows),
  );
}

/** Shows the exact request body as sent upstream, with a download of the same bytes. */
async function showBody(/** @type {any} */ call, /** @type {HTMLElement} */ body) {
  const text = await getRequestBody(call.callID);
  const blob = new Blob([text], { type: "application/json" });
  const download = h(
    "button",
    {
      type: "button",
      id: "download-body",
      onclick: () => {
        const link = document.createElement("a");
        link.href = URL.createObjectURL(blob);
        link.download = `request-${call.callID}.json`;
        link.click();
        setTimeout(() => URL.revokeObjectURL(link.href), 0);
      },
    },
    "Download",
  );
  body.hidden = false;
  show(
    body,
    h("h2", {}, `Exact request body of ${call.callID}`),
    h(
      "p",
      { class: "muted" },
      `${size(new TextEncoder().encode(text).length)} · sha256 ${call.requestHash} · as sent upstream, byte for byte`,
      " ",
      download,
    ),
    h("pre", { class: "body", id: "request-body" }, text),
  );
  body.scrollIntoView();
}

/**
 * A tool result as the detail sent it: shortened by the server when long (docs/dashboard.md),
 * with a button that loads the full one.
 * @param {any} operation @param {string} output
 */
function renderResult(operation, output) {
  const pre = h("pre", {}, operation.resultShortened ? `${output}…` : output);
  if (!operation.resultShortened) return pre;
  const more = h(
    "button",
    {
      type: "button",
      class: "show-all",
      onclick: async () => {
        const { result } = await getJSON(
          `/operations/${encodeURIComponent(operation.operationID)}/result`,
        );
        pre.textContent = toOutput(result);
        more.remove();
      },
    },
    "Show the full result",
  );
  return h("div", {}, pre, more);
}

/** The text of a tool result, other blocks named. @param {any} result */
function toOutput(result) {
  return (
    result?.content
      ?.map((/** @type {any} */ block) => (block.type === "text" ? block.text : `[${block.type}]`))
      .join("\n") ?? ""
  );
}

/** @param {any[]} operations */
function renderOperations(operations) {
  if (operations.length === 0) return h("p", { class: "muted" }, "No tool operations.");
  const rows = operations.map((operation) => {
    const result = operation.result;
    const output = toOutput(result);
    return h(
      "tr",
      { "data-operation": operation.operationID },
      h("td", {}, operation.request?.name ?? "?"),
      h(
        "td",
        { class: `status status-${operation.status}` },
        operation.status + (result?.isError ? " (error)" : ""),
      ),
      h("td", {}, h("pre", {}, JSON.stringify(operation.request?.arguments ?? {}, null, 1))),
      h("td", {}, renderResult(operation, output)),
      h(
        "td",
        {},
        duration(
          operation.status === "completed" ? operation.updatedAt - operation.createdAt : null,
        ),
      ),
    );
  });
  return h(
    "table",
    { class: "list" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ["Tool", "Status", "Arguments", "Result", "Took"].map((name) => h("th", {}, name)),
      ),
    ),
    h("tbody", {}, rows),
  );
}
