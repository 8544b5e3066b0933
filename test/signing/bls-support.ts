/** Helpers shared by the BLS backend tests (src/bls/*.test.ts). */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";

export const BLS_VECTOR_DIR = join(import.meta.dir, "../vectors/bls-sign-verify");

export function unhex(hex: string): Uint8Array {
  const body = hex.startsWith("0x") ? hex.slice(2) : hex;
  if (body.length % 2 !== 0 || !/^[0-9a-f]*$/i.test(body)) throw new Error(`bad hex: ${hex}`);
  return Uint8Array.from(Buffer.from(body, "hex"));
}

export function hex(bytes: Uint8Array): string {
  return `0x${Buffer.from(bytes).toString("hex")}`;
}

/** 32-byte big-endian encoding of a non-negative integer below 2^256. */
export function be32(value: bigint): Uint8Array {
  const out = new Uint8Array(32);
  let v = value;
  for (let i = 31; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  if (v !== 0n) throw new Error("value does not fit in 32 bytes");
  return out;
}

export interface SignVector {
  name: string;
  input: { privkey: string; message: string };
  output: string | null;
}

export interface VerifyVector {
  name: string;
  input: { pubkey: string; message: string; signature: string };
  output: boolean;
}

export interface BlsVectors {
  ciphersuite: string;
  sign: SignVector[];
  verify: VerifyVector[];
}

export function loadJsonVectors(): BlsVectors {
  return JSON.parse(readFileSync(join(BLS_VECTOR_DIR, "bls_vectors.json"), "utf8")) as BlsVectors;
}

/** The per-case YAML files (upstream format), named like the JSON entries. */
export function loadYamlVectors(): BlsVectors {
  const read = <T>(kind: "sign" | "verify"): T[] =>
    readdirSync(join(BLS_VECTOR_DIR, kind))
      .filter((f) => f.endsWith(".yaml"))
      .sort()
      .map((f) => {
        const data = parse(readFileSync(join(BLS_VECTOR_DIR, kind, f), "utf8")) as Omit<T, "name">;
        return { name: f.slice(0, -".yaml".length), ...data } as T;
      });
  return {
    ciphersuite: "BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_",
    sign: read<SignVector>("sign"),
    verify: read<VerifyVector>("verify"),
  };
}
