/** The conversation list: title, model, turns, activity, tokens, cached share, cost; search and pages. */
import { getJSON } from "./api.js";
import { h, show } from "./dom.js";
import { cachedShare, dollars, percent, tokens, when } from "./format.js";

const PAGE = 50;

/**
 * @param {{main: HTMLElement, live: () => boolean}} context
 * @param {URLSearchParams} params `search` and `cursor` of the page shown
 */
export async function renderConversations(context, params) {
  const search = params.get("search") ?? "";
  const cursor = params.get("cursor") ?? undefined;
  const page = await getJSON("/conversations", { search, cursor, limit: PAGE });
  if (!context.live()) return undefined;
  const box = h("input", {
    type: "search",
    name: "search",
    placeholder: "Search titles and ids",
    value: search,
  });
  const form = h(
    "form",
    {
      class: "search",
      onsubmit: (/** @type {Event} */ event) => {
        event.preventDefault();
        const value = /** @type {HTMLInputElement} */ (box).value;
        location.hash = `#/conversations?${new URLSearchParams(value ? { search: value } : {})}`;
      },
    },
    box,
    h("button", { type: "submit" }, "Search"),
  );
  const rows = page.items.map((/** @type {any} */ item) =>
    h(
      "tr",
      { "data-conversation": item.conversationID },
      h(
        "td",
        {},
        h(
          "a",
          { href: `#/c/${encodeURIComponent(item.conversationID)}` },
          item.title || "(no text)",
        ),
      ),
      h("td", {}, item.model || "—"),
      h("td", { class: `status status-${item.status}` }, item.status),
      h("td", { class: "num" }, item.turns),
      h("td", {}, when(item.updatedAt)),
      h(
        "td",
        { class: "num" },
        tokens(item.usage.input + item.usage.cacheRead + item.usage.cacheWrite),
      ),
      h("td", { class: "num" }, tokens(item.usage.output)),
      h("td", { class: "num" }, percent(cachedShare(item.usage))),
      h("td", { class: "num" }, dollars(item.usage.cost)),
    ),
  );
  const next =
    page.nextCursor === null
      ? null
      : h(
          "a",
          {
            class: "button",
            href: `#/conversations?${new URLSearchParams({ ...(search ? { search } : {}), cursor: page.nextCursor })}`,
          },
          "Older →",
        );
  show(
    context.main,
    h("h1", {}, "Conversations"),
    form,
    h(
      "p",
      { class: "muted", id: "total" },
      // The API counts on the first page only (docs/dashboard.md).
      page.total === null
        ? `Older conversations${search ? ` matching “${search}”` : ""}`
        : `${page.total} conversation${page.total === 1 ? "" : "s"}${search ? ` matching “${search}”` : ""}`,
    ),
    h(
      "table",
      { class: "list", id: "conversations" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...[
            "Title",
            "Model",
            "Status",
            "Turns",
            "Last activity",
            "Tokens in",
            "Tokens out",
            "Cached input",
            "Cost",
          ].map((name) => h("th", {}, name)),
        ),
      ),
      h("tbody", {}, rows),
    ),
    h(
      "nav",
      { class: "pages" },
      cursor ? h("a", { class: "button", href: "#/conversations" }, "← Newest") : null,
      next,
    ),
  );
  return undefined;
}
