/**
 * What the dashboard's set-up page shows (docs/dashboard.md): the configured models without
 * their keys or headers (and base URLs without the query or user info that may carry a key), and the doctor's local checks that need no network and no port (the
 * server already holds it). Read each time the page asks, so a key variable set since start-up
 * is not reported missing; the configuration itself is the one the server started with.
 */
import type { Config } from "../config/index.ts";
import type { ReadSetup, SetupInfo } from "../transport/dashboard/types.ts";
import { checkAccess, checkConfigLoaded, checkKeys } from "./doctor-checks.ts";
import { toDisplayUrl } from "./format.ts";

export function toReadSetup(
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
  ide: string,
): ReadSetup {
  return async (): Promise<SetupInfo> => ({
    models: config.models.map(({ config: model }) => ({
      name: model.name,
      provider: model.provider,
      api: model.api,
      upstreamId: model.upstreamId,
      baseUrl: toDisplayUrl(model.baseUrl),
      contextWindow: model.contextWindow,
      maxOutput: model.maxOutput,
    })),
    checks: [checkConfigLoaded(config), ...checkKeys(config, env), checkAccess(config)],
    ide,
    database: config.databasePath,
  });
}
