export type { StoreOptions } from "./create-store.ts";
export type * from "./dashboard-types.ts";
export { type DatabaseLock, lockDatabase } from "./data-lock.ts";
export {
  DATABASE_DIRECTORY,
  DATABASE_FILE,
  type DataDirectoryInputs,
  platformPath,
  toDefaultDatabasePath,
  toUserDirectory,
} from "./default-path.ts";
export { isStoreError, STORE_ERROR_CODES, StoreError, type StoreErrorCode } from "./errors.ts";
export { createMemoryStore } from "./memory-store.ts";
export {
  type ClusterDirectory,
  type ClusterDirectoryOptions,
  openClusterDirectory,
  type StreamOwner,
} from "./postgres-cluster.ts";
export { POSTGRES_SCHEMA_VERSION } from "./postgres-schema.ts";
export {
  migratePostgresDatabase,
  openPostgresStore,
  type PostgresStoreOptions,
  toPostgresLocation,
} from "./postgres-store.ts";
export { openPostgresUsers } from "./postgres-users.ts";
export {
  createOperationRunner,
  type OperationAttempt,
  type OperationRunner,
  type OperationToRun,
  type RunOperation,
} from "./run-once.ts";
export { SCHEMA_VERSION } from "./schema.ts";
export { type CompactResult, compactSqliteDatabase } from "./sqlite-compact.ts";
export { openSqliteStore, type SqliteStoreOptions } from "./sqlite-store.ts";
export { TURN_BLOBS_PER_REQUEST } from "./turn-blobs.ts";
export type * from "./types.ts";
export type * from "./users.ts";
