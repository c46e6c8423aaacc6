import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { AgentClientMessage } from "../cursor/gen/agent/v1/agent_stream_pb.js";
import type { ExecClientMessage, ExecServerMessageSchema } from "../cursor/gen/agent/v1/exec_pb.js";
import { ShellAbortReason } from "../cursor/gen/agent/v1/exec_shell_pb.js";
import { type CursorClientOptions, createCursorClient } from "./cursor-client.ts";
import {
  createFakeAgentServer,
  type FakeScript,
  type FakeSession,
  type ServerMessageInit,
} from "./fake-agent-server.ts";
import { TurnTimeoutError } from "./turn.ts";

// ---------------------------------------------------------------------------------------------
// Helpers: a temp workspace, a fake server and a client, server message builders
// ---------------------------------------------------------------------------------------------

async function tempWorkspace(t: TestContext): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), "cursor-client-")));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function setup(
  t: TestContext,
  script: FakeScript,
  options: Partial<CursorClientOptions> = {},
  runSseContentType: "connect" | "event-stream" = "connect",
) {
  const workspace = await tempWorkspace(t);
  const httpVersion = options.httpVersion ?? "1.1";
  const server = await createFakeAgentServer({ httpVersion, script, runSseContentType });
  const client = createCursorClient({
    baseUrl: server.baseUrl,
    httpVersion,
    workspace,
    timeoutMs: 5000,
    ...options,
  });
  t.after(async () => {
    await client.close();
    await server.close();
    assert.deepEqual(server.scriptErrors, [], "the fake server's script failed");
  });
  return { workspace, server, client };
}

const text = (value: string): ServerMessageInit => ({
  message: {
    case: "interactionUpdate",
    value: { message: { case: "textDelta", value: { text: value } } },
  },
});

const turnEnded = (input = 0n, output = 0n): ServerMessageInit => ({
  message: {
    case: "interactionUpdate",
    value: {
      message: { case: "turnEnded", value: { inputTokens: input, outputTokens: output } },
    },
  },
});

const exec = (
  id: number,
  execId: string,
  message: MessageInitShape<typeof ExecServerMessageSchema>["message"],
): ServerMessageInit => ({
  message: { case: "execServerMessage", value: { id, execId, message } },
});

const isExecReply = (message: AgentClientMessage): boolean =>
  message.message.case === "execClientMessage";

const execOf = (message: AgentClientMessage): ExecClientMessage => {
  assert.equal(message.message.case, "execClientMessage");
  return message.message.value as ExecClientMessage;
};

/** Kinds of the client messages the server received, in order. */
function kinds(session: FakeSession): string[] {
  return session.received.map((message) => {
    const branch = message.message;
    if (branch.case === "execClientMessage") {
      const result = branch.value.message;
      return result.case === "shellStream"
        ? `shell:${result.value.event.case}`
        : `exec:${result.case}`;
    }
    if (branch.case === "execClientControlMessage") return `${branch.value.message.case}`;
    if (branch.case === "conversationAction") return `${branch.value.action.case}`;
    if (branch.case === "kvClientMessage") return `kv:${branch.value.message.case}`;
    return `${branch.case}`;
  });
}

// ---------------------------------------------------------------------------------------------
// Turns
// ---------------------------------------------------------------------------------------------

test("a text turn over HTTP/1.1: run request at seqno 0 (absent on the wire), hex data", async (t) => {
  const { client, server, workspace } = await setup(t, async (session) => {
    session.send(text("Hello, "));
    session.send(text("world"));
    session.send({
      message: {
        case: "conversationCheckpointUpdate",
        value: { tokenDetails: { usedTokens: 12, maxTokens: 200_000 } },
      },
    });
    session.send(turnEnded(10n, 2n));
    session.end();
  });
  const turn = client.startTurn({
    conversationId: "conv-1",
    text: "say hello",
    modelId: "test-model",
    messageId: "msg-1",
  });
  const result = await turn.done;

  assert.equal(result.error, undefined);
  assert.equal(result.view.text, "Hello, world");
  assert.deepEqual(result.view.usage, { inputTokens: 10, outputTokens: 2 });
  assert.equal(result.view.checkpoint?.tokenDetails?.usedTokens, 12);
  assert.equal(client.checkpoint("conv-1")?.tokenDetails?.usedTokens, 12);

  const session = await server.session();
  assert.equal(session.requestId, turn.requestId);
  assert.deepEqual(
    session.appends.map((append) => [append.seqno, append.seqnoOnWire, append.form]),
    [[0, false, "hex"]],
  );
  const run = session.runRequest;
  assert.equal(run?.conversationId, "conv-1");
  assert.equal(run?.harness, "cursor-ide");
  assert.equal(run?.requestedModel?.modelId, "test-model");
  assert.equal(run?.action?.action.case, "userMessageAction");
  const action = run?.action?.action.value as {
    userMessage?: { text: string; messageId: string };
    requestContext?: { env?: { workspacePaths: string[] } };
  };
  assert.equal(action.userMessage?.text, "say hello");
  assert.equal(action.userMessage?.messageId, "msg-1");
  assert.deepEqual(action.requestContext?.env?.workspacePaths, [workspace]);
});

