/**
 * Ids no user may take by naming them first (docs/team.md "Whose stream, whose conversation"), on
 * a real PostgreSQL, through the team's access check (transport/user-access.ts with the store's
 * bindings): what the admin names first stays the admin's, helper pseudo-conversations are the
 * server's, and a subagent's conversation follows its root.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ConnectError } from "@connectrpc/connect";
import { openPostgresStore } from "../store/postgres-store.ts";
import { openPostgresUsers } from "../store/postgres-users.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import type { AuthenticatedUser, Users } from "../store/users.ts";
import { runAsUser } from "../transport/request-user.ts";
import type { CheckAccess } from "../transport/user-access.ts";
import { createTeam } from "./team-users.ts";

const postgres = await getTestPostgres();

if (postgres.type === "unavailable") {
  test(`team claims: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("team claims: ids named first by the admin or the server", { concurrency: 1 }, () => {
    let drop: () => Promise<void>;
    let users: Users;
    let access: CheckAccess;
    let ann: AuthenticatedUser;
    let bob: AuthenticatedUser;

    before(async () => {
      const schema = await postgres.server.createSchema();
      drop = schema.drop;
      await (await openPostgresStore({ url: schema.url, poolSize: 1 })).close();
      users = openPostgresUsers({ url: schema.url });
      access = createTeam(users).access;
      ann = { userID: (await users.add("ann")).user.userID, name: "ann" };
      bob = { userID: (await users.add("bob")).user.userID, name: "bob" };
    });
    after(async () => {
      await users.close();
      await drop();
    });

    /** Whether `user`'s request may name the target (the admin's: `undefined`). */
    const allowed = async (
      user: AuthenticatedUser | undefined,
      target: Parameters<CheckAccess>[0],
    ): Promise<boolean> => {
      try {
        await (user === undefined ? access(target) : runAsUser(user, () => access(target)));
        return true;
      } catch (error) {
        assert.ok(error instanceof ConnectError, String(error));
        assert.match(error.message, /belongs to another user/);
        return false;
      }
    };

    test("a stream or conversation the admin named first is no user's to take (L5)", async () => {
      assert.ok(await allowed(undefined, { requestID: "admin-stream" }));
      assert.ok(await allowed(undefined, { conversationID: "admin-conversation" }));
      assert.equal(await allowed(ann, { requestID: "admin-stream" }), false);
      assert.equal(await allowed(ann, { conversationID: "admin-conversation" }), false);
      assert.equal(
        await allowed(ann, { conversationID: "admin-conversation~task~0123456789abcdef01234567" }),
        false,
        "nor its subagents' conversations",
      );
      assert.equal(await users.ownerOf("admin-conversation"), null, "its calls are no user's");
      // The admin keeps access to everything, and naming a user's ids takes nothing from them.
      assert.ok(
        await allowed(ann, { requestID: "ann-stream", conversationID: "ann-conversation" }),
      );
      assert.ok(await allowed(undefined, { requestID: "ann-stream" }));
      assert.ok(await allowed(undefined, { conversationID: "ann-conversation" }));
      const child = "ann-conversation~task~0123456789abcdef01234567";
      assert.ok(await allowed(undefined, { conversationID: child }));
      assert.ok(await allowed(ann, { requestID: "ann-stream", conversationID: child }));
      assert.equal(await allowed(bob, { conversationID: child }), false);
    });

    test("helper pseudo-conversations are the server's: no user's request may name one (L5)", async () => {
      for (const id of ["cursor-byok-helper-title", "cursor-byok-helper-commit-message~task~abc"]) {
        assert.equal(await allowed(ann, { conversationID: id }), false, id);
      }
      assert.equal(await users.ownerOf("cursor-byok-helper-title"), null, "and none was bound");
    });
  });
}
