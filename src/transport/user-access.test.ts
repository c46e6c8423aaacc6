/**
 * The read check a fork asks before copying another conversation (user-access.ts
 * `createReadCheck`): who the request acts for comes from its async context (request-user.ts).
 * The HTTP path with real users and PostgreSQL is src/cli/team-isolation.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { AuthenticatedUser } from "../store/index.ts";
import { runAsAdmin, runAsUser } from "./request-user.ts";
import { createReadCheck } from "./user-access.ts";

const owners = new Map([
  ["ann-chat", "ann"],
  ["bob-chat", "bob"],
]);
const mayCopy = createReadCheck({
  ownerOf: (conversationID) => Promise.resolve(owners.get(conversationID) ?? null),
});
const ann: AuthenticatedUser = { userID: "ann", name: "Ann" };

test("a user sees only their own conversations (and their branches); the admin sees all", async () => {
  assert.deepEqual(
    await runAsUser(ann, () =>
      Promise.all(["ann-chat", "ann-chat~edit~r2", "bob-chat", "nobody"].map(mayCopy)),
    ),
    [true, true, false, false],
  );
  assert.deepEqual(
    await runAsAdmin(() => Promise.all(["ann-chat", "bob-chat", "nobody"].map(mayCopy))),
    [true, true, true],
  );
});

test("outside any request's context nothing is visible: no user is not the admin (review-fork #6)", async () => {
  assert.deepEqual(await Promise.all(["ann-chat", "bob-chat"].map(mayCopy)), [false, false]);
});
