/** A command line that cannot be run as given (unknown flag, bad value): exit code 2 and a pointer to `--help`. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}
