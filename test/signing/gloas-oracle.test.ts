/**
 * Gloas (ePBS) signing, against Lodestar's ssz.gloas as the oracle, on a devnet whose config.yaml
 * schedules Gloas, for both presets. For every new and changed type, in each shape and alias:
 * sigil's parser computes Lodestar's signing root (random objects, uint64 values up to 2^64-1),
 * refuses a different supplied root, and a running signer's signature verifies with blst against
 * Lodestar's root. The Lodestar side runs in a child process per preset (lodestar-gloas.ts says why).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { SigilError } from "../../src/errors";
import type { NetworkConstants } from "../../src/signing/network";
import { parseSigningRequest } from "../../src/signing/parse";
import { readSpecConfig } from "../../src/signing/spec-config";
import { TempDir } from "../support/cli";
import { verifiesAgainstOracle } from "../support/oracle";
import { startInProcessSigner } from "../support/signer";
import { INTEROP_KEYS, postSign } from "../support/slashing";
import type { GloasCase, GloasOracleInput, GloasOracleOutput } from "./lodestar-gloas";
import { devnetConfigYaml } from "./minimal-oracle";

const GLOAS_EPOCH = 7;
const GVR = `0x${"9e".repeat(16)}${"a5".repeat(16)}`;
const KEY = INTEROP_KEYS[0] ?? "";
const CASES_PER_VARIANT = 12;

/** Every variant the oracle builds: each type name and payload key, wrapped and bare; the changed types. */
const OBJECT_NAMES = [
  "PAYLOAD_ATTESTATION_MESSAGE / payload_attestation_message (v1.4.0)",
  "PAYLOAD_ATTESTATION / payload_attestation_data (Lighthouse)",
  "PAYLOAD_ATTESTATION / payload_attestation (Lodestar before #10071)",
  "EXECUTION_PAYLOAD_ENVELOPE / execution_payload_envelope (v1.4.0)",
  "PROPOSER_PREFERENCES / proposer_preferences (v1.4.0)",
  "EXECUTION_PAYLOAD_BID / execution_payload_bid (v1.4.0)",
  "BUILDER_REQUEST_AUTH / builder_request_auth (v1.4.0)",
  "REQUEST_AUTH / request_auth (Lighthouse)",
];
const variantName = (name: string, shape: string) => name.replace(" (", ` ${shape} (`);
const VARIANTS = [
  ...OBJECT_NAMES.flatMap((name) => [variantName(name, "wrapped"), variantName(name, "bare")]),
  ...["AGGREGATE_AND_PROOF_V2", "AGGREGATE_AND_PROOF"].flatMap((type) => [
    `${type} wrapped GLOAS`,
    `${type} bare (fork at its slot)`,
  ]),
  "BLOCK_V2 GLOAS block_header",
  "ATTESTATION (index 0 or 1)",
].sort();

const dir = new TempDir();
const keysDir = join(dir.path, "keys");
afterAll(() => dir.remove());
beforeAll(() => {
  mkdirSync(keysDir);
  copyFileSync("examples/keys/interop-0.yaml", join(keysDir, "interop-0.yaml"));
});

async function gloasOracle(preset: string, input: GloasOracleInput): Promise<GloasOracleOutput> {
  const child = Bun.spawn(
    [process.execPath, join(import.meta.dir, "lodestar-gloas.ts"), JSON.stringify(input)],
    { env: { ...process.env, LODESTAR_PRESET: preset }, stdout: "pipe", stderr: "pipe" },
  );
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`the Gloas oracle (${preset}) exited ${code}: ${stderr}`);
  return JSON.parse(stdout) as GloasOracleOutput;
}

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;

function sigilRoot(body: Record<string, unknown>, network: NetworkConstants): string {
  try {
    return hex(parseSigningRequest(body, network).signingRoot);
  } catch (error) {
    if (error instanceof SigilError) return `${error.code}: ${error.message}`;
    throw error;
  }
}

