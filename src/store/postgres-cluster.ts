/**
 * Several instances on one PostgreSQL database (docs/team.md "Several instances"): which
 * instance owns each agent stream (by its request id), so a RunSSE or BidiAppend that reaches
 * another instance is forwarded to the owner (transport/cluster.ts).
 *
 * Leases: an instance renews one heartbeat row every `leaseMs / 3`; it owns its streams while
 * the heartbeat is younger than `leaseMs`, both by the database's clock (`clock_timestamp()`). A claim is one statement: it inserts the owner, or
 * takes the stream over when the recorded owner's lease has expired (or was given up), or finds
 * the live owner. Two instances claiming at once serialise on the row: one wins, the other sees
 * the winner. An instance that left at shutdown is expired at once, so its streams are taken
 * over without waiting for the lease. A refused connection is not enough to expire one: an
 * instance advertising a wrong address refuses connections while it is alive and serving, so
 * the forwarder asks `awaitVerdict` instead, which watches the heartbeat (docs/team.md
 * "Takeover").
 *
 * Self-fencing: the others may take this instance's streams over once its heartbeat is `leaseMs`
 * old by the database's clock. The row is stamped when the statement runs, which is after this
 * process sent it, so a lease renewed by a statement sent at local time t lasts at least until
 * t + leaseMs. When no heartbeat has succeeded for `leaseMs - leaseMs / 5` since the last good
 * one was sent (the database unreachable or too slow, one lost heartbeat is tolerated),
 * `onLeaseLost` is called — before the others can take over, with a fifth of the lease to spare
 * — and the caller stops serving (cli/serve.ts exits, as a crash would).
 */
import type pg from "pg";
import { createPool, fromPostgresError, toPostgresLocation } from "./postgres-store.ts";

export type StreamOwner =
  | { readonly type: "mine" }
  | { readonly type: "elsewhere"; readonly instanceID: string; readonly url: string };

export interface ClusterDirectory {
  readonly instanceID: string;
  /** The owner of `requestID`: this instance when it was free, expired, or ours already. */
  claim(requestID: string): Promise<StreamOwner>;
  /**
   * Whether `instanceID`, which could not be reached, is alive: `alive` as soon as its heartbeat
   * is renewed, `expired` once its lease has run out (then `claim` takes its streams over).
   * Takes at most about a lease; a live instance is recognised within one heartbeat interval.
   */
  awaitVerdict(instanceID: string): Promise<"alive" | "expired">;
  /** Starts the heartbeat with the address the other instances forward to. */
  advertise(url: string): Promise<void>;
  /** Gives this instance's streams up (graceful shutdown) and stops the heartbeat. */
  leave(): Promise<void>;
  close(): Promise<void>;
}

export interface ClusterDirectoryOptions {
  readonly url: string;
  readonly instanceID: string;
  /**
   * Where the other instances reach this one, e.g. `http://10.0.0.5:8765`. Absent: given later
   * with `advertise` (once the server listens and knows its port); nothing is claimed before.
   */
  readonly advertiseUrl?: string;
  /** Default 15 s. */
  readonly leaseMs?: number;
  /**
   * Called once when this instance can no longer be sure it holds its lease (self-fencing,
   * above): it must stop serving its streams now, the others may take them over soon.
   */
  readonly onLeaseLost?: () => void;
}

/** Claims older than this are forgotten (a stream lives minutes, not days). */
const FORGET_AFTER_MS = 24 * 60 * 60 * 1000;

/**
 * The database's clock, in ms: every heartbeat, claim and expiry is stamped and compared with
 * this one clock, so instances whose clocks disagree cannot expire (or keep) each other's leases.
 */
const DB_NOW = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

