/** Types of route.js for its test. */
export type Route =
  | { page: "conversation"; id: string }
  | { page: "usage" | "setup" | "invalid" }
  | { page: "conversations"; params: URLSearchParams };
export function parseRoute(hash: string): Route;
