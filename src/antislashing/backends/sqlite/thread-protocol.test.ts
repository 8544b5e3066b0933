import { describe, expect, test } from "bun:test";
import {
  decidedAnswer,
  KIND_ATTESTATION,
  KIND_BLOCK,
  packChecks,
  readDecided,
  unpackChecks,
} from "./thread-protocol";

const bytes = (fill: number) => new Uint8Array(32).fill(fill);
const key = (digit: string) => `0x${digit.repeat(96)}`;

describe("the slashing thread's packed messages", () => {
  test("checks cross in one byte array and come back as sent, through a structured clone", () => {
    const sent = [
      {
        kind: KIND_ATTESTATION,
        gvr: bytes(1),
        pubkey: key("a"),
        first: 7n,
        second: 2n ** 64n - 1n,
        signingRoot: bytes(2),
      },
      {
        kind: KIND_BLOCK,
        gvr: bytes(3),
        pubkey: key("0"),
        first: 123456789n,
        second: 0n,
        signingRoot: bytes(4),
      },
      {
        kind: KIND_ATTESTATION,
        gvr: bytes(5),
        pubkey: `0x${"0123456789abcdef".repeat(6)}`,
        first: 0n,
        second: 1n,
        signingRoot: bytes(6),
      },
    ];
    const message = packChecks(9, sent);
    expect(message.packed).toBeInstanceOf(Uint8Array);
    expect(message.packed.length).toBe(129 * sent.length);
    const received = unpackChecks(structuredClone(message));
    expect(received).toEqual(sent);
  });

  test("a packed array at an odd offset is read as well (copied to align its numbers)", () => {
    const message = packChecks(1, [
      {
        kind: KIND_BLOCK,
        gvr: bytes(9),
        pubkey: key("f"),
        first: 42n,
        second: 0n,
        signingRoot: bytes(8),
      },
    ]);
    const shifted = new Uint8Array(message.packed.length + 1).subarray(1);
    shifted.set(message.packed);
    expect(unpackChecks({ ...message, packed: shifted })[0]?.first).toBe(42n);
  });

  test("the decisions' barriers and outcomes cross in one byte array", () => {
    const { message, barriers, outcomes } = decidedAnswer(4, 3);
    barriers.set([7, 7, 0xffffffff]);
    outcomes.set([0, 2, 1]);
    const read = readDecided(structuredClone(message));
    expect([...read.barriers]).toEqual([7, 7, 0xffffffff]);
    expect([...read.outcomes]).toEqual([0, 2, 1]);
    expect(message.details).toBeNull();
  });
});
