/** Number, money, time and share formats, one place for the whole page. */

const integer = new Intl.NumberFormat("en-US");

/** @param {number} value */
export function tokens(value) {
  return integer.format(Math.round(value));
}

/** US dollars; small amounts keep four decimals. @param {number} value */
export function dollars(value) {
  return `$${value.toFixed(value !== 0 && Math.abs(value) < 1 ? 4 : 2)}`;
}

/** @param {number | null} ms */
export function duration(ms) {
  if (ms === null || !Number.isFinite(ms)) return "—";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** @param {number} at epoch ms */
export function when(at) {
  return new Date(at).toISOString().replace("T", " ").slice(0, 19);
}

/**
 * The share of the input that was read from the prompt cache.
 * @param {{input: number, cacheRead: number, cacheWrite: number}} usage
 */
export function cachedShare(usage) {
  const total = usage.input + usage.cacheRead + usage.cacheWrite;
  return total === 0 ? null : usage.cacheRead / total;
}

/** @param {number | null} share */
export function percent(share) {
  return share === null ? "—" : `${(share * 100).toFixed(1)}%`;
}

/** @param {number} bytes */
export function size(bytes) {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KiB`;
}
