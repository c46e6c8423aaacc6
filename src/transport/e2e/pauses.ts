/**
 * What stopped a process's event loop, for benchmarks that measure latency in another process
 * (bench/stream.bench.ts `concurrency`): how late a 10 ms timer ran, and the garbage collector's
 * pauses (young- and old-generation), since the previous `take`. A chunk that waits in the
 * server for one of these arrives that much later at the client; the client processes and the
 * provider have pauses of their own, which this does not count. Also how long the event loop's
 * thread was ready to run but had no CPU: on a machine whose cores are shared with busy
 * processes (a benchmark's clients and provider), the kernel's scheduler, not the process,
 * makes part of the lateness.
 */
import { readFileSync } from "node:fs";
import {
  constants,
  type EventLoopUtilization,
  monitorEventLoopDelay,
  type PerformanceEntry,
  PerformanceObserver,
  performance,
} from "node:perf_hooks";

const RESOLUTION_MS = 10;

export interface PauseReport {
  /** Milliseconds the report covers. */
  readonly ms: number;
  /** How late the event loop ran a 10 ms timer, in ms: p50, p99, max. */
  readonly loopDelay: { readonly p50: number; readonly p99: number; readonly max: number };
  /** Share of the time the event loop was busy (0–1). */
  readonly busy: number;
  readonly minor: GcPauses;
  readonly major: GcPauses;
  /**
   * Milliseconds the event loop's thread was runnable but waiting for a CPU (Linux's
   * `/proc/<pid>/task/<pid>/schedstat`; undefined where there is none).
   */
  readonly cpuWaitMs: number | undefined;
  /** Times the kernel took a CPU from any of the process's threads before it yielded it. */
  readonly involuntarySwitches: number;
}

export interface GcPauses {
  readonly count: number;
  /** Milliseconds, the longest and all together. */
  readonly max: number;
  readonly total: number;
}

export interface PauseWatch {
  /** The pauses since the watch began or since the previous `take`. */
  take(): PauseReport;
  stop(): void;
}

export function watchPauses(): PauseWatch {
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  delay.enable();
  let minor = emptyPauses();
  let major = emptyPauses();
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) minor = add(minor, entry.duration);
      else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) major = add(major, entry.duration);
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  let since = performance.now();
  let utilization: EventLoopUtilization = performance.eventLoopUtilization();
  let waited = readCpuWaitMs();
  let switches = process.resourceUsage().involuntaryContextSwitches;
  return {
    take() {
      const now = performance.now();
      const used = performance.eventLoopUtilization(utilization);
      const waitedNow = readCpuWaitMs();
      const switchesNow = process.resourceUsage().involuntaryContextSwitches;
      const report: PauseReport = {
        ms: now - since,
        loopDelay: {
          p50: lateBy(delay.percentile(50)),
          p99: lateBy(delay.percentile(99)),
          max: lateBy(delay.max),
        },
        busy: used.utilization,
        minor,
        major,
        cpuWaitMs: waitedNow === undefined || waited === undefined ? undefined : waitedNow - waited,
        involuntarySwitches: switchesNow - switches,
      };
      waited = waitedNow;
      switches = switchesNow;
      delay.reset();
      minor = emptyPauses();
      major = emptyPauses();
      since = now;
      utilization = performance.eventLoopUtilization();
      return report;
    },
    stop() {
      delay.disable();
      observer.disconnect();
    },
  };
}

/** The main thread's time waiting on a run queue, in ms, or undefined off Linux. */
function readCpuWaitMs(): number | undefined {
  try {
    return fromSchedstat(
      readFileSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, "utf8"),
    );
  } catch {
    return undefined;
  }
}

/**
 * The wait of a `schedstat` line ("<ns on a CPU> <ns waiting on a run queue> <time slices>"),
 * in ms; undefined when the line is not one.
 */
export function fromSchedstat(line: string): number | undefined {
  const waitNs = Number(line.trim().split(/\s+/)[1]);
  return Number.isFinite(waitNs) ? waitNs / 1e6 : undefined;
}

/** The histogram holds the whole interval between the timer's runs, in ns; the rest is late. */
function lateBy(intervalNs: number): number {
  return Math.max(0, intervalNs / 1e6 - RESOLUTION_MS);
}

function emptyPauses(): GcPauses {
  return { count: 0, max: 0, total: 0 };
}

function add(pauses: GcPauses, ms: number): GcPauses {
  return { count: pauses.count + 1, max: Math.max(pauses.max, ms), total: pauses.total + ms };
}
