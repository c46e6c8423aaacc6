import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { TodoItemSchema, TodoStatus } from "../gen/agent/v1/common_pb.js";
import { resultText, runTool, T0, turnState } from "../testing.ts";

test("todo_write runs on the server: no client request, result at once, list kept in state", () => {
  const run = runTool(
    "todo_write",
    {
      todos: [
        { id: "1", content: "Reproduce the bug", status: "completed" },
        { id: "2", content: "Fix add()", status: "in_progress" },
        { id: "3", content: "Run the tests" },
      ],
    },
    [],
  );
  assert.equal(run.requests.length, 0);
  assert.equal(
    resultText(run.result),
    "Todo list ([ ] pending, [~] in progress, [x] completed, [-] cancelled):\n[x] 1: Reproduce the bug\n[~] 2: Fix add()\n[ ] 3: Run the tests",
  );
  assert.deepEqual(
    run.state.todos.map((todo) => [todo.id, todo.status, todo.createdAt]),
    [
      ["1", TodoStatus.COMPLETED, BigInt(T0 + 1)],
      ["2", TodoStatus.IN_PROGRESS, BigInt(T0 + 1)],
      ["3", TodoStatus.PENDING, BigInt(T0 + 1)],
    ],
  );
  const kinds = run.messages.map((message) =>
    message.message.case === "interactionUpdate"
      ? message.message.value.message.case
      : message.message.case,
  );
  assert.deepEqual(kinds, ["toolCallStarted", "toolCallCompleted", "conversationCheckpointUpdate"]);
});

test("merge updates by id and appends new items; replace drops the old list", () => {
  const existing = [
    create(TodoItemSchema, {
      id: "1",
      content: "A",
      status: TodoStatus.PENDING,
      createdAt: 1n,
      updatedAt: 1n,
    }),
    create(TodoItemSchema, {
      id: "2",
      content: "B",
      status: TodoStatus.PENDING,
      createdAt: 1n,
      updatedAt: 1n,
    }),
  ];
  const merged = runTool(
    "todo_write",
    {
      todos: [
        { id: "2", status: "completed" },
        { id: "3", content: "C" },
      ],
      merge: true,
    },
    [],
    turnState({ todos: existing }),
  );
  assert.deepEqual(
    merged.state.todos.map((todo) => [todo.id, todo.content, todo.status, todo.updatedAt]),
    [
      ["1", "A", TodoStatus.PENDING, 1n],
      ["2", "B", TodoStatus.COMPLETED, BigInt(T0 + 1)],
      ["3", "C", TodoStatus.PENDING, BigInt(T0 + 1)],
    ],
  );
  const replaced = runTool(
    "todo_write",
    { todos: [{ id: "9", content: "Z" }] },
    [],
    turnState({ todos: existing }),
  );
  assert.deepEqual(
    replaced.state.todos.map((todo) => todo.id),
    ["9"],
  );
});

test("duplicate ids and new items without content are errors; the list is unchanged", () => {
  const duplicate = runTool(
    "todo_write",
    {
      todos: [
        { id: "1", content: "a" },
        { id: "1", content: "b" },
      ],
    },
    [],
  );
  assert.equal(duplicate.result.isError, true);
  assert.match(resultText(duplicate.result), /appears more than once/);
  assert.deepEqual(duplicate.state.todos, []);
  const noContent = runTool("todo_write", { todos: [{ id: "1" }] }, []);
  assert.match(resultText(noContent.result), /is new and needs content/);
  const badStatus = runTool(
    "todo_write",
    { todos: [{ id: "1", content: "a", status: "done" }] },
    [],
  );
  assert.match(resultText(badStatus.result), /"todos\[0\].status" must be one of/);
});
