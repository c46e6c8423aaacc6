/**
 * The page's address, parsed: `#/conversations?search=&cursor=`, `#/c/<encoded id>`, `#/usage`,
 * `#/setup`. Any hash parses: one whose id is not valid percent-encoding (`#/c/%E0`) is the
 * `invalid` page, so the router never throws on an address someone typed or pasted.
 */

/**
 * @param {string} hash `location.hash`
 * @returns {{page: "conversation", id: string} | {page: "usage" | "setup" | "invalid"} | {page: "conversations", params: URLSearchParams}}
 */
export function parseRoute(hash) {
  const path = hash.replace(/^#/, "") || "/conversations";
  const [, page = "", ...rest] = path.split("/");
  if (page === "c" && rest.length > 0) {
    try {
      return { page: "conversation", id: decodeURIComponent(rest.join("/")) };
    } catch {
      return { page: "invalid" };
    }
  }
  if (page === "usage" || page === "setup") return { page };
  return { page: "conversations", params: new URLSearchParams(path.split("?")[1] ?? "") };
}
