import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { toBlobID } from "./blobs.ts";
import { toContextSupplements } from "./context.ts";
import { findUnusedContext } from "./context-attached.ts";
import { HookAdditionalContextSchema } from "./gen/agent/v1/common_pb.js";
import { RequestContextSchema } from "./gen/agent/v1/request_context_pb.js";
import { SelectedContextSchema } from "./gen/agent/v1/user_message_pb.js";

const prBody = new TextEncoder().encode("Adds dark mode.\nCloses #12.");
const blobs = new Map([[toBlobID(prBody), prBody]]);

const selected = create(SelectedContextSchema, {
  documentations: [{ docId: "d1", name: "React" }],
  pastChats: [{ agentId: "chat-7", name: "Login refactor" }],
  selectedPullRequests: [
    {
      number: 42,
      url: "https://git.example/pr/42",
      title: "Dark mode",
      folderPath: "/w",
      blobId: Buffer.from(toBlobID(prBody), "hex"),
    },
  ],
  gitPrDiffSelections: [
    {
      prUrl: "https://git.example/pr/42",
      filePath: "src/theme.ts",
      startLine: 3,
      endLine: 9,
      diffContent: "+export const dark = true;",
    },
  ],
  selectedBrowsers: [{ browserId: "b1", url: "http://localhost:3000/", pageTitle: "My app" }],
  uiElements: [{ element: "<button>", xpath: "/html/body/button", textContent: "Save" }],
  consoleLogs: [{ level: "error", message: "TypeError: x is undefined" }],
  selectedDocuments: [
    {
      uuid: "u1",
      filename: "notes.md",
      mimeType: "text/markdown",
      dataOrBlobId: { case: "data", value: new TextEncoder().encode("# Notes\nship it") },
    },
    {
      uuid: "u2",
      filename: "spec.pdf",
      mimeType: "application/pdf",
      dataOrBlobId: { case: "data", value: new Uint8Array([0x25, 0x50, 0x44, 0x46, 0, 1, 2]) },
    },
    { uuid: "u3", filename: "missing.txt", mimeType: "text/plain" },
  ],
  selectedVideos: [{ uuid: "v1", filename: "bug.mp4", mimeType: "video/mp4" }],
  selectedSkills: [{ fullPath: "/w/.cursor/skills/release/SKILL.md", content: "Tag, then push." }],
  selectedSubagents: [{ name: "reviewer" }, { name: "ghost" }],
});

const requestContext = create(RequestContextSchema, {
  customSubagents: [
    {
      name: "reviewer",
      description: "Reviews diffs",
      prompt: "Look for bugs first.",
      fullPath: "/w/.cursor/agents/reviewer.md",
    },
    { name: "architect", description: "Designs", prompt: "Think.", fullPath: "" },
  ],
  agentSkills: [
    { fullPath: "/w/.cursor/skills/z/SKILL.md", description: "Zebra tasks" },
    { fullPath: "/w/.cursor/skills/a/SKILL.md", description: "Alpha\n tasks" },
    {
      fullPath: "/w/.cursor/skills/hidden/SKILL.md",
      description: "x",
      disableModelInvocation: true,
    },
  ],
  userPermissionsAutoRun: {
    allowInstructions: ["git status and other read-only git"],
    blockInstructions: [],
  },
  adminPermissionsAutoRun: { allowInstructions: [], blockInstructions: ["rm -rf"] },
  projectPermissionsAutoRun: { allowInstructions: [" "], blockInstructions: [] },
});

function render() {
  return toContextSupplements({
    requestContext,
    selectedContext: selected,
    customInstructions: undefined,
    excludeWorkspace: false,
    blobs,
  });
}

function byKey(key: string): string {
  const found = render().find((item) => item.key === key);
  assert.ok(
    found,
    `no supplement ${key}; keys: ${render()
      .map((item) => item.key)
      .join(", ")}`,
  );
  return found.text;
}

test("every attached item kind becomes a supplement with a stable key", () => {
  assert.deepEqual(
    render().map((item) => item.key),
    [
      "skills",
      "custom-subagents",
      "auto-run-rules",
      "docs:d1",
      "past-chat:chat-7",
      "pr:https://git.example/pr/42",
      "pr-diff:https://git.example/pr/42:src/theme.ts:3-9",
      "browser:b1",
      "ui-element:0:/html/body/button",
      "console-logs",
      "document:u1",
      "document:u2",
      "document:u3",
      "video:v1",
      "skill:/w/.cursor/skills/release/SKILL.md",
      "subagent:reviewer",
      "subagent:ghost",
    ],
  );
});

test("the same request renders the same bytes (the loop appends unchanged context only once)", () => {
  assert.deepEqual(JSON.stringify(render()), JSON.stringify(render()));
});

