/**
 * The dashboard page: a hash router over four views. Every view is a function that renders into
 * `main` and may return a `stop` function (live views poll the API until they are left).
 */
import { forgetToken, hasToken, saveToken, Unauthorized } from "./api.js";
import { renderConversation } from "./conversation.js";
import { renderConversations } from "./conversations.js";
import { h, show } from "./dom.js";
import { parseRoute } from "./route.js";
import { renderSetup } from "./setup.js";
import { renderUsage } from "./usage.js";

const main = /** @type {HTMLElement} */ (document.getElementById("main"));
const forget = /** @type {HTMLButtonElement} */ (document.getElementById("forget-token"));
/** @type {(() => void) | undefined} */
let stopView;
let generation = 0;

function route() {
  stopView?.();
  stopView = undefined;
  const current = ++generation;
  const route = parseRoute(location.hash);
  const nav = route.page === "conversation" ? "conversations" : route.page;
  for (const link of document.querySelectorAll("[data-nav]")) {
    link.classList.toggle("active", link.getAttribute("data-nav") === nav);
  }
  forget.hidden = !hasToken();
  const context = {
    main,
    /** Whether this view is still the one shown. */
    live: () => current === generation,
    fail: (/** @type {unknown} */ error) => fail(error, current),
  };
  let view;
  if (route.page === "conversation") view = renderConversation(context, route.id);
  else if (route.page === "usage") view = renderUsage(context);
  else if (route.page === "setup") view = renderSetup(context);
  else if (route.page === "invalid") view = Promise.reject(new Error("this address is not valid"));
  else view = renderConversations(context, route.params);
  view.then(
    (stop) => {
      if (current === generation) stopView = stop;
      else stop?.();
    },
    (error) => fail(error, current),
  );
}

/** @param {unknown} error @param {number} current */
function fail(error, current) {
  if (current !== generation) return;
  if (error instanceof Unauthorized) {
    // A kept token that the server refuses (it changed, or was mistyped) is dropped.
    const refused = hasToken();
    forgetToken();
    forget.hidden = true;
    askToken(refused);
    return;
  }
  show(
    main,
    h(
      "p",
      { class: "error" },
      `Could not load this page: ${error instanceof Error ? error.message : String(error)}`,
    ),
  );
}

/** @param {boolean} refused whether the token tried last was not accepted */
function askToken(refused) {
  const input = h("input", { type: "password", id: "token", autocomplete: "off", required: true });
  const form = h(
    "form",
    {
      class: "token",
      onsubmit: (/** @type {Event} */ event) => {
        event.preventDefault();
        saveToken(/** @type {HTMLInputElement} */ (input).value);
        route();
      },
    },
    h("h1", {}, "Access token"),
    h(
      "p",
      {},
      "This server is protected by an access token. It is kept in this tab's session only.",
    ),
    refused
      ? h("p", { class: "error", id: "token-refused" }, "The server did not accept that token.")
      : null,
    h("label", { for: "token" }, "Token "),
    input,
    h("button", { type: "submit" }, "Open the dashboard"),
  );
  show(main, form);
  input.focus();
}

forget.addEventListener("click", () => {
  forgetToken();
  route();
});
window.addEventListener("hashchange", route);
route();
