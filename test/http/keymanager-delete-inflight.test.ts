// A Key Manager delete answers once the key's signatures in flight are released or refused
// (issue 37: with 300 requests in flight, 178 of 179 signatures used to arrive after the delete
// was answered). Real signer, real HTTP, real sqlite; the figures are printed, not asserted.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { TempDir } from "../support/cli";
import { deleteKeys, importKeys } from "../support/keymanager";
import { interopKeystore, type TestKeystore } from "../support/keystores";
import { type InProcessSigner, startInProcessSigner } from "../support/signer";
import { attestationRequest, postSign } from "../support/slashing";

const dir = new TempDir();
const PASSWORD = "delete-in-flight-password";
const IN_FLIGHT = 300;
/** The epoch attestationRequest counts from. */
const FIRST_EPOCH = attestationRequest(0, 0, 0).message.source;
let s: InProcessSigner;
let key: TestKeystore;
let idle: TestKeystore;

beforeAll(async () => {
  [key, idle] = await Promise.all([interopKeystore(50, PASSWORD), interopKeystore(51, PASSWORD)]);
  const managed = join(dir.path, "managed");
  mkdirSync(managed);
  s = await startInProcessSigner(dir, "delete-in-flight", {
    yaml: [
      `key_sources: {filesystem: {paths: ["${managed}"]}, key_manager_api: {enabled: true}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "delete-in-flight.sqlite")}"}`,
    ],
    // "signed" lines (debug) are the signer's own record of each signature it released.
    logLevel: "info,signing=debug",
  });
  const imported = await importKeys(s.url, {
    keystores: [key.keystore, idle.keystore],
    passwords: [PASSWORD, PASSWORD],
  });
  expect(imported.body.data).toEqual([{ status: "imported" }, { status: "imported" }]);
});
afterAll(async () => {
  await s?.stop();
  dir.remove();
});

/** Half RANDAO reveals (no record), half attestations (a record each, source i → target i + 1). */
function request(i: number) {
  if (i % 2 === 1) return attestationRequest(i, i + 1, i).body;
  const fork = attestationRequest(1, 2, 3).body.fork_info;
  return {
    type: "RANDAO_REVEAL",
    fork_info: fork,
    randao_reveal: { epoch: String(FIRST_EPOCH + i) },
  };
}

test("no signature with a deleted key is released after its delete is answered", async () => {
  let arrived = 0;
  let deleteArrivedAt = Number.POSITIVE_INFINITY;
  let startDelete: () => void = () => {};
  const underway = new Promise<void>((resolve) => {
    startDelete = resolve;
  });
  const signing = Array.from({ length: IN_FLIGHT }, async (_, i) => {
    const response = await postSign(s.url, key.pubkey, request(i));
    await response.arrayBuffer();
    const at = ++arrived;
    // Once some signatures are back, the rest are in flight: delete now.
    if (at === 20) startDelete();
    return { i, status: response.status, at };
  });
  await underway;
  const started = performance.now();
  const deleted = await deleteKeys(s.url, [key.pubkey]);
  const latency = performance.now() - started;
  deleteArrivedAt = ++arrived;
  const results = await Promise.all(signing);
  expect(deleted.body.data).toEqual([{ status: "deleted" }]);

  const signed = results.filter((r) => r.status === 200);
  const late = signed.filter((r) => r.at > deleteArrivedAt);
  const after = results.filter((r) => r.at > deleteArrivedAt);
  // Every request answered after the delete was refused: the key was gone (404).
  expect(new Set(after.map((r) => r.status))).toEqual(after.length ? new Set([404]) : new Set());
  expect(late).toEqual([]);

  // The signer's own order: no "signed" line for the key after its "key deleted" line.
  const records = s.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
  const short = `${key.pubkey.slice(0, 10)}…${key.pubkey.slice(-4)}`;
  const deletedAt = records.findIndex((r) => r.msg === "key deleted" && r.pubkey === key.pubkey);
  expect(deletedAt).toBeGreaterThan(-1);
  const signedLines = records
    .map((r, at) => ({ r, at }))
    .filter(({ r }) => r.msg === "signed" && r.pubkey === short);
  expect(signedLines.length).toBe(signed.length);
  expect(signedLines.filter(({ at }) => at > deletedAt)).toEqual([]);

  // Every attestation signed is in the interchange the delete returned.
  const history = JSON.parse(deleted.body.slashing_protection) as {
    data: { pubkey: string; signed_attestations: { target_epoch: string }[] }[];
  };
  const targets = new Set(
    history.data
      .find((v) => v.pubkey === key.pubkey)
      ?.signed_attestations.map((a) => Number(a.target_epoch)),
  );
  for (const { i } of signed.filter((r) => r.i % 2 === 1))
    expect(targets.has(FIRST_EPOCH + i + 1)).toBe(true);

  // The figures (not asserted): what the wait adds to a delete.
  const line = records[deletedAt] as { in_flight: number; in_flight_wait_ms: number };
  const idleStarted = performance.now();
  expect((await deleteKeys(s.url, [idle.pubkey])).body.data).toEqual([{ status: "deleted" }]);
  const idleLatency = performance.now() - idleStarted;
  const idleLine = records.length;
  const idleRecord = s.logs
    .slice(idleLine)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((r) => r.msg === "key deleted");
  console.log(
    [
      `delete with ${IN_FLIGHT} requests sent: ${signed.length} signed (all before the delete's answer),`,
      `${results.length - signed.length} refused (${after.length} answered after the delete, all 404);`,
      `${line.in_flight} signatures were in flight when the key left memory, waited for in ${line.in_flight_wait_ms} ms;`,
      `delete latency ${latency.toFixed(1)} ms (idle key: ${idleLatency.toFixed(1)} ms, wait ${String(idleRecord?.in_flight_wait_ms)} ms)`,
    ].join(" "),
  );
});
