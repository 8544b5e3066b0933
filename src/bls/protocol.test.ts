import { describe, expect, test } from "bun:test";
import {
  packSignJobs,
  readSigned,
  SIGNATURE_BYTES,
  type SignJob,
  signedAnswer,
  unpackSignJobs,
} from "./protocol";

const bytes = (length: number, seed: number) =>
  Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff);

describe("the packed sign messages", () => {
  test("jobs come out as they went in: numbers, key ids and messages of any length", () => {
    const jobs: SignJob[] = [
      { job: 1, id: 7, message: bytes(32, 1) },
      { job: 2 ** 40, id: 0, message: bytes(0, 2) },
      { job: 3, id: 123_456, message: bytes(100, 3) },
      { job: 4, id: 8, message: bytes(32, 4) },
    ];
    const message = packSignJobs(jobs);
    expect(message.count).toBe(4);
    // One array crosses to the worker, not one per field or per job.
    expect(Object.values(message).filter((v) => ArrayBuffer.isView(v))).toHaveLength(1);
    const cloned = structuredClone(message);
    expect(unpackSignJobs(cloned)).toEqual(jobs);
  });

  test("a packed array that does not start where a float64 can is copied, not misread", () => {
    const jobs: SignJob[] = [{ job: 9, id: 5, message: bytes(32, 9) }];
    const { count, packed } = packSignJobs(jobs);
    const shifted = new Uint8Array(packed.length + 3);
    shifted.set(packed, 3);
    expect(unpackSignJobs({ type: "sign", count, packed: shifted.subarray(3) })).toEqual(jobs);
  });

  test("the answer: each job number with its signature", () => {
    const answer = signedAnswer(3);
    for (let i = 0; i < 3; i++) {
      answer.jobs[i] = 100 + i;
      answer.signatures.set(bytes(SIGNATURE_BYTES, i), i * SIGNATURE_BYTES);
    }
    answer.message.errors = [null, "refused", null];
    const received = structuredClone(answer.message);
    const { jobs, signatures } = readSigned(received);
    expect([...jobs]).toEqual([100, 101, 102]);
    for (let i = 0; i < 3; i++) {
      expect(signatures.subarray(i * SIGNATURE_BYTES, (i + 1) * SIGNATURE_BYTES)).toEqual(
        bytes(SIGNATURE_BYTES, i),
      );
    }
    expect(received.errors).toEqual([null, "refused", null]);
  });
});