test("a read exec round trip: real file contents, ids echoed, stream_close after the result", async (t) => {
  const { client, server, workspace } = await setup(t, async (session) => {
    session.send(exec(1, "exec-a", { case: "readArgs", value: { path: "src/a.txt" } }));
    await session.next(isExecReply);
    session.send(
      exec(2, "exec-b", { case: "readArgs", value: { path: join(session.requestId, "nope") } }),
    );
    await session.next(isExecReply);
    session.send(turnEnded());
    session.end();
  });
  await mkdir(join(workspace, "src"));
  await writeFile(join(workspace, "src", "a.txt"), "one\ntwo\nthree\n");

  const result = await client.startTurn({ conversationId: "c", text: "read", modelId: "m" }).done;
  assert.equal(result.error, undefined);

  const session = await server.session();
  assert.deepEqual(kinds(session), [
    "runRequest",
    "exec:readResult",
    "streamClose",
    "exec:readResult",
    "streamClose",
  ]);
  const first = execOf(session.received[1] as AgentClientMessage);
  assert.equal(first.id, 1);
  assert.equal(first.execId, "exec-a");
  assert.equal(first.message.case, "readResult");
  const read = first.message.value;
  assert.equal(read?.result.case, "success");
  const success = read?.result.value as {
    output: { case: string; value: string };
    totalLines: number;
    fileSize: bigint;
  };
  assert.deepEqual(success.output, { case: "content", value: "one\ntwo\nthree\n" });
  assert.equal(success.totalLines, 3);
  assert.equal(success.fileSize, 14n);
  const close = session.received[2]?.message;
  assert.equal(close?.case, "execClientControlMessage");
  assert.deepEqual(close?.value.message.value, {
    $typeName: "agent.v1.ExecClientStreamClose",
    id: 1,
  });
  const second = execOf(session.received[3] as AgentClientMessage);
  assert.equal(second.execId, "exec-b");
  assert.equal(
    second.message.case === "readResult" && second.message.value.result.case,
    "fileNotFound",
  );
  assert.deepEqual(
    session.appends.map((append) => append.seqno),
    [0, 1, 2, 3, 4],
  );
  assert.ok(session.appends.slice(1).every((append) => append.seqnoOnWire));
});

test("streamCloseBeforeResult sends stream_close first for non-streamed execs", async (t) => {
  const { client, server } = await setup(
    t,
    async (session) => {
      session.send(
        exec(7, "exec-w", { case: "writeArgs", value: { path: "d/e/f.txt", fileText: "x\ny" } }),
      );
      await session.next(isExecReply);
      session.end();
    },
    { streamCloseBeforeResult: true },
  );
  await client.startTurn({ conversationId: "c", text: "write", modelId: "m" }).done;
  const session = await server.session();
  assert.deepEqual(kinds(session), ["runRequest", "streamClose", "exec:writeResult"]);
  const write = execOf(session.received[2] as AgentClientMessage);
  assert.equal(write.id, 7);
  assert.equal(write.message.case === "writeResult" && write.message.value.result.case, "success");
});

