import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import {
  ofSubagentContext,
  toContextSupplements,
  toSubagentContext,
  withoutCredentials,
} from "./context.ts";
import { HookAdditionalContextSchema } from "./gen/agent/v1/common_pb.js";
import { RequestContextSchema } from "./gen/agent/v1/request_context_pb.js";
import { SelectedContextSchema } from "./gen/agent/v1/user_message_pb.js";

const context = create(RequestContextSchema, {
  env: {
    osVersion: "linux 6.8.0",
    workspacePaths: ["/w"],
    shell: "bash",
    timeZone: "UTC",
    processWorkingDirectory: "/w",
  },
  gitRepos: [
    { path: "/w/b", branchName: "dev", status: "" },
    { path: "/w/a", branchName: "main", remoteUrl: "git@example.com:a.git", status: "M x.ts" },
  ],
  rules: [
    {
      fullPath: "/w/.cursor/rules/z.mdc",
      content: "Always Z.",
      type: { type: { case: "global", value: {} } },
    },
    {
      fullPath: "/w/.cursor/rules/db.mdc",
      content: "DB rules",
      type: { type: { case: "agentFetched", value: { description: "database conventions" } } },
    },
    {
      fullPath: "/w/.cursor/rules/ts.mdc",
      content: "TS rules",
      type: { type: { case: "fileGlobbed", value: { globs: ["*.ts"] } } },
    },
    {
      fullPath: "/w/.cursor/rules/manual.mdc",
      content: "manual",
      type: { type: { case: "manuallyAttached", value: {} } },
    },
    {
      fullPath: "/w/.cursor/rules/team.mdc",
      content: "disabled",
      type: { type: { case: "global", value: {} } },
    },
  ],
  disabledTeamRules: ["/w/.cursor/rules/team.mdc"],
  mcpInstructions: [{ serverName: "github", instructions: "Use the github tools for issues." }],
  projectLayouts: [
    { absPath: "/w", childrenFiles: [{ name: "package.json" }], childrenWereProcessed: true },
  ],
});

function render(overrides: Partial<Parameters<typeof toContextSupplements>[0]> = {}) {
  return toContextSupplements({
    requestContext: context,
    selectedContext: undefined,
    customInstructions: undefined,
    excludeWorkspace: false,
    ...overrides,
  });
}

test("keys are stable names, in a fixed order", () => {
  assert.deepEqual(
    render().map((supplement) => supplement.key),
    ["environment", "git", "project-layout", "rules", "mcp-instructions"],
  );
});

test("the environment is rendered without clocks or ids", () => {
  const environment = render().find((supplement) => supplement.key === "environment");
  assert.equal(
    environment?.text,
    "<environment>\nOS: linux 6.8.0\nShell: bash\nWorkspace roots: /w\nWorking directory: /w\nTime zone: UTC\n</environment>",
  );
});

test("git repos are sorted by path whatever order the client sends", () => {
  const git = render().find((supplement) => supplement.key === "git")?.text ?? "";
  assert.ok(git.indexOf("/w/a") < git.indexOf("/w/b"));
  assert.match(git, /remote: git@example.com:a.git/);
  assert.match(git, /status:\nM x.ts/);
});

test("always-applied rules are inlined, others listed for reading, disabled ones dropped", () => {
  const rules = render().find((supplement) => supplement.key === "rules")?.text ?? "";
  assert.match(rules, /<rule path="\/w\/.cursor\/rules\/z.mdc">\nAlways Z.\n<\/rule>/);
  assert.match(rules, /- \/w\/.cursor\/rules\/db.mdc: database conventions/);
  assert.match(rules, /- \/w\/.cursor\/rules\/ts.mdc: applies to \*.ts/);
  assert.doesNotMatch(rules, /manual/);
  assert.doesNotMatch(rules, /disabled/);
});

test("rendering is deterministic", () => {
  assert.deepEqual(render(), render());
});

test("selected items get one key each, named by what they are", () => {
  const selected = create(SelectedContextSchema, {
    files: [{ path: "/w/a.ts", content: "const a = 1;" }],
    codeSelections: [
      { path: "/w/b.ts", content: "b()", range: { start: { line: 3 }, end: { line: 5 } } },
    ],
    terminals: [{ content: "$ npm test\nFAIL", title: "bash" }],
    cursorRules: [{ rule: { fullPath: "/w/.cursor/rules/manual.mdc", content: "manual rule" } }],
    gitDiff: { content: "diff --git a/x b/x" },
    extraContext: ["note one"],
  });
  const keys = render({ requestContext: undefined, selectedContext: selected }).map(
    (supplement) => supplement.key,
  );
  assert.deepEqual(keys, [
    "file:/w/a.ts",
    "selection:/w/b.ts:3-5",
    "terminal:bash",
    "rule:/w/.cursor/rules/manual.mdc",
    "git-diff",
    "extra:0",
  ]);
});

test("attribute values are escaped so a path cannot break a tag", () => {
  const selected = create(SelectedContextSchema, {
    files: [{ path: '/w/"quoted"&.ts', content: "x" }],
  });
  const [file] = render({ requestContext: undefined, selectedContext: selected });
  assert.match(file?.text ?? "", /path="\/w\/&quot;quoted&quot;&amp;.ts"/);
});

test("huge attachments are cut in the middle, and the cut is stated", () => {
  const selected = create(SelectedContextSchema, {
    files: [{ path: "/w/big.txt", content: "x".repeat(250_000) }],
  });
  const [file] = render({ requestContext: undefined, selectedContext: selected });
  assert.ok((file?.text.length ?? 0) < 110_000);
  assert.match(file?.text ?? "", /characters omitted/);
});

