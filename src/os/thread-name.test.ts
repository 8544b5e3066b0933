import { describe, expect, test } from "bun:test";
import { readFileSync, readlinkSync } from "node:fs";
import { nameThisThread, THREAD_NAME_MAX, THREAD_NAMES } from "./thread-name";

describe("nameThisThread", () => {
  test("every name sigil gives fits the kernel's limit", () => {
    for (const name of Object.values(THREAD_NAMES)) {
      expect(Buffer.byteLength(name)).toBeLessThanOrEqual(THREAD_NAME_MAX);
    }
  });

  test("a worker thread named by it shows under that name in /proc, the main thread keeps its own", async () => {
    const mainName = readFileSync(`/proc/${process.pid}/comm`, "utf8");
    const source = `
      import { nameThisThread } from ${JSON.stringify(`${import.meta.dir}/thread-name.ts`)};
      import { readlinkSync } from "node:fs";
      const named = nameThisThread("sigil-test-thr");
      postMessage({ named, tid: readlinkSync("/proc/thread-self").split("/").pop() });
      setInterval(() => {}, 1000);
    `;
    const url = URL.createObjectURL(new Blob([source], { type: "application/typescript" }));
    const worker = new Worker(url);
    try {
      const { named, tid } = await new Promise<{ named: boolean; tid: string }>(
        (resolve, reject) => {
          worker.onmessage = (event) => resolve(event.data);
          worker.onerror = (event) => reject(event);
        },
      );
      expect(named).toBe(true);
      expect(readFileSync(`/proc/${process.pid}/task/${tid}/comm`, "utf8")).toBe(
        "sigil-test-thr\n",
      );
      expect(readFileSync(`/proc/${process.pid}/comm`, "utf8")).toBe(mainName);
      expect(readlinkSync("/proc/thread-self")).toEndWith(`/task/${process.pid}`);
    } finally {
      await worker.terminate();
    }
  });

  test("a name longer than the kernel keeps is refused, not cut", () => {
    expect(() => nameThisThread("sigil-much-too-long")).toThrow(/1 to 15 bytes/);
    expect(() => nameThisThread("")).toThrow(RangeError);
  });
});
