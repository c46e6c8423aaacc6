/**
 * The Connect services the server implements (docs/protocol.md §1.1, §6): the agent stream
 * (RunSSE + BidiAppend over HTTP/1.1, bidi Run over HTTP/2) and the start-up RPCs built from the
 * configured models.
 */
import { randomUUID } from "node:crypto";
import { ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import type { LLM, ModelInfo } from "../llm/index.ts";
import { afterOpen } from "./after-open.ts";
import { type ApplyBidiAppend, conversationOf } from "./bidi-append-apply.ts";
import {
  toBranchName,
  toBranchNamePrompt,
  toBranchNameResponse,
  toCommitMessagePrompt,
  toCommitMessageResponse,
  toNameAgentResponse,
  toOverviewPrompt,
  toOverviewResponse,
  toTitlePrompt,
} from "./cursor/helper-tasks.ts";
import {
  AgentService,
  AiService,
  BidiService,
  type OfferedModel,
  type PathEncryptionKeys,
  ServerConfigService,
  toAvailableModelsResponse,
  toDefaultModelForCliResponse,
  toHealthCheckResponse,
  toProtocolError,
  toServerConfigResponse,
  toServerTimeResponse,
  toUsableModelsResponse,
} from "./cursor/index.ts";
import type { HelperCall, HelperResult } from "./helper-calls.ts";
import type { Log } from "./log.ts";
import type { OpenRunSse } from "./run-sse-open.ts";
import type { StreamRegistry } from "./stream-registry.ts";
import { kHoldResponse } from "./stream-responses.ts";
import type { CheckAccess } from "./user-access.ts";

/** Set by a team client's IDE proxy on the calls it relays (transport/proxy/team-relay.ts). */
export const VIA_IDE_PROXY_HEADER = "x-cursor-byok-via-ide-proxy";

export interface RouteOptions {
  /** Opens a RunSSE's stream, with the checks both RunSSE responders share (run-sse-open.ts). */
  readonly openRunSse: OpenRunSse;
  /** Whether `GetServerConfig` lets clients use the HTTP/2 bidi `Run`. */
  readonly offerHttp2: boolean;
  readonly pathEncryptionKeys: PathEncryptionKeys;
  /** The model call behind chat titles, commit messages and branch names. */
  readonly helper: HelperCall;
  /** Appends a BidiAppend's message, with the checks both responders share (bidi-append-apply.ts). */
  readonly applyBidiAppend: ApplyBidiAppend;
  /** Team users: refuses a stream or conversation of another user (user-access.ts). */
  readonly access?: CheckAccess;
}

export function createRoutes(
  streams: StreamRegistry,
  models: Pick<LLM, "listModels">,
  now: () => number,
  log: Log,
  options: RouteOptions,
): (router: ConnectRouter) => void {
  const offered = (): OfferedModel[] => models.listModels().map(toOfferedModel);
  // HTTP/2 is never offered to the IDE through a team client's proxy (docs/team.md "Clients"):
  // Electron's HTTP/2 client does not use the proxy, so the agent would go to Cursor's host.
  const serverConfig = (_request: unknown, context: HandlerContext) =>
    toServerConfigResponse({
      http2: options.offerHttp2 && !context.requestHeader.has(VIA_IDE_PROXY_HEADER),
      pathEncryptionKeys: options.pathEncryptionKeys,
    });
  const { helper } = options;
  const access: CheckAccess = options.access ?? (() => Promise.resolve());
  const headerID = (context: HandlerContext): string | null =>
    context.requestHeader.get("x-request-id");
  // A title is never an error for the client: without a model answer it is the first words.
  const nameAgent = async (request: { userMessage: string }, context: HandlerContext) => {
    const result = await helper("title", toTitlePrompt(request.userMessage), context.signal);
    if (result.type === "failed")
      log.debug({ error: result.error }, "chat title from the first words");
    return toNameAgentResponse(
      request.userMessage,
      result.type === "text" ? result.text : undefined,
    );
  };

  return (router) => {
    router.service(AgentService, {
      // For the requests the direct responder leaves to Connect (run-sse-response.ts). Not a
      // generator: the agent stream's own generator is what Connect reads (after-open.ts).
      runSSE: (request, context) =>
        afterOpen(async () =>
          (await options.openRunSse(request.requestId, headerID(context))).subscribe(
            context.signal,
            // Held at shutdown: no end of stream, the connection is dropped (stream-responses.ts).
            context.values.get(kHoldResponse),
          ),
        ),
      async *run(requests, context) {
        // A Run stream cannot be reconnected: when the client goes, its turn goes with it.
        const runID = `run-${randomUUID()}`;
        // Bound like any stream, though its id is never shown: only its user may attach to it.
        await access({ requestID: runID });
        const stream = await streams.open(runID);
        const pump = (async () => {
          let seqno = 0;
          for await (const message of requests) {
            await access({ conversationID: conversationOf(message) });
            await stream.append(seqno, message);
            seqno += 1;
          }
        })();
        pump.catch((error: unknown) => stream.abandon(ConnectError.from(error)));
        try {
          yield* stream.subscribe(context.signal, context.values.get(kHoldResponse));
        } finally {
          if (!stream.outbound.ended) {
            await stream.abandon(toProtocolError({ type: "run_stream_closed" }));
          }
        }
      },
      runPoll() {
        throw toProtocolError({ type: "run_poll_not_served" });
      },
      nameAgent,
      async createTranscriptOverview(request, context) {
        const prompt = toOverviewPrompt(request.formattedConversation);
        const result = await helper("overview", prompt, context.signal);
        if (result.type === "failed" || result.text.trim() === "") {
          throw helperError("transcript overview", result);
        }
        return toOverviewResponse(result.text);
      },
    });

    router.service(BidiService, {
      // For the requests the direct responder leaves to Connect (bidi-append-response.ts); the
      // append itself is shared with it (bidi-append-apply.ts).
      async bidiAppend(request, context) {
        await options.applyBidiAppend(request, headerID(context));
        return {};
      },
    });

    router.service(AiService, {
      getServerConfig: serverConfig,
      availableModels: () => toAvailableModelsResponse(offered()),
      getUsableModels: () => toUsableModelsResponse(offered()),
      getDefaultModelForCli() {
        const [first] = offered();
        if (first === undefined) throw toProtocolError({ type: "no_model" });
        return toDefaultModelForCliResponse(first);
      },
      serverTime() {
        const at = now();
        return toServerTimeResponse(at, at);
      },
      healthCheck: () => toHealthCheckResponse(),
      nameAgent,
      async writeGitCommitMessage(request, context) {
        const result = await helper(
          "commit-message",
          toCommitMessagePrompt(request),
          context.signal,
        );
        if (result.type === "failed" || result.text.trim() === "") {
          throw helperError("commit message", result);
        }
        return toCommitMessageResponse(result.text);
      },
      async writeGitBranchName(request, context) {
        const result = await helper("branch-name", toBranchNamePrompt(request), context.signal);
        const name = result.type === "text" ? toBranchName(result.text) : undefined;
        if (name === undefined) throw helperError("branch name", result);
        return toBranchNameResponse(name);
      },
    });

    router.service(ServerConfigService, { getServerConfig: serverConfig });
  };
}

/** A failed helper call as the client shows it: the model's failure, or that it gave nothing. */
function helperError(what: string, result: HelperResult): ConnectError {
  const reason = result.type === "failed" ? result.error : "the model gave an empty answer";
  return toProtocolError({ type: "helper_failed", what, reason });
}

function toOfferedModel(model: ModelInfo): OfferedModel {
  return {
    id: model.name,
    displayName: model.name,
    contextWindow: model.contextWindow,
    supportsThinking: model.options.thinking,
    supportsImages: model.input.includes("image"),
    supportsMaxMode: model.options.maxMode,
    maxModeContextWindow: model.maxModeContextWindow,
  };
}