test("custom instructions become their own supplement; exclusion keeps MCP instructions", () => {
  const keys = render({ excludeWorkspace: true, customInstructions: "Be brief." }).map(
    (supplement) => supplement.key,
  );
  assert.deepEqual(keys, ["mcp-instructions", "custom-instructions"]);
});

test("credentials embedded in git remote URLs are stripped", () => {
  const withToken = create(RequestContextSchema, {
    gitRepos: [
      { path: "/w", branchName: "main", remoteUrl: "https://dev:ghp_secret123@github.com/o/r.git" },
    ],
  });
  const git =
    render({ requestContext: withToken }).find((supplement) => supplement.key === "git")?.text ??
    "";
  assert.doesNotMatch(git, /ghp_secret123/);
  assert.match(git, /remote: https:\/\/github.com\/o\/r.git/);
  assert.equal(withoutCredentials("git@github.com:o/r.git"), "git@github.com:o/r.git");
  assert.equal(withoutCredentials("ssh://git@host:22/r"), "ssh://host:22/r");
});

test("a subagent's context taken from the turn's rendered context is the one rendered apart", () => {
  const selected = create(SelectedContextSchema, {
    files: [{ path: "/w/a.ts", content: "const a = 1;" }],
    codeSelections: [
      { path: "/w/b.ts", content: "b()", range: { start: { line: 3 }, end: { line: 5 } } },
    ],
    terminals: [{ content: "$ npm test\nFAIL", title: "bash" }],
    cursorRules: [{ rule: { fullPath: "/w/.cursor/rules/manual.mdc", content: "manual rule" } }],
    gitDiff: { content: "diff --git a/x b/x" },
    extraContext: ["note one"],
    consoleLogs: [{ level: "error", message: "TypeError: x is undefined" }],
    selectedSkills: [
      { fullPath: "/w/.cursor/skills/release/SKILL.md", content: "Tag, then push." },
    ],
  });
  const withHooks = create(RequestContextSchema, {
    ...context,
    hooksAdditionalContext: "from the hooks",
  });
  for (const excludeWorkspace of [false, true]) {
    for (const customInstructions of [undefined, "Be brief."]) {
      for (const requestContext of [context, withHooks, undefined]) {
        const shared = { requestContext, customInstructions, excludeWorkspace };
        const rendered = toContextSupplements({
          ...shared,
          selectedContext: selected,
          hookContexts: [create(HookAdditionalContextSchema, { hookEventName: "x", content: "y" })],
        });
        const apart = toSubagentContext(shared);
        assert.deepEqual(ofSubagentContext(rendered), apart);
        if (requestContext !== undefined && !excludeWorkspace) {
          assert.deepEqual(
            apart.map((supplement) => supplement.key),
            ["environment", "git", "project-layout", "rules", "mcp-instructions"].concat(
              customInstructions === undefined ? [] : ["custom-instructions"],
            ),
          );
        }
      }
    }
  }
});

test("the workspace's supplements are one shared frozen value per text across conversations; others are each request's own", () => {
  const render = (instructions: string, selected = false) =>
    toContextSupplements({
      requestContext: create(RequestContextSchema, {
        env: { osVersion: "linux 6.1", shell: "bash", workspacePaths: ["/ws"] },
        rules: [
          {
            fullPath: "/ws/.cursor/rules/a.mdc",
            content: "Use tabs.",
            type: { type: { case: "global", value: {} } },
          },
        ],
      }),
      selectedContext: selected
        ? create(SelectedContextSchema, { files: [{ path: "/ws/a.ts", content: "x" }] })
        : undefined,
      customInstructions: instructions,
      excludeWorkspace: false,
    });
  const one = render("Be brief.", true);
  const two = render("Be brief.", true);
  assert.deepEqual(one, two);
  const byKey = (list: readonly { key: string }[], key: string) =>
    list.find((supplement) => supplement.key === key);
  for (const key of ["environment", "rules", "custom-instructions"]) {
    assert.ok(byKey(one, key) !== undefined, key);
    assert.equal(byKey(one, key), byKey(two, key), key);
    assert.ok(Object.isFrozen(byKey(one, key)), key);
  }
  const own = one.filter((supplement) => !Object.isFrozen(supplement));
  assert.ok(own.length > 0);
  for (const supplement of own) assert.notEqual(supplement, byKey(two, supplement.key));
  // Another text is another value.
  assert.notEqual(
    byKey(render("Be thorough."), "custom-instructions"),
    byKey(one, "custom-instructions"),
  );
});

test("the shared supplements are bounded: a very long text is not kept, and the kept texts start over when full", () => {
  const instructions = (text: string) =>
    toContextSupplements({
      requestContext: undefined,
      selectedContext: undefined,
      customInstructions: text,
      excludeWorkspace: false,
    })[0];
  const huge = "h".repeat(140_000);
  assert.notEqual(instructions(huge), instructions(huge));
  assert.deepEqual(instructions(huge), instructions(huge));
  const first = instructions("a".repeat(120_000));
  assert.equal(instructions("a".repeat(120_000)), first);
  for (let i = 0; i < 9; i++) instructions(String(i).repeat(120_000));
  const again = instructions("a".repeat(120_000));
  assert.notEqual(again, first);
  assert.deepEqual(again, first);
});
