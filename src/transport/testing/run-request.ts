/**
 * Builds the `AgentRunRequest` that starts a turn, the way the IDE (`harness = "cursor-ide"`,
 * model in `requested_model` and `model_details`) or the CLI (no harness, model in
 * `model_details`) sends it (docs/protocol.md §2.3–2.4, §3 step 1 and 8).
 */
import { randomUUID } from "node:crypto";
import { platform, release } from "node:os";
import { create, fromBinary } from "@bufbuild/protobuf";
import { AgentMode } from "../cursor/gen/agent/v1/common_pb.js";
import {
  type ConversationStateStructure,
  ConversationTurnStructureSchema,
} from "../cursor/gen/agent/v1/conversation_state_pb.js";
import { McpToolsSchema } from "../cursor/gen/agent/v1/mcp_pb.js";
import {
  type AgentRunRequest,
  AgentRunRequestSchema,
  type PreFetchedBlob,
  PreFetchedBlobSchema,
} from "../cursor/gen/agent/v1/run_request_pb.js";

export type ClientFlavour = "ide" | "cli";
export type ModeName = "agent" | "ask" | "plan" | "debug";

export interface RunRequestInit {
  readonly conversationId: string;
  /** The user's message. */
  readonly text: string;
  readonly modelId: string;
  /** Absolute workspace path, sent as `request_context.env.workspace_paths[0]`. */
  readonly workspace: string;
  /** Default: a fresh UUID. */
  readonly messageId?: string;
  /** Default: agent. */
  readonly mode?: ModeName | AgentMode;
  /** Default: ide. */
  readonly flavour?: ClientFlavour;
  /** `env.os_version`; default: this machine's platform and kernel release. */
  readonly os?: string;
  /** `env.shell`; default: bash. */
  readonly shell?: string;
  /** The client's MCP tools (`mcp_tools`), as server identifier and tool name; default none. */
  readonly mcpTools?: readonly { readonly server: string; readonly tool: string }[];
  /** `env.terminals_folder`: where background shells write their output; default none. */
  readonly terminalsFolder?: string;
  /** `env.time_zone`; default: UTC. */
  readonly timeZone?: string;
  /** The last checkpoint of the conversation (`conversation_state`), for a follow-up turn. */
  readonly checkpoint?: ConversationStateStructure;
  /**
   * The client's blob store (hex SHA-256 → bytes). The blobs the checkpoint references (turns,
   * and the user messages and steps of blob-form turns) are sent as `pre_fetched_blobs`.
   */
  readonly blobs?: ReadonlyMap<string, Uint8Array>;
  /** Last-minute changes to the built request (anything the fields above do not cover). */
  readonly edit?: (request: AgentRunRequest) => void;
}

const MODES: Readonly<Record<ModeName, AgentMode>> = {
  agent: AgentMode.AGENT,
  ask: AgentMode.ASK,
  plan: AgentMode.PLAN,
  debug: AgentMode.DEBUG,
};

export function createRunRequest(init: RunRequestInit): AgentRunRequest {
  const flavour = init.flavour ?? "ide";
  const mode = typeof init.mode === "string" ? MODES[init.mode] : (init.mode ?? AgentMode.AGENT);
  const modelDetails = {
    modelId: init.modelId,
    displayModelId: init.modelId,
    displayName: init.modelId,
  };
  const request = create(AgentRunRequestSchema, {
    conversationId: init.conversationId,
    conversationState: init.checkpoint,
    modelDetails,
    requestedModel: flavour === "ide" ? { modelId: init.modelId } : undefined,
    harness: flavour === "ide" ? "cursor-ide" : undefined,
    preFetchedBlobs:
      init.checkpoint === undefined
        ? []
        : toReferencedBlobs(init.checkpoint, init.blobs ?? new Map()),
    action: {
      action: {
        case: "userMessageAction",
        value: {
          userMessage: { text: init.text, messageId: init.messageId ?? randomUUID(), mode },
          requestContext: {
            env: {
              osVersion: init.os ?? `${platform()} ${release()}`,
              workspacePaths: [init.workspace],
              shell: init.shell ?? "bash",
              timeZone: init.timeZone ?? "UTC",
              ...(init.terminalsFolder === undefined
                ? {}
                : { terminalsFolder: init.terminalsFolder }),
            },
          },
        },
      },
    },
  });
  if (init.mcpTools !== undefined && init.mcpTools.length > 0) {
    request.mcpTools = create(McpToolsSchema, {
      mcpTools: init.mcpTools.map(({ server, tool }) => ({
        name: `${server}-${tool}`,
        toolName: tool,
        providerIdentifier: server,
        description: `${tool} of ${server}`,
        inputSchemaJson: '{"type":"object","properties":{}}',
      })),
    });
  }
  init.edit?.(request);
  return request;
}

/** The stored blobs a checkpoint references, each once, in reference order. */
export function toReferencedBlobs(
  checkpoint: ConversationStateStructure,
  blobs: ReadonlyMap<string, Uint8Array>,
): PreFetchedBlob[] {
  const out = new Map<string, PreFetchedBlob>();
  const add = (id: Uint8Array): Uint8Array | undefined => {
    const key = Buffer.from(id).toString("hex");
    const value = blobs.get(key);
    if (value !== undefined && !out.has(key)) {
      out.set(key, create(PreFetchedBlobSchema, { id, value }));
    }
    return value;
  };
  for (const turn of checkpoint.turns) {
    const bytes = add(turn);
    if (bytes === undefined) continue;
    try {
      const structure = fromBinary(ConversationTurnStructureSchema, bytes);
      if (structure.turn.case === "agentConversationTurn") {
        add(structure.turn.value.userMessage);
        for (const step of structure.turn.value.steps) add(step);
      }
    } catch {
      // Not a turn structure: the blob itself is all the checkpoint references.
    }
  }
  return [...out.values()];
}
