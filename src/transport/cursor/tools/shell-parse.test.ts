import assert from "node:assert/strict";
import { test } from "node:test";
import { parseCommand } from "./shell-parse.ts";

test("simple commands of a list and a pipeline", () => {
  const parsed = parseCommand("cd src && npm test -- --watch=false | tee out.log; echo done");
  assert.deepEqual(parsed.simpleCommands, ["cd", "npm", "tee", "echo"]);
  assert.equal(parsed.parsing.parsingFailed, false);
  assert.deepEqual(
    parsed.parsing.executableCommands.map((command) => command.fullText),
    ["cd src", "npm test -- --watch=false", "tee out.log", "echo done"],
  );
});

test("quotes and escapes form single words with their quote kind", () => {
  const parsed = parseCommand(`git commit -m "fix: a b" --author='Dev <d@x>' a\\ b`);
  const args = parsed.parsing.executableCommands[0]?.args ?? [];
  assert.deepEqual(
    args.map((arg) => [arg.type, arg.value]),
    [
      ["word", "commit"],
      ["word", "-m"],
      ["string", "fix: a b"],
      ["raw_string", "--author=Dev <d@x>"],
      ["word", "a b"],
    ],
  );
});

test("environment assignments before the command are not the command", () => {
  assert.deepEqual(parseCommand("NODE_ENV=test FOO=1 node app.js").simpleCommands, ["node"]);
});

test("redirections are recognised", () => {
  const out = parseCommand("ls > files.txt 2>&1");
  assert.equal(out.hasOutputRedirect, true);
  assert.equal(out.parsing.hasRedirects, true);
  assert.equal(out.parsing.allRedirectsAreDevNull, false);
  assert.deepEqual(out.simpleCommands, ["ls"]);
  const quiet = parseCommand("make 2>/dev/null");
  assert.equal(quiet.parsing.allRedirectsAreDevNull, true);
  assert.equal(parseCommand("wc -l < input.txt").hasInputRedirect, true);
});

test("syntax the parser does not handle is reported as a parse failure", () => {
  for (const command of [
    "echo $(whoami)",
    "echo `id`",
    "(cd x && ls)",
    "cat <<EOF\nx\nEOF",
    "echo 'open",
    "{ ls; }",
  ]) {
    const parsed = parseCommand(command);
    assert.equal(parsed.parsing.parsingFailed, true, command);
    assert.deepEqual(parsed.simpleCommands, []);
  }
});
