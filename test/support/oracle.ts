// Independent computation of signing roots with Lodestar's SSZ types (dev dependency), for
// checking sigil's output. Nothing here is imported by src/.
import { PublicKey, Signature, verify } from "@chainsafe/blst";
import { ssz } from "@lodestar/types";

export const hexToBytes = (hex: string) =>
  Uint8Array.from(Buffer.from(hex.replace(/^0x/, ""), "hex"));
export const bytesToHex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;

/** Whether `signature` is the pubkey's BLS signature of the (independently computed) signing root. */
export function verifiesAgainstOracle(
  message: { readonly pubkey: string; readonly signingRoot: string },
  signature: string,
): boolean {
  try {
    return verify(
      hexToBytes(message.signingRoot),
      PublicKey.fromHex(message.pubkey),
      Signature.fromHex(signature),
      true,
      true,
    );
  } catch {
    return false;
  }
}

export function oracleDomain(
  domainType: string,
  forkVersion: string,
  genesisValidatorsRoot: string,
): Uint8Array {
  const forkDataRoot = ssz.phase0.ForkData.hashTreeRoot({
    currentVersion: hexToBytes(forkVersion),
    genesisValidatorsRoot: hexToBytes(genesisValidatorsRoot),
  });
  const domain = new Uint8Array(32);
  domain.set(hexToBytes(domainType), 0);
  domain.set(forkDataRoot.slice(0, 28), 4);
  return domain;
}

export function oracleSigningRoot(objectRoot: Uint8Array, domain: Uint8Array): Uint8Array {
  return ssz.phase0.SigningData.hashTreeRoot({ objectRoot, domain });
}

export function oracleAttestationRoot(data: unknown, forkVersion: string, gvr: string): Uint8Array {
  const value = ssz.phase0.AttestationData.fromJson(data);
  const domain = oracleDomain("0x01000000", forkVersion, gvr);
  return oracleSigningRoot(ssz.phase0.AttestationData.hashTreeRoot(value), domain);
}
