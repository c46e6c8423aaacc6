/**
 * `cursor-byok users add|list|revoke|budget|keys`: the team's users in the PostgreSQL store
 * (docs/team.md). `add` prints the new token once; only its hash is kept. `keys` records the
 * *name* of the environment variable holding a user's own provider key, never the key. Changes
 * take effect on every running instance at the next request (tokens) or the next model call
 * (budgets, keys).
 */
import { toDefaultConfigPath } from "../config/index.ts";
import {
  type Budget,
  toUserKeyVariableProblem,
  USER_KEY_PREFIX,
  type UserListing,
  type Users,
  type UserUsage,
} from "../store/users.ts";
import { CONFIG_OPTION, HELP_OPTION, parseFlags, toStringFlag } from "./args.ts";
import type { Command } from "./command.ts";
import { toTable } from "./format.ts";
import type { CliIO } from "./io.ts";
import { loadSettings } from "./settings.ts";
import { openTeamUsers, toServerVariables } from "./team-users.ts";
import { UsageError } from "./usage-error.ts";

const OPTIONS = {
  ...HELP_OPTION,
  ...CONFIG_OPTION,
  json: { type: "boolean" },
  period: { type: "string" },
  tokens: { type: "string" },
  cost: { type: "string" },
  none: { type: "boolean" },
  provider: { type: "string" },
  env: { type: "string" },
} as const;

