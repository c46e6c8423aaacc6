/**
 * The dashboard's read-only JSON API (docs/dashboard.md). Paths are relative to `/ui/api`. Each
 * answer is one or two store reads; lists are paged; a bad parameter is a 400 that says which.
 */
import { isStoreError, type Store } from "../../store/index.ts";
import { toShortOperation } from "./operation-result.ts";
import type { ReadModels, ReadPending, ReadSetup, SeenClient } from "./types.ts";

export interface ApiContext {
  readonly store: Store;
  readonly readSetup: ReadSetup | undefined;
  readonly readPending: ReadPending | undefined;
  readonly readModels: ReadModels | undefined;
  readonly tokenRequired: boolean;
  readonly clients: () => readonly SeenClient[];
}

export type ApiAnswer =
  | { readonly type: "json"; readonly status: number; readonly body: unknown }
  | {
      readonly type: "bytes";
      readonly contentType: string;
      readonly body: string;
      /** Set to offer the body as a download. */
      readonly fileName?: string;
    };

const json = (status: number, body: unknown): ApiAnswer => ({ type: "json", status, body });
const error = (status: number, code: string, message: string): ApiAnswer =>
  json(status, { error: { code, message } });

class BadParameter extends Error {}

export async function answerApi(
  path: string,
  query: URLSearchParams,
  context: ApiContext,
): Promise<ApiAnswer> {
  const { store } = context;
  try {
    const [first, id, sub, ...rest] = path.split("/").slice(1).map(decodeURIComponent);
    if (first === "conversations" && id === undefined) {
      const search = query.get("search") ?? undefined;
      const cursor = query.get("cursor") ?? undefined;
      const limit = toInteger(query, "limit");
      return json(
        200,
        await store.listConversations({
          ...(search === undefined ? {} : { search }),
          ...(cursor === undefined ? {} : { cursor }),
          ...(limit === undefined ? {} : { limit }),
        }),
      );
    }
    if (first === "conversations" && id !== undefined && sub === undefined) {
      const detail = await store.readConversationDetail(id);
      return detail === null
        ? error(404, "not_found", "no such conversation")
        : json(200, { ...detail, operations: detail.operations.map((op) => toShortOperation(op)) });
    }
    if (first === "conversations" && id !== undefined && sub === "messages" && rest.length === 0) {
      const from = toInteger(query, "from") ?? 0;
      const messages = await store.listMessages(id, from, toInteger(query, "limit"));
      return json(200, { messages, nextFrom: from + messages.length });
    }
    if (first === "conversations" && id !== undefined && sub === "pending" && rest.length === 0) {
      // What the model is streaming now: never committed, so not in the store (docs/design.md
      // §4.3).
      return json(200, { pending: (await context.readPending?.(id)) ?? null });
    }
    if (first === "calls" && id !== undefined && sub === "request" && rest.length === 0) {
      const call = await store.getLLMCall(id);
      if (call === null) return error(404, "not_found", "no such model call");
      return {
        type: "bytes",
        contentType: "application/json; charset=utf-8",
        body: call.request,
        ...(query.get("download") === "1"
          ? { fileName: `request-${id.replace(/[^A-Za-z0-9._-]/g, "_")}.json` }
          : {}),
      };
    }
    if (first === "operations" && id !== undefined && sub === "result" && rest.length === 0) {
      const operation = await store.getClientOperation(id);
      if (operation === null) return error(404, "not_found", "no such tool operation");
      return json(200, { result: operation.result ?? null });
    }
    if (first === "usage" && id === undefined) {
      const fromDay = query.get("from") ?? undefined;
      const toDay = query.get("to") ?? undefined;
      const rows = await store.listUsage({
        ...(fromDay === undefined ? {} : { fromDay }),
        ...(toDay === undefined ? {} : { toDay }),
      });
      return json(200, { rows });
    }
    if (first === "models" && id === undefined) {
      return json(200, { models: context.readModels?.() ?? [] });
    }
    if (first === "setup" && id === undefined) {
      return json(200, {
        tokenRequired: context.tokenRequired,
        clients: context.clients(),
        setup: context.readSetup === undefined ? null : await context.readSetup(),
      });
    }
    return error(404, "not_found", `no API path ${path}`);
  } catch (failure) {
    if (
      failure instanceof BadParameter ||
      failure instanceof URIError ||
      isStoreError(failure, "invalid_argument")
    ) {
      return error(400, "invalid_argument", (failure as Error).message);
    }
    throw failure;
  }
}

function toInteger(query: URLSearchParams, name: string): number | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  if (!/^\d{1,9}$/.test(value)) throw new BadParameter(`${name} must be a non-negative integer`);
  return Number(value);
}
