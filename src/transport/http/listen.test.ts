import assert from "node:assert/strict";
import http from "node:http";
import http2 from "node:http2";
import { after, before, describe, test } from "node:test";
import { type Listener, listen } from "./listen.ts";

describe("listen()", () => {
  let listener: Listener;
  before(async () => {
    listener = await listen(
      (request, response) => {
        response.setHeader("content-type", "text/plain");
        response.end(`${request.httpVersion} ${request.method} ${request.url}`);
      },
      "127.0.0.1",
      0,
    );
  });
  after(async () => {
    listener.destroy();
    await listener.close();
  });

  test("should serve HTTP/1.1", async () => {
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get(
          { host: "127.0.0.1", port: listener.address.port, path: "/x", agent: false },
          (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (c) => {
              text += c;
            });
            res.on("end", () => resolve(text));
          },
        )
        .on("error", reject);
    });
    assert.equal(body, "1.1 GET /x");
  });

  test("should serve cleartext HTTP/2 with prior knowledge on the same port", async () => {
    const session = http2.connect(`http://127.0.0.1:${listener.address.port}`);
    try {
      const body = await new Promise<string>((resolve, reject) => {
        const stream = session.request({ ":path": "/y", ":method": "POST" });
        let text = "";
        stream.setEncoding("utf8");
        stream.on("data", (c) => {
          text += c;
        });
        stream.on("end", () => resolve(text));
        stream.on("error", reject);
        stream.end();
      });
      assert.equal(body, "2.0 POST /y");
    } finally {
      session.close();
    }
  });
});
