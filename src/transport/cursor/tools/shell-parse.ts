/**
 * A small shell-command parser that fills `ShellArgs.simple_commands` and `parsing_result`,
 * which the client uses to decide whether a command needs the user's approval. It understands
 * words, quotes, escapes, the list/pipe operators and redirections; anything beyond that
 * (subshells, here-docs, unbalanced quotes) is reported as `parsing_failed`, which is the
 * cautious answer: the client then treats the command as unknown.
 */
import { create } from "@bufbuild/protobuf";
import {
  type ShellCommandParsingResult,
  ShellCommandParsingResultSchema,
} from "../gen/agent/v1/exec_shell_pb.js";

export interface ParsedCommand {
  readonly simpleCommands: string[];
  readonly parsing: ShellCommandParsingResult;
  readonly hasInputRedirect: boolean;
  readonly hasOutputRedirect: boolean;
}

type Token =
  | { readonly kind: "word"; readonly value: string; readonly quote: "none" | "single" | "double" }
  | { readonly kind: "operator"; readonly value: string }
  | { readonly kind: "redirect"; readonly value: string };

export function parseCommand(command: string): ParsedCommand {
  const tokens = tokenize(command);
  if (tokens === null) return failed();
  const segments: Token[][] = [[]];
  for (const token of tokens) {
    if (token.kind === "operator") segments.push([]);
    else segments.at(-1)?.push(token);
  }
  let hasInputRedirect = false;
  let hasOutputRedirect = false;
  let allDevNull = true;
  const commands = [];
  for (const segment of segments) {
    const words: Extract<Token, { kind: "word" }>[] = [];
    for (let index = 0; index < segment.length; index += 1) {
      const token = segment[index];
      if (token === undefined) continue;
      if (token.kind === "redirect") {
        const target = segment[index + 1];
        if (target?.kind !== "word") return failed();
        if (token.value.includes("<")) hasInputRedirect = true;
        else {
          hasOutputRedirect = true;
          if (target.value !== "/dev/null" && !/^&\d$/.test(target.value)) allDevNull = false;
        }
        index += 1;
      } else if (token.kind === "word") {
        words.push(token);
      }
    }
    const firstCommandWord = words.findIndex(
      (word) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(word.value),
    );
    if (firstCommandWord === -1) continue;
    const [name, ...args] = words.slice(firstCommandWord);
    if (name === undefined) continue;
    commands.push({
      name: name.value,
      args: args.map((arg) => ({
        type: arg.quote === "single" ? "raw_string" : arg.quote === "double" ? "string" : "word",
        value: arg.value,
      })),
      fullText: words.map((word) => word.value).join(" "),
    });
  }
  const hasRedirects = hasInputRedirect || hasOutputRedirect;
  const parsing = create(ShellCommandParsingResultSchema, {
    parsingFailed: false,
    executableCommands: commands,
    hasRedirects,
    hasCommandSubstitution: false,
    ...(hasOutputRedirect ? { allRedirectsAreDevNull: allDevNull } : {}),
  });
  return {
    simpleCommands: commands.map((entry) => entry.name),
    parsing,
    hasInputRedirect,
    hasOutputRedirect,
  };
}

function failed(): ParsedCommand {
  return {
    simpleCommands: [],
    parsing: create(ShellCommandParsingResultSchema, { parsingFailed: true }),
    hasInputRedirect: false,
    hasOutputRedirect: false,
  };
}

const OPERATORS = ["&&", "||", ";;", "|&", ";", "|", "&", "\n"];

/** Splits a command into tokens; null when it uses syntax this parser does not handle. */
function tokenize(command: string): Token[] | null {
  const tokens: Token[] = [];
  let index = 0;
  while (index < command.length) {
    const char = command[index] ?? "";
    if (char === " " || char === "\t" || char === "\r") {
      index += 1;
      continue;
    }
    if (char === "#") {
      while (index < command.length && command[index] !== "\n") index += 1;
      continue;
    }
    const redirect = /^(?:\d?>>|\d?>&|&>>?|\d?>\||\d?>|\d?<<<|\d?<<|\d?<)/.exec(
      command.slice(index),
    );
    if (redirect !== null) {
      if (redirect[0].includes("<<") && !redirect[0].includes("<<<")) return null;
      tokens.push({ kind: "redirect", value: redirect[0] });
      index += redirect[0].length;
      continue;
    }
    const operator = OPERATORS.find((op) => command.startsWith(op, index));
    if (operator !== undefined) {
      tokens.push({ kind: "operator", value: operator });
      index += operator.length;
      continue;
    }
    if (char === "(" || char === ")" || char === "{" || char === "}" || char === "`") return null;
    const word = readWord(command, index);
    if (word === null) return null;
    tokens.push(word.token);
    index = word.end;
  }
  return tokens;
}

function readWord(command: string, start: number): { token: Token; end: number } | null {
  let value = "";
  let quote: "none" | "single" | "double" = "none";
  let index = start;
  while (index < command.length) {
    const char = command[index] ?? "";
    if (" \t\r\n;&|<>()`".includes(char)) break;
    if (char === "$" && command[index + 1] === "(") return null;
    if (char === "\\") {
      value += command[index + 1] ?? "";
      index += 2;
      continue;
    }
    if (char === "'" || char === '"') {
      const close = command.indexOf(char, index + 1);
      if (close === -1) return null;
      const inner = command.slice(index + 1, close);
      if (char === '"' && (inner.includes("$(") || inner.includes("`"))) return null;
      value += inner;
      quote = char === "'" ? "single" : "double";
      index = close + 1;
      continue;
    }
    value += char;
    index += 1;
  }
  return { token: { kind: "word", value, quote }, end: index };
}
