import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
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

/** `ss` (iproute2) shows a listening socket's accept queue limit as its Send-Q. */
function readListenBacklog(port: number): number | undefined {
  try {
    const out = execFileSync("ss", ["-ltnH", `sport = :${port}`], { encoding: "utf8" });
    const columns = out.trim().split(/\s+/);
    return Number(columns[2]);
  } catch {
    return undefined;
  }
}

const hasSs = readListenBacklog(1) !== undefined;

test(hasSs
  ? "listen() queues a burst of connections beyond Node's default 511 (up to the kernel's cap)"
  : "listen() backlog — skipped: `ss` (iproute2) is not installed to read it", {
  skip: !hasSs,
}, async () => {
  const listener = await listen(() => {}, "127.0.0.1", 0);
  try {
    const backlog = readListenBacklog(listener.address.port);
    const cap = Number(
      execFileSync("cat", ["/proc/sys/net/core/somaxconn"], { encoding: "utf8" }).trim(),
    );
    assert.equal(backlog, Math.min(4096, cap));
    assert.ok(cap <= 511 || (backlog ?? 0) > 511);
  } finally {
    await listener.close();
  }
});

describe("listen() bounds what a silent or slow client can hold", () => {
  const limits = {
    firstBytesTimeoutMs: 150,
    headersTimeoutMs: 300,
    requestTimeoutMs: 600,
    settingsTimeoutMs: 150,
    maxConnections: 3,
  };
  let listener: Listener;
  before(async () => {
    listener = await listen(
      (_request, response) => {
        response.end("ok");
      },
      "127.0.0.1",
      0,
      limits,
    );
  });
  after(async () => {
    listener.destroy();
    await listener.close();
  });

  /** Connects, writes `bytes` (if any), and resolves with how long until the server closed it. */
  function heldFor(bytes: string | Buffer | null): Promise<number> {
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const socket = net.connect(listener.address.port, "127.0.0.1", () => {
        if (bytes !== null) socket.write(bytes);
      });
      socket.on("data", () => {});
      socket.on("error", () => {});
      socket.on("close", () => resolve(performance.now() - started));
      // The test's own bound: a server that never closes fails here, not by hanging.
      setTimeout(() => reject(new Error("the server kept the connection")), 5_000).unref();
    });
  }

  test("a connection that sends nothing is closed", async () => {
    const held = await heldFor(null);
    assert.ok(held >= limits.firstBytesTimeoutMs - 20, `closed after ${held} ms`);
  });

  test("half an HTTP/2 preface is closed", async () => {
    await heldFor("PRI * HTTP/2.0\r\n");
  });

  test("an HTTP/2 preface without SETTINGS is closed", async () => {
    await heldFor("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  });

  test("headers that never end (slowloris) are closed", async () => {
    await heldFor("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  });

  test("connections beyond the maximum are closed at once", async () => {
    const open = Array.from(
      { length: limits.maxConnections },
      () =>
        new Promise<net.Socket>((resolve) => {
          // Each sends a request line, so only the header time-out applies to it.
          const socket = net.connect(listener.address.port, "127.0.0.1", () => {
            socket.write("GET / HTTP/1.1\r\nHost: x\r\n");
            resolve(socket);
          });
          socket.on("error", () => {});
        }),
    );
    const sockets = await Promise.all(open);
    try {
      const extra = await heldFor("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      assert.ok(extra < limits.headersTimeoutMs, `the extra connection was held ${extra} ms`);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });
});
