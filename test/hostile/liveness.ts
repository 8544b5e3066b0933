// "The signer stays up": /upcheck answers OK, and a fresh attestation signs with a signature that
// verifies over the signing root Lodestar computes (test/support/slashing.ts), checked with blst.
import { expect } from "bun:test";
import { verifiesAgainstOracle } from "../support/oracle";
import { attestationRequest } from "../support/slashing";

export class Liveness {
  /** Signing roots (hex, no 0x) of every attestation the checks had signed. */
  readonly roots: string[] = [];
  #epoch = 0;

  constructor(
    private readonly url: () => string,
    private readonly pubkey: string,
    private readonly token: () => string,
  ) {}

  async check(): Promise<void> {
    const upcheck = await fetch(`${this.url()}/upcheck`);
    expect(upcheck.status).toBe(200);
    expect(await upcheck.text()).toBe("OK");
    this.#epoch += 2;
    const { body, message } = attestationRequest(this.#epoch, this.#epoch + 1, this.#epoch);
    const response = await fetch(`${this.url()}/api/v1/eth2/sign/${this.pubkey}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${this.token()}`,
        "content-type": "application/json",
        accept: "application/json",
      },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    const { signature } = (await response.json()) as { signature: string };
    expect(
      verifiesAgainstOracle({ pubkey: this.pubkey, signingRoot: message.signingRoot }, signature),
    ).toBe(true);
    this.roots.push(message.signingRoot.slice(2));
  }
}
