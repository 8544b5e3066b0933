// The signatures the docs show (and the doc tests expect sigil to return) are computed here
// without sigil: the signing root by Lodestar's SSZ types (test/support/oracle.ts), the signature
// by @noble/curves with the interop keys. So a doc test cannot pass by echoing sigil's own output.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { bls12_381 } from "@noble/curves/bls12-381.js";
import { interopSecret } from "../support/interop";
import { bytesToHex, oracleAttestationRoot } from "../support/oracle";
import { documentedFiles, REPO_ROOT } from "./harness";
import { parseMarkdown } from "./markdown";

const ETH_DST = "BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";

/** examples/sign-attestation.json signed by each example key (interop keys 0 to 3). */
function oracleSignatures(): Map<string, string> {
  const request = JSON.parse(
    readFileSync(join(REPO_ROOT, "examples/sign-attestation.json"), "utf8"),
  );
  const { fork, genesis_validators_root } = request.fork_info;
  const targetEpoch = BigInt(request.attestation.target.epoch);
  const version = targetEpoch < BigInt(fork.epoch) ? fork.previous_version : fork.current_version;
  const root = oracleAttestationRoot(request.attestation, version, genesis_validators_root);
  const sigs = bls12_381.longSignatures;
  const signatures = new Map<string, string>();
  for (let index = 0; index < 4; index++) {
    const secret = interopSecret(index);
    const signature = sigs.Signature.toBytes(sigs.sign(sigs.hash(root, ETH_DST), secret));
    signatures.set(bytesToHex(signature), `interop key ${index}`);
  }
  return signatures;
}

test("every signature a doc test expects is the independently computed one", () => {
  const expected = documentedFiles().flatMap((file) =>
    parseMarkdown(readFileSync(join(REPO_ROOT, file), "utf8")).blocks.flatMap((block) =>
      block.directives.flatMap((directive) =>
        directive.kind === "expect-output"
          ? [...directive.text.matchAll(/0x[0-9a-f]{192}/g)].map((m) => ({
              file,
              line: block.line,
              signature: m[0],
            }))
          : [],
      ),
    ),
  );
  // README, getting-started and backup-restore each check one.
  expect(expected.length).toBeGreaterThanOrEqual(3);
  const oracle = oracleSignatures();
  const unknown = expected.filter(({ signature }) => !oracle.has(signature));
  expect(unknown).toEqual([]);
});
