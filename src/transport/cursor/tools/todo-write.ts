/**
 * todo_write: the todo list the server keeps itself (no client round trip). The list lives in
 * the turn state and in the checkpoint's `todos`, so it survives across turns.
 */
import { create } from "@bufbuild/protobuf";
import { type TodoItem, TodoItemSchema, TodoStatus } from "../gen/agent/v1/common_pb.js";
import {
  UpdateTodosArgsSchema,
  type UpdateTodosResult,
  UpdateTodosResultSchema,
  UpdateTodosToolCallSchema,
} from "../gen/agent/v1/tool_call_pb.js";
import { parseArgs } from "./args.ts";
import { toOutput } from "./output.ts";
import type { ToolEnv, ToolHandler, ToolOutput } from "./types.ts";

const STATUSES = ["pending", "in_progress", "completed", "cancelled"] as const;
type Status = (typeof STATUSES)[number];

export interface TodoEntry {
  readonly id: string;
  readonly content: string | undefined;
  readonly status: Status | undefined;
}

export interface TodoWriteArgs {
  readonly todos: readonly TodoEntry[];
  readonly merge: boolean;
}

const TO_WIRE: Record<Status, TodoStatus> = {
  pending: TodoStatus.PENDING,
  in_progress: TodoStatus.IN_PROGRESS,
  completed: TodoStatus.COMPLETED,
  cancelled: TodoStatus.CANCELLED,
};

export const todoWrite: ToolHandler<TodoWriteArgs, null> = {
  name: "todo_write",
  definition: {
    name: "todo_write",
    description:
      'Create or update your todo list for work with several steps; the user sees it as you go. With merge false (the default) the list you send replaces the old one; with merge true, items are updated by id and new ids are added at the end. Keep exactly one item in_progress, mark an item completed as soon as it is done, and cancelled when it no longer applies. Skip it for tasks of one or two steps. Returns the whole list. Example: {"todos": [{"id": "1", "content": "Add the port option", "status": "in_progress"}, {"id": "2", "content": "Update the tests", "status": "pending"}]}.',
    parameters: {
      type: "object",
      properties: {
        todos: {
          type: "array",
          items: {
            type: "object",
            properties: {
              id: { type: "string", description: 'A stable id of the item, e.g. "1".' },
              content: {
                type: "string",
                description: "What to do, as a short imperative (required for new items).",
              },
              status: { type: "string", enum: [...STATUSES] },
            },
            required: ["id"],
          },
        },
        merge: {
          type: "boolean",
          description: "true: update the items by id and keep the others; false: replace the list.",
        },
      },
      required: ["todos"],
    },
  },
  modes: ["agent", "debug"],
  parse: (args) =>
    parseArgs(args, (read) => ({
      todos: read.objectArray(
        "todos",
        (item) => ({
          id: item.string("id"),
          content: item.optionalString("content"),
          status: item.optionalEnum("status", STATUSES),
        }),
        true,
      ),
      merge: read.optionalBoolean("merge") ?? false,
    })),
  preview: () => ({ case: "updateTodosToolCall", value: create(UpdateTodosToolCallSchema) }),
  started: (args, env) => ({
    case: "updateTodosToolCall",
    value: create(UpdateTodosToolCallSchema, { args: toUiArgs(args, env) }),
  }),
  start: (args, env) => ({ type: "done", output: applyTodos(args, env) }),
  resume: (args, _stage, _data, _reply, env) => ({ type: "done", output: applyTodos(args, env) }),
  failed: (_args, error) =>
    toOutput(
      error,
      { case: "updateTodosToolCall", value: create(UpdateTodosToolCallSchema) },
      { isError: true },
    ),
};

function toUiArgs(args: TodoWriteArgs, env: ToolEnv) {
  const at = BigInt(env.at);
  return create(UpdateTodosArgsSchema, {
    merge: args.merge,
    todos: args.todos.map((todo) =>
      create(TodoItemSchema, {
        id: todo.id,
        content: todo.content ?? "",
        status: TO_WIRE[todo.status ?? "pending"],
        createdAt: at,
        updatedAt: at,
      }),
    ),
  });
}

/** The new list, or an error when the arguments do not describe one. */
export function applyTodos(args: TodoWriteArgs, env: ToolEnv): ToolOutput {
  const ids = args.todos.map((todo) => todo.id);
  const duplicate = ids.find((id, index) => ids.indexOf(id) !== index);
  const ui = (result: UpdateTodosResult) => ({
    case: "updateTodosToolCall" as const,
    value: create(UpdateTodosToolCallSchema, { args: toUiArgs(args, env), result }),
  });
  const fail = (message: string) =>
    toOutput(
      message,
      ui(create(UpdateTodosResultSchema, { result: { case: "error", value: { error: message } } })),
      {
        isError: true,
      },
    );
  if (duplicate !== undefined) return fail(`Todo id "${duplicate}" appears more than once.`);
  const at = BigInt(env.at);
  const existing = args.merge ? env.todos : [];
  const next: TodoItem[] = existing.map((todo) => create(TodoItemSchema, todo));
  for (const entry of args.todos) {
    const index = next.findIndex((todo) => todo.id === entry.id);
    const current = index === -1 ? undefined : next[index];
    if (current === undefined) {
      if (entry.content === undefined || entry.content.trim() === "") {
        return fail(`Todo "${entry.id}" is new and needs content.`);
      }
      next.push(
        create(TodoItemSchema, {
          id: entry.id,
          content: entry.content,
          status: TO_WIRE[entry.status ?? "pending"],
          createdAt: at,
          updatedAt: at,
        }),
      );
      continue;
    }
    const content = entry.content ?? current.content;
    const status = entry.status === undefined ? current.status : TO_WIRE[entry.status];
    const changed = content !== current.content || status !== current.status;
    next[index] = create(TodoItemSchema, {
      ...current,
      content,
      status,
      updatedAt: changed ? at : current.updatedAt,
    });
  }
  const result = create(UpdateTodosResultSchema, {
    result: {
      case: "success",
      value: { todos: next, totalCount: next.length, wasMerge: args.merge },
    },
  });
  return toOutput(renderTodos(next), ui(result), { todos: next });
}

const MARK: Record<number, string> = {
  [TodoStatus.PENDING]: "[ ]",
  [TodoStatus.IN_PROGRESS]: "[~]",
  [TodoStatus.COMPLETED]: "[x]",
  [TodoStatus.CANCELLED]: "[-]",
};

export function renderTodos(todos: readonly TodoItem[]): string {
  if (todos.length === 0) return "The todo list is empty.";
  const lines = todos.map((todo) => `${MARK[todo.status] ?? "[ ]"} ${todo.id}: ${todo.content}`);
  return `Todo list ([ ] pending, [~] in progress, [x] completed, [-] cancelled):\n${lines.join("\n")}`;
}
