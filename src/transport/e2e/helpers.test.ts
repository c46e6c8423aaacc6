/**
 * Chat titles, commit messages and branch names through the real server and the LLM layer, with
 * the fake provider as the model: what the client sends reaches the model, the model's answer
 * reaches the client, and a failing or silent model ends the way each procedure promises.
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AgentService } from "../cursor/index.ts";
import { type Harness, startHarness } from "./test-harness.ts";

/** The model request the fake provider received, as JSON. */
async function modelRequest(harness: Harness, index: number) {
  const request = await harness.provider.request(index);
  return JSON.parse(request.body) as { messages: { role: string; content: unknown }[] };
}

function textOf(content: unknown): string {
  return typeof content === "string" ? content : JSON.stringify(content);
}

describe("helper procedures end to end", () => {
  let harness: Harness;
  afterEach(async () => {
    await harness.close();
  });

  test("NameAgent: the model names the chat, under both services", async () => {
    harness = await startHarness();
    harness.reply({ text: '"Fix the flaky login test."' }, { text: "Login flake" });
    const agent = createClient(
      AgentService,
      createConnectTransport({ baseUrl: harness.server.url, httpVersion: "1.1" }),
    );
    const named = await agent.nameAgent({ userMessage: "the login test fails every other run" });
    assert.equal(named.name, "Fix the flaky login test");
    const body = await modelRequest(harness, 0);
    assert.match(textOf(body.messages[0]?.content), /title/);
    assert.match(textOf(body.messages.at(-1)?.content), /the login test fails every other run/);
    assert.equal(
      (await harness.client().ai.nameAgent({ userMessage: "anything" })).name,
      "Login flake",
    );
  });

  test("NameAgent: a failing or silent model gives the message's first words", async () => {
    harness = await startHarness({ server: { helperTimeoutMs: 200 } });
    harness.provider.reply(
      { type: "status", status: 400, body: '{"error":"bad"}' },
      { type: "hang" },
    );
    const { ai } = harness.client();
    const message = "please refactor the payment module into smaller files";
    assert.equal(
      (await ai.nameAgent({ userMessage: message })).name,
      "please refactor the payment module into",
    );
    assert.equal(
      (await ai.nameAgent({ userMessage: message })).name,
      "please refactor the payment module into",
    );
  });

  test("CreateTranscriptOverview: the model summarizes the transcript the client sends", async () => {
    harness = await startHarness();
    harness.reply({ text: "The user asked for a fix to add(); it was fixed and tested." });
    const agent = createClient(
      AgentService,
      createConnectTransport({ baseUrl: harness.server.url, httpVersion: "1.1" }),
    );
    const response = await agent.createTranscriptOverview({
      formattedConversation: "user: add() subtracts\nassistant: fixed, tests pass",
    });
    assert.equal(response.overview, "The user asked for a fix to add(); it was fixed and tested.");
    assert.match(
      textOf((await modelRequest(harness, 0)).messages.at(-1)?.content),
      /add\(\) subtracts/,
    );
  });

  test("WriteGitCommitMessage: from the diffs and the repository's style", async () => {
    harness = await startHarness();
    harness.reply({ text: "```\nFix subtraction in add\n\nadd() returned a - b.\n```" });
    const { ai } = harness.client();
    const response = await ai.writeGitCommitMessage({
      diffs: ["diff --git a/math.ts b/math.ts\n-  return a - b;\n+  return a + b;\n"],
      previousCommitMessages: ["Add the math module"],
    });
    assert.equal(response.commitMessage, "Fix subtraction in add\n\nadd() returned a - b.");
    const user = textOf((await modelRequest(harness, 0)).messages.at(-1)?.content);
    assert.match(user, /\+ {2}return a \+ b;/);
    assert.match(user, /Add the math module/);
  });

  test("WriteGitCommitMessage: a model failure is an error the client shows", async () => {
    harness = await startHarness();
    harness.provider.reply({
      type: "status",
      status: 401,
      body: '{"error":{"message":"bad key"}}',
    });
    const { ai } = harness.client();
    const error = await ai.writeGitCommitMessage({ diffs: ["+x"] }).then(
      () => undefined,
      (caught: unknown) => ConnectError.from(caught),
    );
    assert.equal(error?.code, Code.Unavailable);
    assert.match(error?.rawMessage ?? "", /^could not write a commit message: /);
  });

  test("WriteGitBranchName: a valid branch name from the model", async () => {
    harness = await startHarness();
    harness.reply({ text: "Fix/Subtraction In Add" }, { text: "!!!" });
    const { ai } = harness.client();
    const response = await ai.writeGitBranchName({ diffs: "+  return a + b;", context: "add bug" });
    assert.equal(response.branchName, "fix/subtraction-in-add");
    const error = await ai.writeGitBranchName({ diffs: "+x" }).then(
      () => undefined,
      (caught: unknown) => ConnectError.from(caught),
    );
    assert.match(
      error?.rawMessage ?? "",
      /could not write a branch name: the model gave an empty answer/,
    );
  });

  test("helperModel picks the model the helpers call", async () => {
    harness = await startHarness({ server: { helperModel: "not-configured" } });
    const { ai } = harness.client();
    // The named model does not exist: the call fails before reaching the provider.
    assert.equal((await ai.nameAgent({ userMessage: "one two" })).name, "one two");
    assert.equal(harness.provider.requests.length, 0);
  });
});