export const USERS_COMMAND: Command = {
  name: "users",
  summary: "the team's users: add (prints a token), list, revoke, budget, keys (PostgreSQL store)",
  help: (io) =>
    [
      "Usage: cursor-byok users add <name>",
      "       cursor-byok users list [--json]",
      "       cursor-byok users revoke <name>",
      "       cursor-byok users budget <name> --period day|month [--tokens <n>] [--cost <usd>] [--none]",
      "       cursor-byok users keys <name> --provider <id> (--env <VARIABLE> | --none)",
      "",
      "The team's users, kept in the PostgreSQL store (data.postgres.url or DATABASE_URL); the",
      "server accepts their tokens when server.users is true.",
      "",
      "  add      creates a user and prints their access token once (only its hash is kept)",
      "  list     users, their own keys (set or not here), budgets, and usage today and this",
      "           month (UTC): used, and reserved by calls in progress",
      "  revoke   refuses the user's token from the next request on, on every instance",
      "  budget   limits tokens (input, output and cache) and/or cost per UTC day or month;",
      "           checked before each model call; --none removes the period's budget",
      "  keys     the user's own key for a provider's models (--provider as the models name it:",
      "           openai, anthropic, …): only the NAME of an environment variable is stored, which",
      `           starts with ${USER_KEY_PREFIX}; each server instance reads the key from it at call`,
      "           time. --none: the team's key again",
      "",
      "Options:",
      `  --config <file>    the configuration file (default ${toDefaultConfigPath(io)},`,
      "                     or CURSOR_BYOK_CONFIG)",
      "  -h, --help         show this help",
      "",
    ].join("\n"),
  async run(args, io) {
    const { values, positionals } = parseFlags(args, OPTIONS, true);
    const [action, name, ...extra] = positionals;
    if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
    const needName = (): string => {
      if (name === undefined) throw new UsageError(`users ${action} needs a user name`);
      return name;
    };
    if (!["add", "list", "revoke", "budget", "keys"].includes(action ?? "")) {
      throw new UsageError("users needs one of: add, list, revoke, budget, keys");
    }
    const budget = action === "budget" ? toBudget(values) : undefined;
    const key = action === "keys" ? toKey(values) : undefined;
    const config = loadSettings(toStringFlag(values, "config"), {}, io);
    if (config.postgres === undefined) {
      io.stderr.write(
        "cursor-byok: users are kept in the PostgreSQL store: set data.postgres.url (or " +
          "DATABASE_URL) first (docs/team.md).\n",
      );
      return 1;
    }
    const users = openTeamUsers(config);
    try {
      switch (action) {
        case "add": {
          const { token } = await users.add(needName());
          io.stdout.write(
            `Added ${name}. Their access token (shown only now; keep it secret):\n${token}\n` +
              "They send it as `authorization: Bearer <token>` (cursor-agent: see docs/team.md).\n",
          );
          return 0;
        }
        case "list":
          return await list(users, values.json === true, io, {
            providers: config.models.map((model) => model.config.provider),
            serverVariables: toServerVariables(config),
          });
        case "keys": {
          const { provider, env } = key as { provider: string; env: string | null };
          // A key for a provider no model has would never be used: the user's calls would run
          // on the team's keys, unnoticed.
          const providers = [...new Set(config.models.map((model) => model.config.provider))];
          if (env !== null && !providers.includes(provider)) {
            io.stderr.write(
              `cursor-byok: no configured model has the provider id ${provider}` +
                (providers.length === 0
                  ? " (this configuration has no models: run `users keys` where the server's configuration is)"
                  : ` (the models' provider ids: ${providers.join(", ")})`) +
                "; nothing was changed.\n",
            );
            return 1;
          }
          const used = toServerVariables(config);
          if (env !== null && used.includes(env)) {
            io.stderr.write(
              `cursor-byok: ${env} is one of the server's own variables (a model's apiKeyEnv or the ` +
                "admin token's); nothing was changed.\n",
            );
            return 1;
          }
          if (!(await users.setKey(needName(), provider, env))) {
            io.stderr.write(`cursor-byok: no user named ${name}.\n`);
            return 1;
          }
          io.stdout.write(
            env === null
              ? `${name}: the team's ${provider} key from now on.\n`
              : `${name}: their own ${provider} key, read by each server instance from $${env} at ` +
                  `call time${io.env[env] === undefined ? " (not set in this shell)" : ""}; set it ` +
                  "in every instance's environment.\n",
          );
          return 0;
        }
        case "revoke": {
          if (!(await users.revoke(needName(), Date.now()))) {
            io.stderr.write(`cursor-byok: no active user named ${name}.\n`);
            return 1;
          }
          io.stdout.write(`Revoked ${name}: their token is refused from now on.\n`);
          return 0;
        }
        default: {
          if (!(await users.setBudget(needName(), budget as Budget))) {
            io.stderr.write(`cursor-byok: no user named ${name}.\n`);
            return 1;
          }
          io.stdout.write(`${name}: ${toBudgetText(budget as Budget)}.\n`);
          return 0;
        }
      }
    } finally {
      await users.close();
    }
  },
};

function toBudget(values: Record<string, unknown>): Budget {
  const period = values.period;
  if (period !== "day" && period !== "month") {
    throw new UsageError("users budget needs --period day or --period month");
  }
  const number = (flag: "tokens" | "cost", integer: boolean): number | null => {
    const value = values[flag];
    if (value === undefined) return null;
    const parsed = Number(value);
    if (
      typeof value !== "string" ||
      value.trim() === "" ||
      !Number.isFinite(parsed) ||
      parsed < 0 ||
      (integer && !Number.isSafeInteger(parsed))
    ) {
      throw new UsageError(
        `--${flag} must be a non-negative ${integer ? "whole number" : "number (USD)"}`,
      );
    }
    return parsed;
  };
  const maxTokens = number("tokens", true);
  const maxCost = number("cost", false);
  if (values.none === true) {
    if (maxTokens !== null || maxCost !== null) {
      throw new UsageError("--none removes the budget: give it without --tokens or --cost");
    }
    return { period, maxTokens: null, maxCost: null };
  }
  if (maxTokens === null && maxCost === null) {
    throw new UsageError("users budget needs --tokens, --cost, or --none");
  }
  return { period, maxTokens, maxCost };
}

