import { expect, test } from "bun:test";
import { counted } from "./count";

test("counted: singular for one, plural otherwise, bigint too", () => {
  expect(counted(1, "validator")).toBe("1 validator");
  expect(counted(0, "validator")).toBe("0 validators");
  expect(counted(8, "bit")).toBe("8 bits");
  expect(counted(1n, "byte")).toBe("1 byte");
  expect(counted(2, "more validator has", "more validators have")).toBe("2 more validators have");
});
