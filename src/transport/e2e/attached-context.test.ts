/**
 * Attached context through the real server: what the user attaches (@Docs, a PR diff, a
 * document, a skill) and what the request context offers (skills, subagents, auto-run rules)
 * reaches the model as context, once; a second turn with the same attachments repeats nothing,
 * and its request extends the first one byte for byte (the prefix-cache guarantee).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { create, fromBinary } from "@bufbuild/protobuf";
import { AgentSkillSchema } from "../cursor/gen/agent/v1/common_pb.js";
import {
  CustomSubagentSchema,
  PermissionsAutoRunInstructionsSchema,
  RequestContextSchema,
} from "../cursor/gen/agent/v1/request_context_pb.js";
import type { AgentRunRequest } from "../cursor/gen/agent/v1/run_request_pb.js";
import {
  SelectedContextSchema,
  SelectedDocumentationSchema,
  SelectedDocumentSchema,
  SelectedGitPRDiffSelectionSchema,
} from "../cursor/gen/agent/v1/user_message_pb.js";
import { type Harness, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "5e4d3c2b-7777-4a5b-8c6d-7e8f9a0b1c2d";

function attach(request: AgentRunRequest): void {
  const action = request.action?.action;
  if (action?.case !== "userMessageAction") throw new Error("not a user message");
  const userMessage = action.value.userMessage;
  if (userMessage === undefined) throw new Error("no user message");
  // A newer client's field this schema does not model (27, recent agents context).
  userMessage.selectedContext ??= fromBinary(
    SelectedContextSchema,
    new Uint8Array([0xda, 0x01, 0x00]),
  );
  action.value.requestContext ??= create(RequestContextSchema);
  const selected = userMessage.selectedContext;
  const context = action.value.requestContext;
  selected.documentations.push(create(SelectedDocumentationSchema, { docId: "d1", name: "React" }));
  selected.gitPrDiffSelections.push(
    create(SelectedGitPRDiffSelectionSchema, {
      prUrl: "https://git.example/pr/42",
      filePath: "src/theme.ts",
      startLine: 1,
      endLine: 2,
      diffContent: "+export const DARK_PR_DIFF = true;",
    }),
  );
  selected.selectedDocuments.push(
    create(SelectedDocumentSchema, {
      uuid: "doc-1",
      filename: "notes.md",
      mimeType: "text/markdown",
      dataOrBlobId: { case: "data", value: new TextEncoder().encode("DOCUMENT_BODY_MARKER") },
    }),
  );
  selected.selectedSkills.push(
    create(AgentSkillSchema, { fullPath: "/w/skills/release.md", content: "SKILL_BODY_MARKER" }),
  );
  context.agentSkills.push(
    create(AgentSkillSchema, { fullPath: "/w/skills/lint.md", description: "LINT_SKILL_MARKER" }),
  );
  context.customSubagents.push(
    create(CustomSubagentSchema, { name: "reviewer", description: "SUBAGENT_MARKER" }),
  );
  context.userPermissionsAutoRun = create(PermissionsAutoRunInstructionsSchema, {
    allowInstructions: ["AUTORUN_MARKER"],
  });
}

const MARKERS = [
  "React",
  "DARK_PR_DIFF",
  "DOCUMENT_BODY_MARKER",
  "SKILL_BODY_MARKER",
  "LINT_SKILL_MARKER",
  "SUBAGENT_MARKER",
  "AUTORUN_MARKER",
];

function messagesOf(body: string): string[] {
  return (JSON.parse(body).messages as unknown[]).map((message) => JSON.stringify(message));
}

function count(text: string, marker: string): number {
  return text.split(marker).length - 1;
}

describe("attached context end to end", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness();
    harness.reply({ text: "Noted." }, { text: "Still noted." });
    const client = harness.client();
    for (const text of ["Use what I attached.", "And again."]) {
      const result = await client.startTurn({
        conversationId: CONVERSATION,
        text,
        modelId: MODEL,
        edit: attach,
      }).done;
      assert.equal(result.error, undefined);
    }
  });
  after(() => harness.close());

  test("every attached item reaches the model, once", () => {
    const [first, second] = harness.provider.requests.map((request) => request.body);
    assert.ok(first !== undefined && second !== undefined);
    for (const marker of MARKERS) {
      assert.equal(count(first, marker) > 0, true, `${marker} in the first request`);
      assert.equal(count(second, marker), count(first, marker), `${marker} not repeated`);
    }
  });

  test("attached fields the schema does not model are logged at debug, not dropped silently", () => {
    const logged = harness.logs.filter(
      (line) =>
        line.level === "debug" && line.message === "attached context the model is not given",
    );
    assert.deepEqual(logged[0]?.fields.fields, ["selected_context.27"]);
  });

  test("the second request's messages extend the first's byte for byte", () => {
    const [first, second] = harness.provider.requests.map((request) => messagesOf(request.body));
    assert.ok(first !== undefined && second !== undefined);
    assert.ok(second.length > first.length);
    assert.deepEqual(second.slice(0, first.length), first);
  });
});
