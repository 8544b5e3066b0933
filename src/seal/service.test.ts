import { afterEach, describe, expect, test } from "bun:test";
import { KMSClient } from "@aws-sdk/client-kms";
import { generateIdentity, identityToRecipient } from "age-encryption";
import { testLogger } from "../../test/support/log-capture";
import { SigilError } from "../errors";
import { openSqliteState } from "../state/sqlite";
import type { SignerStateStore } from "../state/store";
import { decodeSealRecord, encodeSealRecord } from "./record";
import { SealService } from "./service";
import { unwrapWithAge } from "./wrap/age";

const lines: string[] = [];
const logger = testLogger("info", lines);
const noKms = () => new KMSClient({ region: "us-east-1" });

let store: SignerStateStore | undefined;
afterEach(async () => {
  await store?.close();
  lines.length = 0;
});

/** A 2-of-3 age seal with every operator registered, on an in-memory signer_state and a test clock. */
async function initialized(timeoutMs: number) {
  store = await openSqliteState(":memory:");
  const clock = { now: 1_000_000 };
  const seal = new SealService({
    store,
    kmsClient: noKms,
    unsealTimeoutMs: timeoutMs,
    defaults: {},
    logger,
    now: () => clock.now,
  });
  const setup = (await seal.issueSetupTokenIfUninitialized()) ?? "";
  const identities = await Promise.all([1, 2, 3].map(() => generateIdentity()));
  const recipients = await Promise.all(identities.map((i) => identityToRecipient(i)));
  const init = await seal.init({
    setup_token: setup,
    share_wrap: recipients.map((r) => `age:${r}`),
    threshold: 2,
  });
  const credentials = await Promise.all(
    init.operators.map(
      async (op) => (await seal.register({ registration_token: op.registration_token })).credential,
    ),
  );
  const shareOf = async (i: number) => {
    const fetched = await seal.share(credentials[i] as string);
    const clear = await unwrapWithAge(
      [identities[i] as string],
      new Uint8Array(Buffer.from(fetched.wrapped_share, "base64")),
    );
    return Buffer.from(clear).toString("base64");
  };
  const submit = async (op: "unseal" | "generate-root", i: number) =>
    seal.submit(op, credentials[i] as string, { share: await shareOf(i) });
  return { seal, clock, submit, store };
}

const codeOf = async (promise: Promise<unknown>) => {
  try {
    await promise;
    return "resolved";
  } catch (error) {
    return error instanceof SigilError ? error.code : String(error);
  }
};

describe("SealService", () => {
  test("a partial unseal expires after the timeout: shares are discarded and must be resubmitted", async () => {
    const { seal, clock, submit } = await initialized(10 * 60_000);
    await submit("unseal", 0);
    expect((await seal.status()).state).toBe("partial_unseal");
    clock.now += 10 * 60_000 - 1;
    expect((await seal.status()).state).toBe("partial_unseal");
    clock.now += 1;
    expect((await seal.status()).state).toBe("sealed");
    expect(lines.some((l) => l.includes("partial unseal expired"))).toBe(true);
    // Operator 2 alone is not enough any more; operator 1 resubmits and it completes.
    expect((await submit("unseal", 1)).complete).toBe(false);
    expect((await submit("unseal", 0)).complete).toBe(true);
    expect(seal.isUnsealed()).toBe(true);
  });

  test("timeout 0: a partial unseal never expires", async () => {
    const { seal, clock, submit } = await initialized(0);
    await submit("unseal", 2);
    clock.now += 365 * 24 * 3600_000;
    const status = await seal.status();
    expect(status.state).toBe("partial_unseal");
    expect(status.progress[0]?.expires_at).toBeNull();
  });

  test("the master key exists only while unsealed and is zeroed on seal", async () => {
    const { seal, submit } = await initialized(0);
    expect(seal.currentMasterKey()).toBeUndefined();
    await submit("unseal", 0);
    await submit("unseal", 1);
    const key = seal.currentMasterKey();
    expect(key?.length).toBe(32);
    expect(key?.some((b) => b !== 0)).toBe(true);
    seal.seal();
    expect(key?.every((b) => b === 0)).toBe(true);
    expect(seal.currentMasterKey()).toBeUndefined();
    expect(await codeOf(Promise.resolve().then(() => seal.seal()))).toBe("sealed");
  });

  test("concurrent submissions reaching the threshold together unseal exactly once", async () => {
    const { seal, submit } = await initialized(0);
    const results = await Promise.allSettled([
      submit("unseal", 0),
      submit("unseal", 1),
      submit("unseal", 2),
    ]);
    const completed = results.filter((r) => r.status === "fulfilled" && r.value.complete === true);
    expect(completed).toHaveLength(1);
    expect(seal.isUnsealed()).toBe(true);
  });

  test("a damaged check value is refused after combining, and the signer stays sealed", async () => {
    const { seal, submit, store: state } = await initialized(0);
    const slot = await state.getSeal();
    if (!slot) throw new Error("no record");
    const record = decodeSealRecord(slot.body);
    await state.putSeal(encodeSealRecord({ ...record, checkValue: "0".repeat(64) }), slot.version);
    await submit("unseal", 0);
    expect(await codeOf(submit("unseal", 1))).toBe("internal_error");
    expect(seal.isUnsealed()).toBe(false);
  });

  test("no log line carries a share, a credential or a token", async () => {
    const { seal, submit } = await initialized(0);
    await submit("unseal", 0);
    await submit("unseal", 1);
    const root = await submit("generate-root", 2);
    expect(root.complete).toBe(false);
    const done = await submit("generate-root", 0);
    const token = String(done.token);
    expect(token).toStartWith("sgl_");
    const text = lines.join("\n");
    expect(text).not.toContain(token);
    expect(text).not.toMatch(/sg[ro]_[A-Za-z0-9_-]{20}/);
    expect(seal.isUnsealed()).toBe(true);
  });
});
