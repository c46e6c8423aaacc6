import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { AgentMode } from "../cursor/gen/agent/v1/common_pb.js";
import {
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
} from "../cursor/gen/agent/v1/conversation_state_pb.js";
import { createRunRequest } from "./run-request.ts";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const sha = (bytes: Uint8Array) => new Uint8Array(createHash("sha256").update(bytes).digest());

test("the IDE flavour: harness, requested model, mode, env", () => {
  const request = createRunRequest({
    conversationId: "c",
    text: "hello",
    modelId: "m",
    workspace: "/w",
    mode: "plan",
    messageId: "id-1",
    os: "linux 6",
    shell: "zsh",
  });
  assert.equal(request.harness, "cursor-ide");
  assert.equal(request.requestedModel?.modelId, "m");
  assert.equal(request.modelDetails?.modelId, "m");
  assert.equal(request.conversationState, undefined);
  const action = request.action?.action;
  assert.equal(action?.case, "userMessageAction");
  assert.equal(action?.value.userMessage?.mode, AgentMode.PLAN);
  assert.equal(action?.value.userMessage?.messageId, "id-1");
  assert.deepEqual(action?.value.requestContext?.env?.workspacePaths, ["/w"]);
  assert.equal(action?.value.requestContext?.env?.shell, "zsh");
  assert.equal(action?.value.requestContext?.env?.osVersion, "linux 6");
});

test("a follow-up turn sends the checkpoint and the blobs it references", () => {
  const userMessage = new TextEncoder().encode("user message bytes");
  const step = new TextEncoder().encode("step bytes");
  const turn = toBinary(
    ConversationTurnStructureSchema,
    create(ConversationTurnStructureSchema, {
      turn: {
        case: "agentConversationTurn",
        value: { userMessage: sha(userMessage), steps: [sha(step)] },
      },
    }),
  );
  const unrelated = new TextEncoder().encode("not referenced");
  const blobs = new Map([
    [hex(sha(turn)), turn],
    [hex(sha(userMessage)), userMessage],
    [hex(sha(step)), step],
    [hex(sha(unrelated)), unrelated],
  ]);
  const checkpoint = create(ConversationStateStructureSchema, { turns: [sha(turn)] });
  const request = createRunRequest({
    conversationId: "c",
    text: "again",
    modelId: "m",
    workspace: "/w",
    checkpoint,
    blobs,
  });
  assert.equal(request.conversationState, checkpoint);
  assert.deepEqual(
    request.preFetchedBlobs.map((blob) => [hex(blob.id), blob.value]),
    [
      [hex(sha(turn)), turn],
      [hex(sha(userMessage)), userMessage],
      [hex(sha(step)), step],
    ],
  );
});