test("a streamed shell exec: start, output chunks, exit with code and cwd, then stream_close", async (t) => {
  const { client, server, workspace } = await setup(t, async (session) => {
    session.send(
      exec(3, "exec-sh", {
        case: "shellStreamArgs",
        value: {
          command: "printf 'out-1\\n'; printf 'err-1\\n' >&2; printf 'out-2\\n'; exit 3",
          workingDirectory: "sub",
        },
      }),
    );
    await session.next((message) => message.message.case === "execClientControlMessage");
    session.send(turnEnded());
    session.end();
  });
  await mkdir(join(workspace, "sub"));
  await client.startTurn({ conversationId: "c", text: "run", modelId: "m" }).done;

  const session = await server.session();
  const sequence = kinds(session);
  assert.equal(sequence[1], "shell:start");
  assert.deepEqual(sequence.slice(-2), ["shell:exit", "streamClose"]);
  let stdout = "";
  let stderr = "";
  for (const message of session.received) {
    if (message.message.case !== "execClientMessage") continue;
    assert.equal(message.message.value.id, 3);
    assert.equal(message.message.value.execId, "exec-sh");
    const result = message.message.value.message;
    if (result.case !== "shellStream") continue;
    const event = result.value.event;
    if (event.case === "stdout") stdout += event.value.data;
    if (event.case === "stderr") stderr += event.value.data;
    if (event.case === "exit") {
      assert.equal(event.value.code, 3);
      assert.equal(event.value.cwd, join(workspace, "sub"));
      assert.equal(event.value.aborted, false);
    }
  }
  assert.equal(stdout, "out-1\nout-2\n");
  assert.equal(stderr, "err-1\n");
});

test("cancel: cancel_action goes up, abort kills the shell, the stream ends canceled", async (t) => {
  const { client, server } = await setup(t, async (session) => {
    session.send(exec(5, "exec-long", { case: "shellStreamArgs", value: { command: "sleep 30" } }));
    await session.next((message) => message.message.case === "conversationAction");
    session.send({
      message: {
        case: "execServerControlMessage",
        value: { message: { case: "abort", value: { id: 5 } } },
      },
    });
    await session.next(
      (message) =>
        message.message.case === "execClientMessage" &&
        message.message.value.message.case === "shellStream" &&
        message.message.value.message.value.event.case === "exit",
    );
    session.send(turnEnded());
    session.end(new ConnectError("canceled by the user", Code.Canceled));
  });
  const turn = client.startTurn({ conversationId: "c", text: "wait", modelId: "m" });
  await turn.waitForSent((sent) => sent.kind === "shell:start");
  await turn.cancel("the user pressed stop");
  const result = await turn.done;

  assert.equal(result.error?.code, Code.Canceled);
  assert.ok(result.view.turnEnded !== undefined);
  const session = await server.session();
  const cancel = session.received.find((message) => message.message.case === "conversationAction");
  assert.equal(
    cancel?.message.case === "conversationAction" && cancel.message.value.action.case,
    "cancelAction",
  );
  const exit = session.received
    .map((message) => message.message)
    .find(
      (branch) =>
        branch.case === "execClientMessage" &&
        branch.value.message.case === "shellStream" &&
        branch.value.message.value.event.case === "exit",
    );
  const event =
    exit?.case === "execClientMessage" && exit.value.message.case === "shellStream"
      ? exit.value.message.value.event
      : undefined;
  assert.equal(event?.case, "exit");
  assert.equal(event?.value.aborted, true);
  assert.equal(event?.value.abortReason, ShellAbortReason.USER_ABORT);
  assert.equal(event?.value.code, 128 + 9);
});

test("RunSSE dropped after a message and reopened with the same request id resumes the stream", async (t) => {
  const { client, server } = await setup(t, async (session) => {
    session.send(text("one"));
    await session.next((message) => message.message.case === "clientHeartbeat");
    session.send(text("two"));
    session.send(turnEnded());
    session.end();
  });
  const turn = client.startTurn({ conversationId: "c", text: "go", modelId: "m" });
  const isOne = (message: { message: { case?: string; value?: unknown } }) =>
    message.message.case === "interactionUpdate";
  await turn.dropRunSse(isOne);
  assert.equal(turn.messages.length, 1);
  // Only once the server noticed the drop is what it sends next certain to wait for the
  // reconnect (a write into a connection the client already closed can still succeed).
  const session = await server.session();
  await session.waitForDetached();
  await turn.heartbeat();
  turn.reconnectRunSse();
  const result = await turn.done;

  assert.equal(result.view.text, "onetwo");
  assert.equal(turn.connections, 2);
  assert.equal(session.connections, 2);
  assert.equal(session.requestId, turn.requestId);
});

