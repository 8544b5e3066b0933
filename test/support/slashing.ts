// Request builders and an independent slashability check for end-to-end anti-slashing tests.
// Signing roots come from Lodestar (test oracle), not from sigil.
import { ssz } from "@lodestar/types";
import { bytesToHex, oracleDomain, oracleSigningRoot } from "./oracle";

export const INTEROP_KEYS = [
  "0xa99a76ed7796f7be22d5b7e85deeb7c5677e88e511e0b337618f8c4eb61349b4bf2d153f649f7b53359fe8b94a38e44c",
  "0xb89bebc699769726a318c8e9971bd3171297c61aea4a6578a7a4f94b547dcba5bac16a89108b6b6a1fe3695d1a874a0b",
  "0xa3a32b0f8b4ddb83f1a0a853d81dd725dfe577d4f4c3db8ece52ce2b026eca84815c1a7e8e92a4de3d755733bf7e4a9b",
  "0x88c141df77cd9d8d7a71a75c826c41a9c9f03c6ee1b180f3e7852f6a280099ded351b58d66e653af8e42816a4d8f532e",
];

export const GVR = "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95";
const FORK = { previous_version: "0x04000000", current_version: "0x05000000", epoch: "364032" };
const FIRST_EPOCH = 370000;

export interface SignedMessage {
  pubkey: string;
  kind: "attestation" | "block";
  slot?: number;
  source?: number;
  target?: number;
  signingRoot: string;
}

/** An attestation request for epochs counted from a base after Electra; `salt` varies the root. */
export function attestationRequest(source: number, target: number, salt: number) {
  const data = {
    slot: String((FIRST_EPOCH + target) * 32),
    index: "0",
    beacon_block_root: `0x${salt.toString(16).padStart(64, "0")}`,
    source: { epoch: String(FIRST_EPOCH + source), root: `0x${"22".repeat(32)}` },
    target: { epoch: String(FIRST_EPOCH + target), root: `0x${"33".repeat(32)}` },
  };
  const objectRoot = ssz.phase0.AttestationData.hashTreeRoot(
    ssz.phase0.AttestationData.fromJson(data),
  );
  const root = oracleSigningRoot(objectRoot, oracleDomain("0x01000000", FORK.current_version, GVR));
  return {
    body: {
      type: "ATTESTATION",
      fork_info: { fork: FORK, genesis_validators_root: GVR },
      attestation: data,
    },
    message: {
      kind: "attestation" as const,
      source: FIRST_EPOCH + source,
      target: FIRST_EPOCH + target,
      signingRoot: bytesToHex(root),
    },
  };
}

export function blockRequest(slotOffset: number, salt: number) {
  const header = {
    slot: String(FIRST_EPOCH * 32 + slotOffset),
    proposer_index: "7",
    parent_root: `0x${salt.toString(16).padStart(64, "0")}`,
    state_root: `0x${"44".repeat(32)}`,
    body_root: `0x${"55".repeat(32)}`,
  };
  const objectRoot = ssz.phase0.BeaconBlockHeader.hashTreeRoot(
    ssz.phase0.BeaconBlockHeader.fromJson(header),
  );
  const root = oracleSigningRoot(objectRoot, oracleDomain("0x00000000", FORK.current_version, GVR));
  return {
    body: {
      type: "BLOCK_V2",
      fork_info: { fork: FORK, genesis_validators_root: GVR },
      beacon_block: { version: "ELECTRA", block_header: header },
    },
    message: {
      kind: "block" as const,
      slot: FIRST_EPOCH * 32 + slotOffset,
      signingRoot: bytesToHex(root),
    },
  };
}

/** Every pair of signed messages that EIP-3076 calls slashable (double proposal, double vote, surround). */
export function slashablePairs(
  messages: readonly SignedMessage[],
): [SignedMessage, SignedMessage][] {
  const found: [SignedMessage, SignedMessage][] = [];
  for (const [i, a] of messages.entries()) {
    for (const b of messages.slice(i + 1)) {
      if (a.pubkey !== b.pubkey || a.kind !== b.kind || a.signingRoot === b.signingRoot) continue;
      if (a.kind === "block" && a.slot === b.slot) found.push([a, b]);
      if (a.kind !== "attestation") continue;
      const [as, at, bs, bt] = [a.source ?? 0, a.target ?? 0, b.source ?? 0, b.target ?? 0];
      if (at === bt || (as < bs && at > bt) || (bs < as && bt > at)) found.push([a, b]);
    }
  }
  return found;
}

export async function postSign(url: string, pubkey: string, body: unknown): Promise<Response> {
  return fetch(`${url}/api/v1/eth2/sign/${pubkey}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body),
  });
}