/** Decimal strings in a JSON value above 2^53 (uint64 that a JS number would have rounded). */
function hasUintAbove2p53(value: unknown): boolean {
  if (typeof value === "string") return /^[0-9]+$/.test(value) && BigInt(value) > 2n ** 53n;
  if (Array.isArray(value)) return value.some(hasUintAbove2p53);
  if (typeof value === "object" && value !== null)
    return Object.values(value).some(hasUintAbove2p53);
  return false;
}

/** The slashable cases slashing protection accepts in this order: rising slots and targets. */
function acceptableInOrder(cases: readonly GloasCase[]): GloasCase[] {
  const bySlot = [...cases].sort((a, b) => a.slot - b.slot);
  const accepted: GloasCase[] = [];
  let lastBlockSlot = -1;
  let lastTarget = -1;
  for (const c of bySlot) {
    if (c.body.type === "BLOCK_V2" && c.slot > lastBlockSlot) {
      lastBlockSlot = c.slot;
      accepted.push(c);
    }
    const target = Number((c.body.attestation as { target?: { epoch: string } })?.target?.epoch);
    if (c.body.type === "ATTESTATION" && target > lastTarget) {
      lastTarget = target;
      accepted.push(c);
    }
  }
  return accepted;
}

for (const preset of ["mainnet", "minimal"] as const) {
  describe(`Gloas on a ${preset}-preset devnet`, () => {
    const configPath = dir.file(
      `${preset}-config.yaml`,
      devnetConfigYaml({ minGenesisTime: 1_700_000_000, preset, gloasForkEpoch: GLOAS_EPOCH }),
    );
    let oracle: GloasOracleOutput;
    let devnet: NetworkConstants;

    beforeAll(async () => {
      oracle = await gloasOracle(preset, {
        configPath,
        genesisValidatorsRoot: GVR,
        seed: preset === "mainnet" ? 0x6105 : 0x6106,
        casesPerVariant: CASES_PER_VARIANT,
      });
      const loaded = readSpecConfig(configPath, { genesis_validators_root: GVR });
      if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
      devnet = loaded.network;
    });

    test("the oracle is Lodestar on this preset, and the config.yaml schedules Gloas for sigil", () => {
      const minimal = preset === "minimal";
      expect(oracle.facts).toEqual({
        activePreset: preset,
        slotsPerEpoch: minimal ? 8 : 32,
        ptcSize: minimal ? 16 : 512,
      });
      expect(devnet.preset.PRESET_BASE).toBe(preset);
      expect(devnet.gloasForkEpoch).toBe(BigInt(GLOAS_EPOCH));
      expect(devnet.gloasForkVersion && hex(devnet.gloasForkVersion)).toBe("0x80000038");
    });

    test("every type, shape and alias: sigil computes Lodestar's signing root", () => {
      expect([...new Set(oracle.cases.map((c) => c.variant))].sort()).toEqual(VARIANTS);
      for (const c of oracle.cases) {
        expect(sigilRoot(c.body, devnet), c.name).toBe(c.signingRoot);
        expect(sigilRoot({ ...c.body, signingRoot: c.signingRoot }, devnet), c.name).toBe(
          c.signingRoot,
        );
        const other = `0x${c.signingRoot.slice(2, 64)}${c.signingRoot.slice(-2) === "00" ? "01" : "00"}`;
        expect(sigilRoot({ ...c.body, signingRoot: other }, devnet), c.name).toStartWith(
          "signing_root_mismatch: ",
        );
      }
    });

    test("the random objects carry uint64 values above 2^53 and self-built envelopes", () => {
      const withBig = new Set(
        oracle.cases.filter((c) => hasUintAbove2p53(c.body)).map((c) => c.variant),
      );
      for (const variant of VARIANTS.filter((v) =>
        /^(EXECUTION_PAYLOAD_ENVELOPE|EXECUTION_PAYLOAD_BID|PROPOSER_PREFERENCES) /.test(v),
      )) {
        expect(withBig.has(variant), variant).toBe(true);
      }
      const selfBuilt = oracle.cases.filter((c) =>
        JSON.stringify(c.body).includes('"builder_index":"18446744073709551615"'),
      );
      expect(selfBuilt.length).toBeGreaterThan(0);
    });

    test("a running signer signs each of them; every signature verifies with blst against Lodestar's root", async () => {
      const s = await startInProcessSigner(dir, `gloas-${preset}`, {
        yaml: [
          `network: "${configPath}"`,
          `network_config: {genesis_validators_root: "${GVR}"}`,
          `key_sources: {filesystem: {paths: ["${keysDir}"]}}`,
          `antislashing: {backend: sqlite, path: "${join(dir.path, `gloas-${preset}.sqlite`)}"}`,
        ],
      });
      try {
        const unslashable = oracle.cases.filter((c) => !c.slashable);
        const slashable = acceptableInOrder(oracle.cases.filter((c) => c.slashable));
        expect(slashable.length).toBeGreaterThan(6);
        for (const c of [...unslashable, ...slashable]) {
          const response = await postSign(s.url, KEY, c.body);
          const text = await response.text();
          expect(response.status, `${c.name}: ${text}`).toBe(200);
          const { signature } = JSON.parse(text) as { signature: string };
          expect(
            verifiesAgainstOracle({ pubkey: KEY, signingRoot: c.signingRoot }, signature),
            c.name,
          ).toBe(true);
        }
        // Each new operation is counted under its own name.
        const metrics = await (await fetch(`${s.signer.metricsUrl}/metrics`)).text();
        for (const operation of [
          "PAYLOAD_ATTESTATION_MESSAGE",
          "EXECUTION_PAYLOAD_ENVELOPE",
          "PROPOSER_PREFERENCES",
          "EXECUTION_PAYLOAD_BID",
          "BUILDER_REQUEST_AUTH",
        ]) {
          expect(metrics).toContain(
            `signer_signing_requests_total{operation="${operation}",status="signed"}`,
          );
        }
      } finally {
        await s.stop();
      }
    });

    test("slashing protection as before: a double vote across index 0/1 and a second block at a slot are refused 412", async () => {
      const s = await startInProcessSigner(dir, `gloas-slashing-${preset}`, {
        yaml: [
          `network: "${configPath}"`,
          `network_config: {genesis_validators_root: "${GVR}"}`,
          `key_sources: {filesystem: {paths: ["${keysDir}"]}}`,
          `antislashing: {backend: sqlite, path: "${join(dir.path, `gloas-slashing-${preset}.sqlite`)}"}`,
        ],
      });
      const sign = async (body: Record<string, unknown>) => {
        const response = await postSign(s.url, KEY, body);
        return { status: response.status, json: (await response.json()) as Record<string, string> };
      };
      try {
        const vote = oracle.cases.find(
          (c) => c.body.type === "ATTESTATION" && c.slot >= GLOAS_EPOCH * 8,
        );
        const block = oracle.cases.find((c) => c.body.type === "BLOCK_V2");
        if (!vote || !block) throw new Error("no attestation or block case");

        const signed = await sign(vote.body);
        expect(signed.status).toBe(200);
        expect(
          verifiesAgainstOracle(
            { pubkey: KEY, signingRoot: vote.signingRoot },
            signed.json.signature ?? "",
          ),
        ).toBe(true);
        // The same vote again is the same message: signed again.
        expect((await sign(vote.body)).status).toBe(200);
        // The other payload status for the same target: another root, a double vote.
        const data = vote.body.attestation as { index: string };
        const flipped = {
          ...vote.body,
          attestation: { ...data, index: data.index === "0" ? "1" : "0" },
        };
        const refused = await sign(flipped);
        expect(refused.status).toBe(412);
        expect(refused.json.code).toBe("slashing_protection");

        expect((await sign(block.body)).status).toBe(200);
        const beaconBlock = block.body.beacon_block as {
          version: string;
          block_header: Record<string, string>;
        };
        const other = {
          ...block.body,
          beacon_block: {
            ...beaconBlock,
            block_header: { ...beaconBlock.block_header, body_root: `0x${"77".repeat(32)}` },
          },
        };
        const second = await sign(other);
        expect(second.status).toBe(412);
        expect(second.json.code).toBe("slashing_protection");
      } finally {
        await s.stop();
      }
    });
  });
}
