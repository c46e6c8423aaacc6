/** Setup, read-only: the configured models, the doctor's local checks, IDE mode, recent clients. */
import { getJSON } from "./api.js";
import { h, show } from "./dom.js";
import { when } from "./format.js";

/** @param {{main: HTMLElement, live: () => boolean}} context */
export async function renderSetup(context) {
  const info = await getJSON("/setup");
  if (!context.live()) return undefined;
  const setup = info.setup;
  show(
    context.main,
    h("h1", {}, "Setup"),
    setup === null
      ? h("p", { class: "muted" }, "This server was started without set-up information.")
      : [
          h("h2", {}, "Models"),
          h(
            "table",
            { class: "list", id: "models" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                [
                  "Name",
                  "Provider",
                  "API",
                  "Upstream model",
                  "Base URL",
                  "Context",
                  "Max output",
                ].map((n) => h("th", {}, n)),
              ),
            ),
            h(
              "tbody",
              {},
              setup.models.map((/** @type {any} */ m, /** @type {number} */ i) =>
                h(
                  "tr",
                  {},
                  h("td", {}, i === 0 ? `${m.name} (default)` : m.name),
                  h("td", {}, m.provider),
                  h("td", {}, m.api),
                  h("td", {}, m.upstreamId),
                  h("td", {}, m.baseUrl),
                  h("td", { class: "num" }, m.contextWindow),
                  h("td", { class: "num" }, m.maxOutput),
                ),
              ),
            ),
          ),
          setup.models.length === 0
            ? h("p", { class: "muted" }, "No provider configured: the built-in demo model answers.")
            : null,
          h("h2", {}, "Checks"),
          h(
            "ul",
            { class: "checks", id: "checks" },
            setup.checks.map((/** @type {any} */ c) =>
              h(
                "li",
                { class: `check check-${c.status}` },
                h("strong", {}, `${c.status === "fail" ? "FAIL" : c.status} ${c.name}`),
                ` ${c.detail}`,
                c.hint ? h("div", { class: "muted" }, `fix: ${c.hint}`) : null,
              ),
            ),
          ),
          h(
            "p",
            { class: "muted" },
            "The port, live-provider and end-to-end checks run with `cursor-byok doctor`.",
          ),
          h("h2", {}, "IDE and database"),
          h(
            "dl",
            { class: "figures" },
            h("div", {}, h("dt", {}, "IDE mode"), h("dd", {}, setup.ide)),
            h("div", {}, h("dt", {}, "Database"), h("dd", {}, setup.database)),
          ),
        ],
    h("h2", {}, "Clients seen by this process"),
    info.clients.length === 0
      ? h(
          "p",
          { class: "muted", id: "clients" },
          "No Cursor client has connected since the server started.",
        )
      : h(
          "ul",
          { id: "clients" },
          info.clients.map((/** @type {any} */ c) =>
            h("li", {}, `${when(c.at)} · ${c.userAgent} · ${c.path}`),
          ),
        ),
    h(
      "p",
      { class: "muted" },
      info.tokenRequired
        ? "Access: clients and this page need the access token."
        : "Access: loopback only, no token.",
    ),
  );
  return undefined;
}