test("pull requests and their diffs carry their text, from a blob when sent by reference", () => {
  assert.match(
    byKey("pr:https://git.example/pr/42"),
    /Pull request #42: Dark mode\nURL: https:\/\/git\.example\/pr\/42[\s\S]*Adds dark mode\.\nCloses #12\./,
  );
  assert.match(
    byKey("pr-diff:https://git.example/pr/42:src/theme.ts:3-9"),
    /lines="3-9"[\s\S]*\+export const dark = true;/,
  );
});

test("what cannot be read here is named to the model with what to do instead", () => {
  assert.match(byKey("docs:d1"), /"React" \(@Docs\)[\s\S]*cannot search/);
  assert.match(byKey("past-chat:chat-7"), /"Login refactor"[\s\S]*ask the user/);
  assert.match(byKey("browser:b1"), /"My app" \(http:\/\/localhost:3000\/\)/);
  assert.match(
    byKey("document:u2"),
    /7 bytes of application\/pdf: this server cannot turn it into text/,
  );
  assert.match(byKey("document:u3"), /did not send this document's content/);
  assert.match(byKey("video:v1"), /videos cannot be passed to the model/);
});

test("documents, browser elements and console logs are shown as text", () => {
  assert.match(byKey("document:u1"), /name="notes\.md" type="text\/markdown">\n# Notes\nship it/);
  assert.match(
    byKey("ui-element:0:/html/body/button"),
    /<button>\nXPath: \/html\/body\/button\nText: Save/,
  );
  assert.match(byKey("console-logs"), /\[error\] TypeError: x is undefined/);
});

test("skills: a selected one inline, the offered ones listed to read when they fit", () => {
  assert.match(
    byKey("skill:/w/.cursor/skills/release/SKILL.md"),
    /use this skill\.\n\nTag, then push\./,
  );
  const list = byKey("skills");
  assert.match(
    list,
    /- \/w\/\.cursor\/skills\/a\/SKILL\.md: Alpha tasks\n- \/w\/\.cursor\/skills\/z\/SKILL\.md: Zebra tasks/,
  );
  assert.doesNotMatch(list, /hidden/);
});

test("subagents: a selected one with its instructions, the defined ones listed", () => {
  assert.match(
    byKey("subagent:reviewer"),
    /with the task tool \(subagent_type "reviewer"\)\. Where the task tool is not offered, do the task yourself, following its instructions\.\n\nLook for bugs first\./,
  );
  assert.match(byKey("subagent:ghost"), /definition was not sent/);
  assert.match(
    byKey("custom-subagents"),
    /- architect: Designs\n- reviewer: Reviews diffs \(\/w\/\.cursor\/agents\/reviewer\.md\)/,
  );
});

test("auto-run rules by who set them; empty ones leave no trace", () => {
  const rules = byKey("auto-run-rules");
  assert.match(
    rules,
    /Set by the user:\n- allowed: git status and other read-only git\n\nSet by an administrator:\n- blocked: rm -rf/,
  );
  assert.doesNotMatch(rules, /Set by the project/);
});

test("workspace exclusion drops skills and subagents, not the auto-run rules", () => {
  const keys = toContextSupplements({
    requestContext,
    selectedContext: undefined,
    customInstructions: undefined,
    excludeWorkspace: true,
  }).map((item) => item.key);
  assert.deepEqual(keys, ["auto-run-rules"]);
});

test("attached fields this schema does not model are named for the debug log", () => {
  assert.deepEqual(findUnusedContext(selected), []);
  assert.deepEqual(findUnusedContext(undefined), []);
  // selected_context 27 (recent agents) and 2 (invocation context) as a newer client sends them.
  const bytes = new Uint8Array([
    ...toBinary(SelectedContextSchema, selected),
    0xda,
    0x01,
    0x00,
    0x12,
    0x00,
  ]);
  assert.deepEqual(findUnusedContext(fromBinary(SelectedContextSchema, bytes)), [
    "selected_context.2",
    "selected_context.27",
  ]);
});

test("what the user's hooks add reaches the model, in the client's order", () => {
  const supplements = toContextSupplements({
    requestContext: create(RequestContextSchema, {
      hooksAdditionalContext: "Branch policy: main is frozen.",
    }),
    selectedContext: undefined,
    customInstructions: undefined,
    excludeWorkspace: true,
    hookContexts: [
      create(HookAdditionalContextSchema, {
        hookEventName: "beforeSubmitPrompt",
        content: "CI is red.",
      }),
      create(HookAdditionalContextSchema, { hookEventName: "x", content: "  " }),
    ],
  });
  const hook = supplements.find((item) => item.key === "hook-context");
  assert.equal(
    hook?.text,
    '<hook_context>\nContext added by the user\'s hooks:\nBranch policy: main is frozen.\n\n<hook event="beforeSubmitPrompt">\nCI is red.\n</hook>\n</hook_context>',
  );
});
