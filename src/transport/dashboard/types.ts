/**
 * What the dashboard (docs/dashboard.md) needs from the process that serves it, beyond the store:
 * the set-up it shows read-only, and the response a model is streaming now. Nothing here holds a
 * secret.
 */
import type { ModelHealthInfo } from "../../llm/index.ts";
import type { PendingResponse } from "../../loop/index.ts";

/** The response of a conversation's current model call while it streams (memory only). */
export type ReadPending = (conversationID: string) => Promise<PendingResponse | null>;

/**
 * The configured models with their fallbacks and their health in this process now
 * (llm/model-health.ts): what `cursor-byok models` shows of a running server.
 */
export type ReadModels = () => readonly ModelStatus[];

export interface ModelStatus {
  readonly name: string;
  readonly fallbacks: readonly string[];
  readonly maxConcurrent: number | null;
  readonly health: ModelHealthInfo | null;
}

/** One configured model, without its key or headers. */
export interface SetupModel {
  readonly name: string;
  readonly provider: string;
  readonly api: string;
  readonly upstreamId: string;
  readonly baseUrl: string;
  readonly contextWindow: number;
  readonly maxOutput: number;
}

/** A doctor check, as `cursor-byok doctor` prints it. */
export interface SetupCheck {
  readonly status: "ok" | "fail" | "skip";
  readonly name: string;
  readonly detail: string;
  readonly hint?: string;
}

export interface SetupInfo {
  readonly models: readonly SetupModel[];
  readonly checks: readonly SetupCheck[];
  /** e.g. "proxy on http://127.0.0.1:8766" or "not set up". */
  readonly ide: string;
  readonly database: string;
}

export type ReadSetup = () => Promise<SetupInfo>;

/** A Cursor client that called this process recently: its user agent, the path and when. */
export interface SeenClient {
  readonly userAgent: string;
  readonly path: string;
  readonly at: number;
}
