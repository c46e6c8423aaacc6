/** Types of format.js for the tests that check the page's figures with the page's own formats. */
export interface TokenCounts {
  readonly input: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
}
export function tokens(value: number): string;
export function dollars(value: number): string;
export function duration(ms: number | null): string;
export function when(at: number): string;
export function cachedShare(usage: TokenCounts): number | null;
export function percent(share: number | null): string;
export function size(bytes: number): string;