function toKey(values: Record<string, unknown>): { provider: string; env: string | null } {
  const provider = values.provider;
  if (typeof provider !== "string" || provider === "") {
    throw new UsageError("users keys needs --provider <id> (as the models name it: openai, …)");
  }
  const env = values.env;
  if (values.none === true) {
    if (env !== undefined) throw new UsageError("--none removes the key: give it without --env");
    return { provider, env: null };
  }
  if (typeof env !== "string" || env === "") {
    throw new UsageError(
      "users keys needs --env <VARIABLE> (the name of the variable holding the key) or --none",
    );
  }
  if (env.length > 128 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(env)) {
    throw new UsageError(
      "--env takes the NAME of an environment variable (letters, digits, _), never the key itself",
    );
  }
  if (!env.startsWith(USER_KEY_PREFIX) || env === USER_KEY_PREFIX) {
    throw new UsageError(
      `--env must name a variable starting with ${USER_KEY_PREFIX} (e.g. ${USER_KEY_PREFIX}ANN_OPENAI): ` +
        "a user's key variable may never be one of the server's own secrets",
    );
  }
  return { provider, env };
}

function toBudgetText(budget: Budget): string {
  const per = budget.period === "day" ? "per UTC day" : "per UTC month";
  if (budget.maxTokens === null && budget.maxCost === null) return `no budget ${per}`;
  const parts = [
    ...(budget.maxTokens === null ? [] : [`${budget.maxTokens.toLocaleString("en-US")} tokens`]),
    ...(budget.maxCost === null ? [] : [`$${budget.maxCost.toFixed(2)}`]),
  ];
  return `at most ${parts.join(" and ")} ${per}`;
}

/** What the configuration here says about users' keys (for `list`'s warnings). */
interface KeyContext {
  readonly providers: readonly string[];
  readonly serverVariables: readonly string[];
}

/** Why a recorded key will not be used as recorded, or null. */
function toKeyWarning(key: { provider: string; env: string }, context: KeyContext) {
  if (context.serverVariables.includes(key.env) || toUserKeyVariableProblem(key.env) !== null) {
    return "not a user key variable: their calls are refused";
  }
  if (context.providers.length > 0 && !context.providers.includes(key.provider)) {
    return "no configured model has this provider: unused";
  }
  return null;
}

async function list(users: Users, json: boolean, io: CliIO, context: KeyContext): Promise<number> {
  const listed: UserListing[] = await users.list(Date.now());
  if (json) {
    io.stdout.write(`${JSON.stringify(listed, null, 2)}\n`);
    return 0;
  }
  if (listed.length === 0) {
    io.stdout.write("No users yet: add one with `cursor-byok users add <name>`.\n");
    return 0;
  }
  const usage = (figures: UserUsage) =>
    `${figures.tokens.toLocaleString("en-US")} tok, $${figures.cost.toFixed(2)}` +
    (figures.reservedTokens > 0 || figures.reservedCost > 0
      ? ` (+${figures.reservedTokens.toLocaleString("en-US")} tok, $${figures.reservedCost.toFixed(2)} reserved)`
      : "");
  // Whether each variable is set is known for this shell only; each instance reads its own.
  const keyText = (key: UserListing["keys"][number]) => {
    const here = (io.env[key.env] ?? "").trim() === "" ? "unset" : "set";
    const warning = toKeyWarning(key, context);
    return `${key.provider}: $${key.env} (${here} here${warning === null ? "" : `; ${warning}`})`;
  };
  const keys = (user: UserListing) =>
    user.keys.length === 0 ? "team's" : user.keys.map(keyText).join("; ");
  const rows = [
    ["user", "status", "keys", "today", "this month", "budgets"],
    ...listed.map((user) => [
      user.name,
      user.revokedAt === null ? "active" : "revoked",
      keys(user),
      usage(user.today),
      usage(user.month),
      user.budgets.length === 0 ? "none" : user.budgets.map(toBudgetText).join("; "),
    ]),
  ];
  io.stdout.write(`${toTable(rows).join("\n")}\n`);
  return 0;
}
