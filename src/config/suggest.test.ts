import { expect, test } from "bun:test";
import { closestName, editDistance } from "./suggest";

test("edit distance counts an adjacent swap as one edit", () => {
  expect(editDistance("listen_prot", "listen_port")).toBe(1);
  expect(editDistance("polices", "policies")).toBe(1);
  expect(editDistance("", "abc")).toBe(3);
  expect(editDistance("same", "same")).toBe(0);
});

test("the closest known name within two edits, else one that contains the word", () => {
  const flags = ["server-listen-port", "metrics-listen-port", "config", "file"];
  expect(closestName("server-listen-prot", flags)).toBe("server-listen-port");
  expect(closestName("confg", flags)).toBe("config");
  expect(closestName("listen-port", flags)).toBe("server-listen-port");
  expect(closestName("zzzzzz", flags)).toBeUndefined();
  // Short words: one edit at most, and no match by containment.
  expect(closestName("fil", flags)).toBe("file");
  expect(closestName("xy", ["ab", "cd"])).toBeUndefined();
});
