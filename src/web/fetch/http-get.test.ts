import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type FakeWebServer, startFakeWebServer } from "../testing/fake-web-server.ts";
import type { AddressPolicy } from "./address-policy.ts";
import { type HttpGetOptions, httpGet } from "./http-get.ts";

/**
 * Every `*.test` name resolves to the loopback server. The policy plays the network: `public.*`
 * hosts are public, `wiki.*` hosts are private but on the allow-list, others are private.
 */
const policy: AddressPolicy = {
  allows: (host) => host.startsWith("wiki."),
  refusal: (host, address, useAllowList = true) =>
    host.startsWith("public.") || (useAllowList && policy.allows(host, address))
      ? null
      : `${host} resolves to ${address}, a private address`,
};

describe("httpGet: the allow-list and redirects", () => {
  let server: FakeWebServer;
  before(async () => {
    server = await startFakeWebServer((request, response) => {
      const to = /^\/to\/([a-z]+)$/.exec(request.url)?.[1];
      if (to !== undefined) {
        response.writeHead(302, { location: `http://${to}.test:${server.port}/page` });
        return response.end();
      }
      const via = /^\/via\/([a-z]+)\/([a-z]+)$/.exec(request.url);
      if (via !== null) {
        const next = `http://${via[1]}.test:${server.port}/to/${via[2]}`;
        response.writeHead(302, { location: next });
        return response.end();
      }
      response.writeHead(200, { "content-type": "text/plain" });
      return response.end(`page of ${request.headers.host}`);
    });
  });
  after(() => server.close());

  const options: HttpGetOptions = {
    policy,
    maxBytes: 1_000_000,
    timeoutMs: 10_000,
    maxRedirects: 5,
    userAgent: "test",
    resolve: async () => [{ address: "127.0.0.1", family: 4 }],
  };
  const get = async (host: string, path: string): Promise<string> => {
    const result = await httpGet(`http://${host}.test:${server.port}${path}`, options);
    return result.type === "error" ? result.message : result.body.toString();
  };

  test("an allowed host is fetched when asked for, and may redirect within the allow-list", async () => {
    assert.equal(await get("wiki", "/page"), `page of wiki.test:${server.port}`);
    assert.equal(await get("wiki", "/to/wiki"), `page of wiki.test:${server.port}`);
    assert.equal(await get("wiki", "/to/public"), `page of public.test:${server.port}`);
  });

  test("a public page cannot redirect into the allow-list", async () => {
    assert.equal(
      await get("public", "/to/wiki"),
      "refused: wiki.test resolves to 127.0.0.1, a private address",
    );
    // Nor back into it after leaving: wiki → public → wiki.
    assert.equal(
      await get("wiki", "/via/public/wiki"),
      "refused: wiki.test resolves to 127.0.0.1, a private address",
    );
  });
});
