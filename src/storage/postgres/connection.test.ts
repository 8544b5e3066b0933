import { describe, expect, test } from "bun:test";
import { reconnectDelaySeconds } from "./connection";

describe("reconnectDelaySeconds", () => {
  test("grows from 5–10 ms like the driver's curve", () => {
    expect(reconnectDelaySeconds(0, () => 0)).toBeCloseTo(0.005);
    expect(reconnectDelaySeconds(0, () => 1)).toBeCloseTo(0.01);
    expect(reconnectDelaySeconds(2, () => 1)).toBeCloseTo(0.09);
  });

  test("never waits more than one second, however long the outage", () => {
    for (const retries of [5, 10, 50, 1000]) {
      expect(reconnectDelaySeconds(retries, () => 1)).toBe(1);
      expect(reconnectDelaySeconds(retries, () => 0)).toBe(0.5);
    }
  });
});