export async function openClusterDirectory(
  options: ClusterDirectoryOptions,
): Promise<ClusterDirectory> {
  const leaseMs = options.leaseMs ?? 15_000;
  const beatMs = Math.max(50, Math.floor(leaseMs / 3));
  // A heartbeat or claim slower than a third of the lease is of no use, and a stalled one must
  // not hold shutdown (`leave`, then `close` waiting for it) past its bound (cli/serve.ts).
  const pool = createPool({
    url: options.url,
    poolSize: 4,
    statementTimeoutMs: Math.max(2_000, Math.floor(leaseMs / 3)),
  });
  const location = toPostgresLocation(options.url);
  const { instanceID } = options;
  const query = async <R extends pg.QueryResultRow>(
    text: string,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> => {
    try {
      return await pool.query<R>(text, values);
    } catch (error) {
      throw fromPostgresError(error, location);
    }
  };

  let advertised: string | undefined;
  /** Self-fencing (above): fires unless a heartbeat succeeds in time; cleared when leaving. */
  const fenceAfterMs = leaseMs - Math.floor(leaseMs / 5);
  let fence: NodeJS.Timeout | undefined;
  let fenced = false;
  let renewedFrom = 0;
  const armFence = (): void => {
    if (options.onLeaseLost === undefined || fenced) return;
    clearTimeout(fence);
    fence = setTimeout(
      () => {
        fenced = true;
        options.onLeaseLost?.();
      },
      Math.max(0, renewedFrom + fenceAfterMs - performance.now()),
    );
    fence.unref();
  };
  const beat = async (): Promise<void> => {
    const sentAt = performance.now();
    await query(
      `insert into instances (instance_id, url, started_at, heartbeat_at) values ($1, $2, ${DB_NOW}, ${DB_NOW}) ` +
        "on conflict (instance_id) do update set heartbeat_at = excluded.heartbeat_at, url = excluded.url",
      [instanceID, advertised],
    );
    if (sentAt > renewedFrom) {
      renewedFrom = sentAt;
      armFence();
    }
  };
  let beats = 0;
  let timer: NodeJS.Timeout | undefined;
  const advertise = async (url: string): Promise<void> => {
    advertised = url;
    await beat();
    clearInterval(timer);
    timer = setInterval(() => {
      beats += 1;
      void beat().catch(() => undefined);
      if (beats % 100 === 0) {
        void query(`delete from stream_owners where claimed_at < ${DB_NOW} - $1`, [
          FORGET_AFTER_MS,
        ]).catch(() => undefined);
      }
    }, beatMs);
    timer.unref();
  };
  if (options.advertiseUrl !== undefined) await advertise(options.advertiseUrl);

  const claim = async (requestID: string): Promise<StreamOwner> => {
    if (advertised === undefined) {
      throw new Error("this instance has not advertised its address yet; it claims no stream");
    }
    const claimed = await query<{ instance_id: string }>(
      `insert into stream_owners as o (request_id, instance_id, claimed_at) values ($1, $2, ${DB_NOW}) ` +
        "on conflict (request_id) do update set instance_id = excluded.instance_id, " +
        "claimed_at = excluded.claimed_at " +
        "where o.instance_id = excluded.instance_id or not exists (" +
        `select 1 from instances i where i.instance_id = o.instance_id and i.heartbeat_at >= ${DB_NOW} - $3) ` +
        "returning instance_id",
      [requestID, instanceID, leaseMs],
    );
    if (claimed.rowCount === 1) return { type: "mine" };
    const owner = await query<{ instance_id: string; url: string }>(
      "select o.instance_id, i.url from stream_owners o join instances i using (instance_id) " +
        "where o.request_id = $1",
      [requestID],
    );
    const row = owner.rows[0];
    // The owner vanished between the two statements (it left): claim again.
    if (row === undefined) return claim(requestID);
    return { type: "elsewhere", instanceID: row.instance_id, url: row.url };
  };

  return {
    instanceID,
    claim,
    advertise,
    async awaitVerdict(other) {
      const read = async () =>
        (
          await query<{ heartbeat_at: string; age: string }>(
            `select heartbeat_at, ${DB_NOW} - heartbeat_at as age from instances where instance_id = $1`,
            [other],
          )
        ).rows[0];
      const first = await read();
      if (first === undefined || Number(first.age) >= leaseMs) return "expired";
      let age = Number(first.age);
      for (;;) {
        // Until the next heartbeat is due (a little after), or the lease runs out.
        const wait = Math.min(leaseMs - age, Math.max(beatMs - age, 0) + beatMs / 4) + 10;
        await new Promise((resolve) => setTimeout(resolve, wait));
        const now = await read();
        if (now === undefined) return "expired";
        if (Number(now.heartbeat_at) > Number(first.heartbeat_at)) return "alive";
        age = Number(now.age);
        if (age >= leaseMs) return "expired";
      }
    },
    async leave() {
      clearInterval(timer);
      clearTimeout(fence);
      await query("update instances set heartbeat_at = 0 where instance_id = $1", [instanceID]);
    },
    async close() {
      clearInterval(timer);
      clearTimeout(fence);
      await pool.end();
    },
  };
}
