import assert from "node:assert/strict";
import { test } from "node:test";
import { isLoopbackHost, toBindRefusal, toConnectHost } from "./access.ts";

test("loopback hosts", () => {
  for (const host of [
    "localhost",
    "LOCALHOST",
    "127.0.0.1",
    "127.1.2.3",
    "::1",
    "[::1]",
    "::ffff:127.0.0.1",
  ]) {
    assert.equal(isLoopbackHost(host), true, host);
  }
  for (const host of [
    "0.0.0.0",
    "::",
    "192.168.1.10",
    "10.0.0.1",
    "::ffff:10.0.0.1",
    "example.com",
    "my-laptop",
    "",
  ]) {
    assert.equal(isLoopbackHost(host), false, host);
  }
});

test("a non-loopback address without an access token is refused, with the way out", () => {
  assert.equal(toBindRefusal("127.0.0.1", false, "/c.yaml"), undefined);
  assert.equal(toBindRefusal("0.0.0.0", true, "/c.yaml"), undefined);
  assert.equal(
    toBindRefusal("0.0.0.0", false, "/c.yaml"),
    [
      "refusing to listen on 0.0.0.0 without an access token: anyone who can reach this address",
      "could run the agent on your provider keys.",
      "Either listen on loopback (server.host: 127.0.0.1 in /c.yaml, or --host 127.0.0.1),",
      "or set server.accessTokenEnv to the name of an environment variable holding a long random",
      "token; clients must then send `authorization: Bearer <token>`.",
    ].join("\n"),
  );
});

test("clients reach a wildcard address on loopback", () => {
  assert.equal(toConnectHost("0.0.0.0"), "127.0.0.1");
  assert.equal(toConnectHost("::"), "[::1]");
  assert.equal(toConnectHost("::1"), "[::1]");
  assert.equal(toConnectHost("192.168.1.10"), "192.168.1.10");
  assert.equal(toConnectHost("localhost"), "localhost");
});