test("HTTP/2: the same turn over the bidi Run", async (t) => {
  const { client, server, workspace } = await setup(
    t,
    async (session) => {
      session.send(text("reading"));
      session.send(exec(1, "exec-1", { case: "readArgs", value: { path: "a.txt" } }));
      await session.next((message) => message.message.case === "execClientControlMessage");
      session.send(turnEnded());
      session.end();
    },
    { httpVersion: "2" },
  );
  await writeFile(join(workspace, "a.txt"), "h2\n");
  const turn = client.startTurn({ conversationId: "c", text: "read", modelId: "m" });
  const result = await turn.done;

  assert.equal(turn.transport, "run");
  assert.equal(result.error, undefined);
  assert.equal(result.view.text, "reading");
  const session = await server.session();
  assert.match(session.requestId, /^run-/);
  assert.deepEqual(kinds(session).slice(0, 3), ["runRequest", "exec:readResult", "streamClose"]);
  const read = execOf(session.received[1] as AgentClientMessage);
  assert.equal(
    read.message.case === "readResult" &&
      read.message.value.result.case === "success" &&
      read.message.value.result.value.output.value,
    "h2\n",
  );
});

test("gzip and data_binary appends decode with fromBidiAppendBody", async (t) => {
  const { client, server, workspace } = await setup(
    t,
    async (session) => {
      session.send(exec(1, "e", { case: "lsArgs", value: { path: "" } }));
      await session.next(isExecReply);
      session.end();
    },
    { gzip: true, appendForm: "binary" },
  );
  await writeFile(join(workspace, "f.ts"), "x");
  await client.startTurn({ conversationId: "c", text: "ls", modelId: "m" }).done;
  const session = await server.session();
  assert.deepEqual(
    session.appends.map((append) => [append.seqno, append.form, append.contentEncoding]),
    [
      [0, "binary", "gzip"],
      [1, "binary", "gzip"],
      [2, "binary", "gzip"],
    ],
  );
  assert.equal(session.appends[0]?.seqnoOnWire, false);
  const ls = execOf(session.received[1] as AgentClientMessage);
  assert.equal(ls.message.case, "lsResult");
});

test("blobs, interaction queries and the checkpoint carry over to the next turn", async (t) => {
  const blob = new TextEncoder().encode("turn blob");
  const blobId = createHash("sha256").update(blob).digest();
  const { client, server } = await setup(t, async (session) => {
    if ((session.runRequest?.conversationState?.turns.length ?? 0) > 0) {
      session.send(text("second"));
      session.end();
      return;
    }
    session.send({
      message: {
        case: "kvServerMessage",
        value: { id: 1, message: { case: "setBlobArgs", value: { blobId, blobData: blob } } },
      },
    });
    await session.next((message) => message.message.case === "kvClientMessage");
    session.send({
      message: {
        case: "interactionQuery",
        value: {
          id: 9,
          query: {
            case: "askQuestionInteractionQuery",
            value: {
              args: {
                questions: [
                  {
                    id: "q1",
                    prompt: "Which?",
                    options: [
                      { id: "a", label: "A" },
                      { id: "b", label: "B" },
                    ],
                  },
                ],
              },
            },
          },
        },
      },
    });
    await session.next((message) => message.message.case === "interactionResponse");
    session.send({ message: { case: "conversationCheckpointUpdate", value: { turns: [blobId] } } });
    session.send(turnEnded());
    session.end();
  });

  const first = await client.startTurn({ conversationId: "conv", text: "1", modelId: "m" }).done;
  assert.equal(first.error, undefined);
  assert.deepEqual(client.blobs.get(blobId.toString("hex")), blob);
  const firstSession = await server.session();
  const answer = firstSession.received.find(
    (message) => message.message.case === "interactionResponse",
  );
  assert.ok(answer?.message.case === "interactionResponse");
  assert.equal(answer.message.value.id, 9);
  const result = answer.message.value.result;
  assert.ok(result.case === "askQuestionInteractionResponse");
  const success = result.value.result?.result;
  assert.ok(success?.case === "success");
  assert.deepEqual(success.value.answers[0]?.selectedOptionIds, ["a"]);

  const second = client.startTurn({ conversationId: "conv", text: "2", modelId: "m" });
  const secondResult = await second.done;
  assert.equal(secondResult.view.text, "second");
  assert.deepEqual(second.runRequest.conversationState?.turns, [new Uint8Array(blobId)]);
  assert.deepEqual(
    second.runRequest.preFetchedBlobs.map((entry) => [
      Buffer.from(entry.id).toString("hex"),
      entry.value,
    ]),
    [[blobId.toString("hex"), blob]],
  );
});

