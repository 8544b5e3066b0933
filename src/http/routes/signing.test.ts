import { describe, expect, test } from "bun:test";
import { signatureResponse, wantsJsonSignature } from "./signing";

const headersOf = (response: Response) => [...response.headers.entries()];

describe("signatureResponse", () => {
  test("JSON: the same headers and body Response.json gives, for any signature bytes", async () => {
    for (let i = 0; i < 50; i++) {
      const signature = crypto.getRandomValues(new Uint8Array(96));
      const ours = signatureResponse(signature, "application/json");
      const oracle = Response.json({ signature: `0x${Buffer.from(signature).toString("hex")}` });
      expect(ours.status).toBe(200);
      expect(headersOf(ours)).toEqual(headersOf(oracle));
      const body = await ours.text();
      expect(body).toBe(await oracle.text());
      expect(JSON.parse(body)).toEqual({
        signature: `0x${Buffer.from(signature).toString("hex")}`,
      });
    }
  });

  test("bare hex as text/plain when JSON is not accepted", async () => {
    const signature = new Uint8Array(96).fill(0xab);
    const response = signatureResponse(signature, "text/plain");
    expect(response.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await response.text()).toBe(`0x${"ab".repeat(96)}`);
  });

  test("the Accept rule (Web3Signer's)", () => {
    expect(wantsJsonSignature(null)).toBe(false);
    expect(wantsJsonSignature("text/plain")).toBe(false);
    expect(wantsJsonSignature("text/plain, application/json;q=0.5")).toBe(true);
    expect(wantsJsonSignature("*/*")).toBe(true);
    expect(wantsJsonSignature("application/*")).toBe(true);
  });
});
