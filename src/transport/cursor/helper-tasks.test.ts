import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import {
  WriteGitBranchNameRequestSchema,
  WriteGitCommitMessageRequestSchema,
} from "./gen/aiserver/v1/git_text_pb.js";
import {
  DIFF_INPUT_CHARS,
  TITLE_INPUT_CHARS,
  TRANSCRIPT_INPUT_CHARS,
  toBranchName,
  toBranchNamePrompt,
  toCommitMessagePrompt,
  toCommitMessageResponse,
  toFallbackTitle,
  toNameAgentResponse,
  toOverviewPrompt,
  toOverviewResponse,
  toTitlePrompt,
} from "./helper-tasks.ts";

test("a title is the model's first line without quotes, labels or end punctuation", () => {
  const message = "please fix the flaky login test";
  assert.equal(
    toNameAgentResponse(message, '"Fix flaky login test."').name,
    "Fix flaky login test",
  );
  assert.equal(
    toNameAgentResponse(message, "Title: Login test repair\nbecause…").name,
    "Login test repair",
  );
  assert.equal(toNameAgentResponse(message, "**Debugging login**").name, "Debugging login");
});

test("without a usable model answer the title is the message's first words", () => {
  const message = "  Why does   the build fail on Windows when paths contain spaces?";
  assert.equal(toNameAgentResponse(message, undefined).name, "Why does the build fail on");
  assert.equal(toNameAgentResponse(message, "  \n").name, "Why does the build fail on");
  assert.equal(toFallbackTitle(""), "New chat");
  const long = `${"supercalifragilistic".repeat(5)} word`;
  assert.ok(toFallbackTitle(long).length <= 60);
  assert.ok(toFallbackTitle(long).endsWith("…"));
});

test("a long title is cut at a word boundary", () => {
  const title = toNameAgentResponse("x", `${"word ".repeat(30)}`).name;
  assert.ok(title.length <= 60, title);
  assert.match(title, /^word( word)*…$/);
});

test("the title prompt bounds the message it shows the model", () => {
  const prompt = toTitlePrompt("a".repeat(TITLE_INPUT_CHARS * 3));
  assert.ok(prompt.userText.length < TITLE_INPUT_CHARS + 100);
  assert.match(prompt.userText, /characters left out/);
  assert.equal(toTitlePrompt("short").userText, "short");
});

test("the commit-message prompt carries the diffs, the repository's style and the user's words", () => {
  const request = create(WriteGitCommitMessageRequestSchema, {
    diffs: ["diff --git a/a.ts b/a.ts\n-old\n+new", "diff --git a/b.ts b/b.ts\n+added"],
    previousCommitMessages: ["Fix the parser", "Add the lexer"],
    explicitContext: { context: "mention issue 7" },
  });
  const prompt = toCommitMessagePrompt(request);
  assert.match(prompt.userText, /\+new[\s\S]*\+added/);
  assert.match(prompt.userText, /Fix the parser\n---\nAdd the lexer/);
  assert.match(prompt.userText, /mention issue 7/);
  const huge = toCommitMessagePrompt(
    create(WriteGitCommitMessageRequestSchema, { diffs: ["+x\n".repeat(DIFF_INPUT_CHARS)] }),
  );
  assert.ok(huge.userText.length < DIFF_INPUT_CHARS + 200);
});

test("a commit message loses a code fence around it", () => {
  assert.equal(
    toCommitMessageResponse("```\nFix the parser\n\nIt lost tokens.\n```").commitMessage,
    "Fix the parser\n\nIt lost tokens.",
  );
  assert.equal(toCommitMessageResponse("  Add tests \n").commitMessage, "Add tests");
});

test("a branch name is made valid for git", () => {
  assert.equal(toBranchName("feat/Add login page"), "feat/add-login-page");
  assert.equal(toBranchName("`fix/crash..on--start.lock`\nexplanation"), "fix/crash.on-start");
  assert.equal(toBranchName("/-weird//name-/"), "weird/name");
  assert.equal(toBranchName("   "), undefined);
  assert.equal(toBranchName("!!!"), undefined);
  assert.ok((toBranchName("word-".repeat(30)) ?? "").length <= 50);
  assert.doesNotMatch(toBranchName("word-".repeat(30)) ?? "", /-$/);
});

test("the branch-name prompt carries the diff and the context", () => {
  const prompt = toBranchNamePrompt(
    create(WriteGitBranchNameRequestSchema, { diffs: "+feature", context: "dark mode" }),
  );
  assert.match(prompt.userText, /\+feature/);
  assert.match(prompt.userText, /dark mode/);
});

test("a transcript overview: the transcript bounded, the answer without a fence", () => {
  const prompt = toOverviewPrompt(
    `user: fix it\nassistant: done\n${"x".repeat(TRANSCRIPT_INPUT_CHARS)}`,
  );
  assert.ok(prompt.userText.startsWith("user: fix it\nassistant: done"));
  assert.ok(prompt.userText.length < TRANSCRIPT_INPUT_CHARS + 100);
  assert.equal(
    toOverviewResponse("```\nThe user wanted a fix; it was made.\n```").overview,
    "The user wanted a fix; it was made.",
  );
});
