/**
 * The dashboard (docs/dashboard.md), served by the server itself under `/ui`:
 *
 * - `/ui/` and its static files (the page, its modules, its style, uPlot from node_modules) are
 *   served to anyone who may reach the server: they hold no data. The page asks for the access
 *   token, keeps it in `sessionStorage` and sends it as a bearer token; never in a URL.
 * - `/ui/api/…` is a read-only JSON API, guarded by the same access token as every route.
 * - Every response carries a strict Content-Security-Policy (no inline script or style, nothing
 *   from elsewhere), `nosniff`, no referrer and no framing.
 * - Without an access token, requests whose `Host` is not a loopback name (or the configured
 *   host) are refused, so a page of another site cannot read the API through a DNS name rebound
 *   to this server. With a token that page could not read it anyway.
 */

import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { errorMessage } from "../../errors/error-message.ts";
import type { Store } from "../../store/index.ts";
import { createHostCheck } from "../http/host-check.ts";
import { answerApi } from "./api.ts";
import { findStaticFile, readStaticFile } from "./static-files.ts";
import type { ReadModels, ReadPending, ReadSetup, SeenClient } from "./types.ts";

export type DashboardRequest = IncomingMessage | Http2ServerRequest;
/** What the dashboard uses of an HTTP/1.1 or HTTP/2 response: headers once, then a body. */
export interface DashboardResponse {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: string | Buffer): unknown;
}

export const DASHBOARD_PREFIX = "/ui";

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-resource-policy": "same-origin",
};

export interface DashboardOptions {
  readonly store: Store;
  /** Whether a request carries the access token (always true without one). */
  readonly authorize: (request: DashboardRequest) => boolean;
  /** Whether the server has an access token (the page then asks for it). */
  readonly tokenRequired: boolean;
  /** Host names, besides loopback ones, the server answers to (e.g. its configured host). */
  readonly hosts: readonly string[];
  readonly readSetup?: ReadSetup;
  readonly readPending?: ReadPending;
  readonly readModels?: ReadModels;
  readonly now: () => number;
}

export interface Dashboard {
  handles(path: string): boolean;
  serve(request: DashboardRequest, response: DashboardResponse): void;
  /** Notes a request of an agent client (for the set-up page's connection state). */
  noteClient(request: DashboardRequest): void;
}

const MAX_SEEN_CLIENTS = 8;

export function createDashboard(options: DashboardOptions): Dashboard {
  const seen = new Map<string, SeenClient>();
  const isOwnHost = createHostCheck(options.hosts);

  const send = (
    response: DashboardResponse,
    status: number,
    headers: Record<string, string>,
    body: string | Buffer,
  ): void => {
    response.writeHead(status, { ...SECURITY_HEADERS, ...headers });
    response.end(body);
  };
  const sendJSON = (response: DashboardResponse, status: number, value: unknown): void =>
    send(
      response,
      status,
      { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
      JSON.stringify(value),
    );
  const refuse = (response: DashboardResponse, status: number, code: string, message: string) =>
    sendJSON(response, status, { error: { code, message } });

  return {
    handles,

    noteClient(request) {
      const userAgent = String(request.headers["user-agent"] ?? "unknown").slice(0, 120);
      seen.delete(userAgent);
      seen.set(userAgent, { userAgent, path: pathOf(request), at: options.now() });
      if (seen.size > MAX_SEEN_CLIENTS) seen.delete(seen.keys().next().value as string);
    },

    serve(request, response) {
      request.resume();
      const url = new URL(request.url ?? "/", "http://dashboard.invalid");
      const path = url.pathname;
      if (!options.tokenRequired && !isOwnHost(request.headers)) {
        refuse(response, 421, "wrong_host", "this server does not answer to that host name");
        return;
      }
      if (request.method !== "GET" && request.method !== "HEAD") {
        refuse(response, 405, "read_only", "the dashboard is read-only: only GET is answered");
        return;
      }
      if (!handles(path)) {
        // `..` segments took the path out of the dashboard: nothing here answers it.
        refuse(response, 404, "not_found", "no such dashboard page or file");
        return;
      }
      if (path === DASHBOARD_PREFIX) {
        send(response, 308, { location: `${DASHBOARD_PREFIX}/` }, "");
        return;
      }
      if (path.startsWith(`${DASHBOARD_PREFIX}/api/`)) {
        if (!options.authorize(request)) {
          refuse(response, 401, "unauthenticated", "a valid access token is required");
          return;
        }
        const context = {
          store: options.store,
          readSetup: options.readSetup,
          readPending: options.readPending,
          readModels: options.readModels,
          tokenRequired: options.tokenRequired,
          clients: () => [...seen.values()].reverse(),
        };
        answerApi(path.slice(`${DASHBOARD_PREFIX}/api`.length), url.searchParams, context).then(
          (answer) => {
            if (answer.type === "json") sendJSON(response, answer.status, answer.body);
            else
              send(
                response,
                200,
                {
                  "content-type": answer.contentType,
                  "cache-control": "no-store",
                  ...(answer.fileName === undefined
                    ? {}
                    : { "content-disposition": `attachment; filename="${answer.fileName}"` }),
                },
                answer.body,
              );
          },
          (error: unknown) =>
            refuse(
              response,
              500,
              "internal",
              `the dashboard could not read the store: ${errorMessage(error)}`,
            ),
        );
        return;
      }
      const file = findStaticFile(path.slice(DASHBOARD_PREFIX.length));
      if (file === null) {
        refuse(response, 404, "not_found", "no such dashboard page or file");
        return;
      }
      readStaticFile(file).then(
        (body) =>
          send(
            response,
            200,
            { "content-type": file.contentType, "cache-control": "no-cache" },
            body,
          ),
        () => refuse(response, 500, "internal", "a dashboard file could not be read"),
      );
    },
  };
}

function handles(path: string): boolean {
  return path === DASHBOARD_PREFIX || path.startsWith(`${DASHBOARD_PREFIX}/`);
}

function pathOf(request: DashboardRequest): string {
  const url = request.url ?? "/";
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}

/** The host name the client addressed, lower-cased, without the port. */
