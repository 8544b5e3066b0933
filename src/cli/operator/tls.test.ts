import { describe, expect, test } from "bun:test";
import { tlsFailureHint } from "./tls";

const https = { https: true, hostname: "signer.example", tls: undefined };
const withCa = { ...https, tls: { ca: "pem" } };
const withClient = { ...https, tls: { ca: "pem", cert: "pem", key: "pem" } };

describe("tlsFailureHint", () => {
  test("an untrusted certificate: --ca-cert missing, or the wrong CA in it", () => {
    expect(tlsFailureHint("SELF_SIGNED_CERT_IN_CHAIN", https)).toContain("pass --ca-cert");
    expect(tlsFailureHint("UNABLE_TO_VERIFY_LEAF_SIGNATURE", withCa)).toBe(
      "the signer's certificate is not signed by a CA in --ca-cert",
    );
  });

  test("a refused handshake points at the client certificate", () => {
    expect(tlsFailureHint("EPROTO", withCa)).toContain("pass --client-cert and --client-key");
    expect(tlsFailureHint("ECONNRESET", withClient)).toContain("client_ca_file");
  });

  test("a certificate for another name, an expired one", () => {
    expect(tlsFailureHint("ERR_TLS_CERT_ALTNAME_INVALID", https)).toContain(
      "does not name signer.example",
    );
    expect(tlsFailureHint("CERT_HAS_EXPIRED", https)).toBe("the signer's certificate has expired");
  });

  test("plain http to an https listener; unrelated failures get no hint", () => {
    expect(tlsFailureHint("ECONNRESET", { ...https, https: false })).toContain("https://");
    expect(tlsFailureHint("EPROTO", { ...https, https: false })).toBeUndefined();
    expect(tlsFailureHint("ENOTFOUND", https)).toBeUndefined();
  });
});
