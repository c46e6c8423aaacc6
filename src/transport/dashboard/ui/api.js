/**
 * The page's access to the dashboard API (docs/dashboard.md). The access token, when the server
 * has one, is asked for once, kept in sessionStorage (gone when the tab closes) and sent as a
 * bearer token; it never appears in a URL.
 */

const TOKEN_KEY = "cursor-byok.token";

export class Unauthorized extends Error {}

export class ApiError extends Error {}

export function hasToken() {
  return sessionStorage.getItem(TOKEN_KEY) !== null;
}

/** @param {string} token */
export function saveToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** @param {string} path relative to /ui/api @param {Record<string, string | number | undefined>} [query] */
async function request(path, query = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== "") params.set(name, String(value));
  }
  const search = params.size > 0 ? `?${params}` : "";
  const token = sessionStorage.getItem(TOKEN_KEY);
  const response = await fetch(`/ui/api${path}${search}`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
    cache: "no-store",
  });
  if (response.status === 401) throw new Unauthorized("the server needs its access token");
  if (!response.ok) {
    const body = await response.json().catch(() => null);
    throw new ApiError(body?.error?.message ?? `the server answered ${response.status}`);
  }
  return response;
}

/** @param {string} path @param {Record<string, string | number | undefined>} [query] */
export async function getJSON(path, query) {
  return (await request(path, query)).json();
}

/** The exact request body of a model call, as text. @param {string} callID */
export async function getRequestBody(callID) {
  return (await request(`/calls/${encodeURIComponent(callID)}/request`)).text();
}

/** @param {string} id */
export const conversationPath = (id) => `/conversations/${encodeURIComponent(id)}`;
