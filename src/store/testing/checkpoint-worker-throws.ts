/**
 * A stand-in for the WAL checkpoint worker (wal-checkpoint-worker.ts) that throws at once, as a
 * worker that cannot load or open the file: for the tests of the store's fallback.
 */
throw new Error("this checkpoint worker cannot start");
