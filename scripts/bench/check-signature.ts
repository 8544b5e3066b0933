// The one request a benchmark checks by hand before measuring: the attestation of
// attestationBody(0, 1, 0), whose signature must verify over the signing root the test oracle
// computes, so that a benchmark never measures a signer that signs the wrong thing.
import { PublicKey, Signature, verify } from "@chainsafe/blst";
import { attestationRequest } from "../../test/support/slashing";

export async function checkOneSignature(url: string, pubkey: string, body: string): Promise<void> {
  const response = await fetch(`${url}/api/v1/eth2/sign/${pubkey}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body,
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`first request: HTTP ${response.status} ${text}`);
  const signature = (JSON.parse(text) as { signature: string }).signature;
  const root = attestationRequest(0, 1, 0).message.signingRoot;
  const valid = verify(
    Buffer.from(root.slice(2), "hex"),
    PublicKey.fromHex(pubkey),
    Signature.fromHex(signature),
  );
  if (!valid) throw new Error("the signer's signature does not verify over the expected root");
}
