// The worker side of handoff.ts: plays the slashing thread (answers each check it is handed) or,
// for the worker-to-worker modes, the listener thread that hands them over. Every answer is
// computed from the check (a refusal when the target is not above the source), so that nothing
// can be answered without the check having crossed.
import { threadCpuMicros } from "./handoff-cpu";

export interface Check {
  pubkey: string;
  source: number;
  target: number;
  root: Uint8Array;
}

/** Bytes of one check in the shared-memory modes: pubkey 48, source 8, target 8, root 32. */
export const CHECK_BYTES = 96;
/** Int32 control words at the start of a shared buffer. */
export const CONTROL = { requests: 0, replies: 1, stop: 2 } as const;
export const CONTROL_BYTES = 64;

export type ToWorker =
  | { mode: "post" }
  | { mode: "sab-slashing"; buffer: SharedArrayBuffer; ring: number }
  | {
      mode: "sab-listener";
      buffer: SharedArrayBuffer;
      ring: number;
      checks: number;
      inFlight: number;
    };

declare const self: Worker;

/** The answer to one check: 1 accepted, 2 refused (a surround or repeat stand-in). */
export function decide(source: number, target: number): number {
  return target > source ? 1 : 2;
}

/** Writes check `n` (pubkey bytes, epochs, root) at `offset` of `bytes`. */
export function writeCheck(bytes: Uint8Array, view: DataView, offset: number, n: number): void {
  bytes.fill(n & 0xff, offset, offset + 48);
  view.setFloat64(offset + 48, n, true);
  view.setFloat64(offset + 56, n + 1, true);
  bytes.fill((n >> 8) & 0xff, offset + 64, offset + 96);
}

function slashingThreadOnSharedMemory(buffer: SharedArrayBuffer, ring: number): void {
  const control = new Int32Array(buffer, 0, CONTROL_BYTES / 4);
  const view = new DataView(buffer, CONTROL_BYTES);
  const replies = new Int32Array(buffer, CONTROL_BYTES + ring * CHECK_BYTES, ring);
  const cpuBefore = threadCpuMicros();
  let served = 0;
  for (;;) {
    // Wait until the listener has published a check beyond those already served.
    while (Atomics.load(control, CONTROL.requests) === served) {
      if (Atomics.load(control, CONTROL.stop) === 1) {
        postMessage({ type: "done", served, cpuMicros: threadCpuMicros() - cpuBefore });
        return;
      }
      Atomics.wait(control, CONTROL.requests, served, 1000);
    }
    const published = Atomics.load(control, CONTROL.requests);
    for (; served < published; served++) {
      const slot = served % ring;
      const offset = slot * CHECK_BYTES;
      replies[slot] = decide(
        view.getFloat64(offset + 48, true),
        view.getFloat64(offset + 56, true),
      );
    }
    Atomics.store(control, CONTROL.replies, served);
    Atomics.notify(control, CONTROL.replies);
  }
}

export interface RingRun {
  elapsedMs: number;
  cpuMicros: number;
  latencies: number[];
  wrong: number;
}

/**
 * The listener's side of the shared ring: keeps `inFlight` checks published, reads the answers,
 * then tells the slashing thread to stop. `waitForReplies` blocks (a worker: Atomics.wait) or
 * returns a promise (an event loop: Atomics.waitAsync) until the reply counter moves past
 * `answered`; a blocking one is not awaited, so that the loop stays synchronous.
 */
export async function runRingListener(
  buffer: SharedArrayBuffer,
  ring: number,
  checks: number,
  inFlight: number,
  waitForReplies: (control: Int32Array, answered: number) => Promise<unknown> | undefined,
): Promise<RingRun> {
  const control = new Int32Array(buffer, 0, CONTROL_BYTES / 4);
  const bytes = new Uint8Array(buffer, CONTROL_BYTES);
  const view = new DataView(buffer, CONTROL_BYTES);
  const replies = new Int32Array(buffer, CONTROL_BYTES + ring * CHECK_BYTES, ring);
  const latencies: number[] = [];
  const sentAt = new Float64Array(ring);
  const cpuBefore = threadCpuMicros();
  const started = performance.now();
  let sent = 0;
  let answered = 0;
  let wrong = 0;
  while (answered < checks) {
    while (sent < checks && sent - answered < inFlight) {
      const slot = sent % ring;
      writeCheck(bytes, view, slot * CHECK_BYTES, sent);
      sentAt[slot] = performance.now();
      sent++;
    }
    Atomics.store(control, CONTROL.requests, sent);
    Atomics.notify(control, CONTROL.requests);
    while (Atomics.load(control, CONTROL.replies) === answered) {
      const waiting = waitForReplies(control, answered);
      if (waiting) await waiting;
    }
    const done = Atomics.load(control, CONTROL.replies);
    const now = performance.now();
    for (; answered < done; answered++) {
      const slot = answered % ring;
      if (replies[slot] !== 1) wrong++;
      if (answered % 16 === 0) latencies.push(now - (sentAt[slot] ?? now));
    }
  }
  const elapsedMs = performance.now() - started;
  const cpuMicros = threadCpuMicros() - cpuBefore;
  Atomics.store(control, CONTROL.stop, 1);
  Atomics.notify(control, CONTROL.requests);
  return { elapsedMs, cpuMicros, latencies, wrong };
}

/** A worker blocking until the reply counter moves (at most a second at a time). */
function blockForReplies(control: Int32Array, answered: number): undefined {
  Atomics.wait(control, CONTROL.replies, answered, 1000);
  return undefined;
}

self.onmessage = (event: MessageEvent<ToWorker | { type: "stop" } | Check | Check[]>) => {
  const data = event.data;
  if (Array.isArray(data)) {
    postMessage(data.map((check) => decide(check.source, check.target)));
    return;
  }
  if ("pubkey" in data) {
    postMessage(decide(data.source, data.target));
    return;
  }
  if ("type" in data) {
    postMessage({ type: "cpu", cpuMicros: threadCpuMicros() });
    return;
  }
  if (data.mode === "sab-slashing") slashingThreadOnSharedMemory(data.buffer, data.ring);
  else if (data.mode === "sab-listener") {
    runRingListener(data.buffer, data.ring, data.checks, data.inFlight, blockForReplies).then(
      (run) => postMessage({ type: "listener-done", ...run }),
    );
  } else postMessage({ type: "ready", cpuMicros: threadCpuMicros() });
};
