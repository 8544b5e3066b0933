// The hostile-input classes against the cloud_kv key routes (keygen, import, delete), which exist
// only with a cloud_kv table: a signer process (the AWS SDK takes its endpoint from the
// environment) on a DynamoDB-protocol server. The same case table and runner as routes.test.ts;
// afterwards the key table, slashing protection and signer_state are as they were.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { ageKeys, bootstrapStateful } from "../support/ceremony";
import { type RunningSigil, startSigil, TempDir } from "../support/cli";
import { type RunningDynamo, startDynamo } from "../support/dynamodb";
import { registerTestSecret } from "../support/log-capture";
import { INTEROP_KEYS } from "../support/slashing";
import { buildCases, HOSTILE_CLASSES, type HostileCase, MIB } from "./cases";
import { Liveness } from "./liveness";
import { cloudKvRoutes, keystoreOfUnloadedKey } from "./routes";
import { describeFailures, Figures, runCases } from "./runner";
import { signerState, slashingRecords } from "./state";

const TIMEOUT_SECONDS = 3;
const BODY_LIMIT = 2 * MIB;
const CLOUD_KV_BODY_LIMIT = 3 * MIB;
const TABLE = "hostile-keys";
const LIVENESS_KEY = INTEROP_KEYS[1] ?? "";

const dir = new TempDir();
const slashingPath = join(dir.path, "slashing.sqlite");
const statePath = join(dir.path, "state.sqlite");
const figures = new Figures();
let dynamo: RunningDynamo;
let sigil: RunningSigil;
let management = "";
let cases: HostileCase[] = [];
let secrets: string[] = [];
let before: {
  items: string[];
  slashing: ReturnType<typeof slashingRecords>;
  state: Record<string, string[]>;
};
const liveness = new Liveness(
  () => sigil.url,
  LIVENESS_KEY,
  () => management,
);

async function tableItems(): Promise<string[]> {
  const client = dynamo.client();
  const { Items = [] } = await client.send(new ScanCommand({ TableName: TABLE }));
  return Items.map((item) => JSON.stringify(item)).sort();
}

beforeAll(async () => {
  dynamo = await startDynamo();
  await dynamo.createSlashingTable(TABLE);
  const [backup] = await ageKeys(1);
  const config = dir.file(
    "cloud-kv.yaml",
    [
      `server: {listen_address: 127.0.0.1, listen_port: 0, request_timeout_seconds: ${TIMEOUT_SECONDS}, max_request_body_bytes: ${BODY_LIMIT}}`,
      "logging: {format: json}",
      "key_sources:",
      `  filesystem: {paths: ["${resolve("examples/keys")}"]}`,
      "  cloud_kv:",
      `    table: ${TABLE}`,
      "    key_refresh_interval_minutes: 0",
      `    keygen: {enabled: true, max_items_per_request: 10, request_timeout_seconds: ${TIMEOUT_SECONDS}, backup: {enabled: true, recipients: ["${backup?.recipient}"]}}`,
      `    writable: {enabled: true, max_items_per_request: 3, request_timeout_seconds: ${TIMEOUT_SECONDS}, max_request_body_bytes: ${CLOUD_KV_BODY_LIMIT}}`,
      `antislashing: {backend: sqlite, path: "${slashingPath}"}`,
      `signer_state: {backend: sqlite, path: "${statePath}"}`,
    ].join("\n"),
  );
  sigil = await startSigil(
    ["serve", "-c", config, "--init-slashing-protection"],
    dynamo.processEnv,
  );
  management = (await bootstrapStateful(sigil.url, sigil.stderrText().split("\n"))).management;
  const password = registerTestSecret("hostile-cloud-kv-password-1", "keystore password");
  const wrongPassword = registerTestSecret("hostile-cloud-kv-wrong-2", "keystore password");
  const keystore = await keystoreOfUnloadedKey(32, password);
  const routes = cloudKvRoutes({
    signKey: INTEROP_KEYS[0] ?? "",
    unknownKey: `0x${"ab".repeat(48)}`,
    keystore,
    wrongPassword,
    policy: "unused",
    ageRecipient: backup?.recipient ?? "",
    bodyLimit: BODY_LIMIT,
    keyManagerBodyLimit: CLOUD_KV_BODY_LIMIT,
    cloudKvBodyLimit: CLOUD_KV_BODY_LIMIT,
  });
  cases = buildCases(routes, {
    management,
    operator: "no operator routes here",
    requestTimeoutMs: TIMEOUT_SECONDS * 1000,
  });
  secrets = [management, password, wrongPassword];
  await liveness.check();
  liveness.roots.length = 0;
  before = {
    items: await tableItems(),
    slashing: slashingRecords(slashingPath),
    state: signerState(statePath),
  };
}, 120_000);

afterAll(async () => {
  await sigil?.stop();
  await dynamo?.stop();
  dir.remove();
});

test("every hostile class against the cloud_kv key routes: 4xx JSON errors (slow-loris: cut), the signer still signs", async () => {
  const port = Number(new URL(sigil.url).port);
  const failures: string[] = [];
  for (const hostileClass of HOSTILE_CLASSES) {
    const mine = cases.filter((c) => c.hostileClass === hostileClass);
    const slow = hostileClass === "slow_loris";
    const outcomes = await runCases(port, mine, {
      concurrency: slow ? mine.length : 4,
      secrets,
    });
    figures.record(hostileClass, outcomes);
    failures.push(...describeFailures(outcomes));
    await liveness.check();
  }
  expect(failures).toEqual([]);
  console.log(`hostile input, cloud_kv key routes: requests per class\n${figures.table()}`);
  figures.write("hostile-cloud-kv-figures.json");
}, 300_000);

test("nothing was written: no key generated or imported, no slashing record, no state change", async () => {
  expect(await tableItems()).toEqual(before.items);
  const after = slashingRecords(slashingPath);
  const added = after.attestations.filter((row) => !before.slashing.attestations.includes(row));
  expect(added.map((row) => JSON.parse(row).root).sort()).toEqual([...liveness.roots].sort());
  expect(after.blocks).toEqual(before.slashing.blocks);
  expect(signerState(statePath)).toEqual(before.state);
  expect(sigil.stderrText()).not.toContain('"level":"error"');
});
