import { describe, expect, test } from "bun:test";
import { testLogger } from "../../test/support/log-capture";
import { KeyReloader } from "./reload";

/** A reload step that waits for the test to let each run finish. */
function gatedStep() {
  let runs = 0;
  let open: (() => void) | undefined;
  return {
    get runs() {
      return runs;
    },
    release: () => open?.(),
    step: {
      name: "filesystem",
      run: async () => {
        runs++;
        await new Promise<void>((resolve) => {
          open = resolve;
        });
        return { failed: 0 };
      },
    },
  };
}

describe("KeyReloader", () => {
  test("requests during a reload make one more reload after it, however many they are", async () => {
    const gate = gatedStep();
    const reloader = new KeyReloader([gate.step], testLogger("off"));
    reloader.request("api");
    await Bun.sleep(0);
    expect(reloader.status().status).toBe("running");
    for (let i = 0; i < 25; i++) reloader.request(i % 2 ? "api" : "sighup");
    expect(gate.runs).toBe(1);
    gate.release();
    await Bun.sleep(0);
    expect(gate.runs).toBe(2);
    gate.release();
    await reloader.idle();
    expect(gate.runs).toBe(2);
    expect(reloader.status().status).toBe("completed");
  });

  test("a step that throws: failed, with the reason; the next request runs again", async () => {
    let fail = true;
    const reloader = new KeyReloader(
      [
        {
          name: "cloud_kv",
          run: async () => {
            if (fail) throw new Error("table unreachable");
            return { failed: 2 };
          },
        },
      ],
      testLogger("off"),
    );
    reloader.request("api");
    await reloader.idle();
    expect(reloader.status()).toMatchObject({
      status: "failed",
      lastError: "reload failed (the keys loaded before stay): cloud_kv: table unreachable",
    });
    fail = false;
    reloader.request("api");
    await reloader.idle();
    expect(reloader.status()).toMatchObject({
      status: "completed_with_errors",
      lastError: "reload completed with 2 key loading error(s)",
    });
  });
});
