/**
 * `/healthz` and `/readyz` for a load balancer (docs/team.md). Both answer without a token and
 * whatever the Host header, since probes come from the balancer's own address, and they reveal
 * nothing but the verdict.
 *
 * - `/healthz`: the process serves HTTP (liveness): always 200 while the listener is open.
 * - `/readyz`: this instance should get new requests: 200 when the store answers a read within
 *   the probe's time; 503 once shutdown began (the balancer stops sending new streams here while
 *   live ones end or are handed over) or when the store does not answer.
 */
import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import type { Store } from "../store/index.ts";

export const HEALTH_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz"]);

/** The longest a readiness probe waits for the store. */
const PROBE_LIMIT_MS = 2_000;

export interface Health {
  /** From now on `/readyz` answers 503 (shutdown began). */
  drain(): void;
  serve(path: string, response: ServerResponse | Http2ServerResponse): void;
}

export function createHealth(store: Store): Health {
  let draining = false;
  const answer = (
    response: ServerResponse | Http2ServerResponse,
    status: number,
    body: Record<string, string>,
  ): void => {
    (response as ServerResponse).writeHead(status, {
      "content-type": "application/json",
      "cache-control": "no-store",
    });
    (response as ServerResponse).end(JSON.stringify(body));
  };
  return {
    drain() {
      draining = true;
    },
    serve(path, response) {
      if (path === "/healthz") {
        answer(response, 200, { status: "ok" });
        return;
      }
      if (draining) {
        answer(response, 503, { status: "draining" });
        return;
      }
      let timer: NodeJS.Timeout | undefined;
      const limit = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), PROBE_LIMIT_MS);
      });
      // One indexed read of a key no client uses: it goes through the store's connection (pool).
      void Promise.race([store.findRequestStream("readyz-probe").then(() => "ok" as const), limit])
        .then(
          (verdict) =>
            verdict === "ok"
              ? answer(response, draining ? 503 : 200, { status: draining ? "draining" : "ready" })
              : answer(response, 503, { status: "store not answering" }),
          () => answer(response, 503, { status: "store failing" }),
        )
        .finally(() => clearTimeout(timer));
    },
  };
}
