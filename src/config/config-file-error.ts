/**
 * A configuration problem the user must fix, pointing at the place to fix it. The message is
 * `file:line:column: field: problem` (parts are left out when unknown), so terminals and
 * editors can jump to it. Messages never contain a key, token or header value.
 */
export interface ConfigFileErrorInit {
  readonly file: string;
  /** 1-based. */
  readonly line?: number;
  /** 1-based. */
  readonly column?: number;
  /** A path such as `models[2].baseUrl`; absent for problems with the file as a whole. */
  readonly field?: string;
  readonly problem: string;
}

export class ConfigFileError extends Error {
  readonly file: string;
  readonly line: number | undefined;
  readonly column: number | undefined;
  readonly field: string | undefined;
  readonly problem: string;

  constructor(init: ConfigFileErrorInit) {
    super(toConfigErrorText(init));
    this.name = "ConfigFileError";
    this.file = init.file;
    this.line = init.line;
    this.column = init.column;
    this.field = init.field;
    this.problem = init.problem;
  }
}

export function isConfigFileError(error: unknown): error is ConfigFileError {
  return error instanceof ConfigFileError;
}

export function toConfigErrorText(init: ConfigFileErrorInit): string {
  const where =
    init.line === undefined
      ? init.file
      : `${init.file}:${init.line}${init.column === undefined ? "" : `:${init.column}`}`;
  return init.field === undefined
    ? `${where}: ${init.problem}`
    : `${where}: ${init.field}: ${init.problem}`;
}
