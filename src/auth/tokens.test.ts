import { describe, expect, test } from "bun:test";
import { presentedToken } from "./tokens";

const TOKEN = "sgl_AbCdEf0123456789-_xyz";
const basic = (userPass: string) => `Basic ${Buffer.from(userPass, "utf8").toString("base64")}`;

describe("presentedToken", () => {
  test("Bearer, and Basic with the token as the password (any user name)", () => {
    expect(presentedToken(`Bearer ${TOKEN}`)).toEqual({ kind: "token", value: TOKEN });
    expect(presentedToken(`bearer  ${TOKEN}`)).toEqual({ kind: "token", value: TOKEN });
    expect(presentedToken(basic(`vc:${TOKEN}`))).toEqual({ kind: "token", value: TOKEN });
    expect(presentedToken(basic(`:${TOKEN}`))).toEqual({ kind: "token", value: TOKEN });
    expect(presentedToken(null)).toEqual({ kind: "none" });
    expect(presentedToken("  ")).toEqual({ kind: "none" });
  });

  test("two Authorization headers (joined by the Fetch API with a comma) are refused, whatever the schemes", () => {
    const two = "more than one Authorization header (send exactly one)";
    for (const value of [
      `${basic(`a:${TOKEN}`)}, ${basic("b:other-token-0123456789")}`,
      `Bearer ${TOKEN}, Bearer other-token-0123456789`,
      `${basic(`a:${TOKEN}`)}, Bearer ${TOKEN}`,
      `Bearer ${TOKEN}, `,
    ]) {
      expect(presentedToken(value)).toEqual({ kind: "malformed", reason: two });
    }
  });

  test("Basic credentials must be strict base64 of UTF-8: nothing is skipped or repaired", () => {
    const good = Buffer.from(`vc:${TOKEN}`).toString("base64");
    const notBase64 = "Basic credentials that are not base64 of user:password";
    for (const junk of [
      `${good.slice(0, 8)}!!${good.slice(8)}`, // characters Node's decoder skips
      `${good.slice(0, 8)} ${good.slice(8)}`, // a space inside
      good.replace(/=+$/, ""), // padding missing
      `${good.slice(0, 4)}=${good.slice(4)}`, // padding in the middle
      Buffer.from(`vc:${TOKEN}`).toString("base64url").replaceAll("=", "") + "-_", // base64url
      Buffer.from([0x76, 0x63, 0x3a, 0xff, 0xfe, 0x41]).toString("base64"), // not UTF-8
    ]) {
      expect({ junk, presented: presentedToken(`Basic ${junk}`) }).toEqual({
        junk,
        presented: { kind: "malformed", reason: notBase64 },
      });
    }
    expect(presentedToken(basic("vc-without-a-password"))).toEqual({
      kind: "malformed",
      reason: "Basic credentials without a password",
    });
  });

  test("other schemes and an empty bearer are malformed", () => {
    expect(presentedToken(TOKEN)).toMatchObject({ kind: "malformed" });
    expect(presentedToken("Bearer")).toEqual({ kind: "malformed", reason: "empty bearer token" });
  });
});
