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

test("the shared supplements are bounded: a very long text is not kept, and a key keeps only its last few texts", () => {
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

/**
 * The shared supplements' rules (context.ts `toSupplement`), each on a fresh instance of the
 * module: its kept texts are module state, and a clean table makes every count exact.
 */
let instances = 0;
async function freshSupplements(): Promise<(key: string, body: string) => { text: string }> {
  const module: typeof import("./context.ts") = await import(
    `./context.ts?instance=${++instances}`
  );
  return (key, body) => {
    const requestContext = create(RequestContextSchema, {
      ...(key === "environment" ? { env: { osVersion: body } } : {}),
      ...(key === "mcp-instructions"
        ? { mcpInstructions: [{ serverName: "s", instructions: body }] }
        : {}),
      ...(key === "rules"
        ? {
            rules: [body.slice(0, 65_000), body.slice(65_000)].map((content, i) => ({
              fullPath: `/w/.cursor/rules/${i}.mdc`,
              content,
              type: { type: { case: "global" as const, value: {} } },
            })),
          }
        : {}),
    });
    const found = module
      .toContextSupplements({
        requestContext,
        selectedContext: undefined,
        customInstructions: key === "custom-instructions" ? body : undefined,
        excludeWorkspace: false,
      })
      .find((supplement) => supplement.key === key);
    assert.ok(found !== undefined, key);
    return found;
  };
}

let made = 0;
/** A text not made before, of `length` characters. */
const fresh = (length = 20) => `${++made}:`.padEnd(length, "x");
/** Rendered, just under the 2^17 characters a kept text may have. */
const BIG = 130_000;

test("shared supplements: a text used again is the most recent, and outlives the texts made before that use", async () => {
  const supplement = await freshSupplements();
  const [first, ...newer] = [fresh(), fresh(), fresh(), fresh(), fresh(), fresh(), fresh()];
  const kept = supplement("mcp-instructions", first as string);
  for (const text of newer.slice(0, 3)) supplement("mcp-instructions", text);
  assert.equal(supplement("mcp-instructions", first as string), kept);
  // Four texts newer than `first` was made, three newer than its use: still the same value.
  for (const text of newer.slice(3)) supplement("mcp-instructions", text);
  assert.equal(supplement("mcp-instructions", first as string), kept);
});

test("shared supplements: the fifth distinct text of a key drops the least recent one", async () => {
  const supplement = await freshSupplements();
  const texts = [fresh(), fresh(), fresh(), fresh()];
  const kept = texts.map((text) => supplement("mcp-instructions", text));
  for (const [i, text] of texts.entries())
    assert.equal(supplement("mcp-instructions", text), kept[i]);
  supplement("mcp-instructions", fresh());
  // Most recent first: texts[3], [2], [1] stay; texts[0] is dropped.
  assert.equal(supplement("mcp-instructions", texts[1] as string), kept[1]);
  const again = supplement("mcp-instructions", texts[0] as string);
  assert.notEqual(again, kept[0]);
  assert.deepEqual(again, kept[0]);
});

test("shared supplements: a key's dropped texts no longer count toward the bound", async () => {
  const supplement = await freshSupplements();
  const other = fresh();
  const kept = supplement("mcp-instructions", other);
  // 20 texts of 130k characters made, four kept at a time: far below 2^20 kept, no start over.
  for (let i = 0; i < 20; i++) supplement("custom-instructions", fresh(BIG));
  assert.equal(supplement("mcp-instructions", other), kept);
});

test("shared supplements: texts across keys totalling more than 2^20 characters start over", async () => {
  const supplement = await freshSupplements();
  const first = fresh();
  const kept = supplement("mcp-instructions", first);
  const big = ["custom-instructions", "environment"].flatMap((key) =>
    [fresh(BIG), fresh(BIG), fresh(BIG), fresh(BIG)].map((text) => ({
      key,
      text,
      value: supplement(key, text),
    })),
  );
  // 8 × 130k characters and a bit: all kept, below the bound.
  assert.ok(big.reduce((sum, { value }) => sum + value.text.length, 0) < 1 << 20);
  for (const { key, text, value } of big) assert.equal(supplement(key, text), value);
  assert.equal(supplement("mcp-instructions", first), kept);
  // One more 130k text would pass 2^20: every key's texts are dropped, then it is kept.
  const last = fresh(BIG);
  const lastValue = supplement("rules", last);
  assert.equal(supplement("rules", last), lastValue);
  const again = supplement("mcp-instructions", first);
  assert.notEqual(again, kept);
  assert.deepEqual(again, kept);
  const bigAgain = supplement("environment", (big[7] as { text: string }).text);
  assert.notEqual(bigAgain, (big[7] as { value: unknown }).value);
});