test("appends at explicit seqnos: out of order and duplicated", async (t) => {
  const { client, server } = await setup(t, async (session) => {
    await session.next((message) => message.message.case === "clientHeartbeat");
    await session.next((message) => message.message.case === "conversationAction");
    session.end();
  });
  const turn = client.startTurn({ conversationId: "c", text: "x", modelId: "m" });
  await turn.waitForSent((sent) => sent.kind === "runRequest");
  const one = turn.reserveSeqno();
  const two = turn.reserveSeqno();
  const cancel = {
    message: {
      case: "conversationAction" as const,
      value: { action: { case: "cancelAction" as const, value: { reason: "r" } } },
    },
  };
  await turn.appendAt(two, cancel);
  await turn.appendAt(one, { message: { case: "clientHeartbeat", value: {} } });
  await turn.appendAt(one, { message: { case: "clientHeartbeat", value: {} } });
  await turn.done;

  const session = await server.session();
  assert.deepEqual(
    session.appends.map((append) => append.seqno),
    [0, 2, 1, 1],
  );
  assert.deepEqual(kinds(session), ["runRequest", "clientHeartbeat", "cancelAction"]);
  assert.equal(session.duplicates, 1);
});

test("a server that never ends the stream fails the turn at its timeout with the messages seen", async (t) => {
  const { client } = await setup(t, async (session) => {
    session.send(text("stuck"));
  });
  const turn = client.startTurn(
    { conversationId: "c", text: "x", modelId: "m" },
    { timeoutMs: 300 },
  );
  const waiting = turn.waitFor(
    (message) => message.message.case === "conversationCheckpointUpdate",
  );
  await assert.rejects(turn.done, (error: unknown) => {
    assert.ok(error instanceof TurnTimeoutError);
    assert.match(error.message, /did not end within 300 ms/);
    assert.match(error.message, /textDelta/);
    return true;
  });
  await assert.rejects(waiting, /did not end within 300 ms/);
});

test("the CLI flavour: no harness, model in model_details only", async (t) => {
  const { client, server } = await setup(t, async (session) => {
    session.end();
  });
  await client.startTurn({ conversationId: "c", text: "x", modelId: "gpt", flavour: "cli" }).done;
  const run = (await server.session()).runRequest;
  assert.equal(run?.harness, undefined);
  assert.equal(run?.requestedModel, undefined);
  assert.equal(run?.modelDetails?.modelId, "gpt");
});

test("client headers go on every call; x-request-id is the turn's request id", async (t) => {
  const { client, server } = await setup(
    t,
    async (session) => {
      session.end();
    },
    { headers: { authorization: "Bearer test-token", "x-cursor-client-type": "ide" } },
  );
  const config = await client.ai.getServerConfig({});
  assert.equal(config.configVersion, "fake");
  const turn = client.startTurn({ conversationId: "c", text: "x", modelId: "m" });
  await turn.done;
  const session = await server.session();
  const append = session.appends[0];
  assert.equal(append?.headers.authorization, "Bearer test-token");
  assert.equal(append?.headers["x-request-id"], turn.requestId);
  assert.equal(append?.headers["content-type"], "application/proto");
  const downlink = session.downlinkHeaders[0];
  assert.equal(downlink?.get("authorization"), "Bearer test-token");
  assert.equal(downlink?.get("x-cursor-client-type"), "ide");
  assert.equal(downlink?.get("x-request-id"), turn.requestId);
  assert.equal(downlink?.get("content-type"), "application/connect+proto");
  assert.deepEqual(turn.runSseContentTypes, ["application/connect+proto"]);
});

test("a RunSSE answered as text/event-stream (binary envelopes) is read all the same", async (t) => {
  const { client } = await setup(
    t,
    async (session) => {
      session.send(text("sse"));
      session.end(new ConnectError("stopped", Code.Canceled));
    },
    {},
    "event-stream",
  );
  const turn = client.startTurn({ conversationId: "c", text: "x", modelId: "m" });
  const result = await turn.done;
  assert.equal(result.view.text, "sse");
  assert.equal(result.error?.code, Code.Canceled);
  assert.deepEqual(turn.runSseContentTypes, ["text/event-stream"]);
});
