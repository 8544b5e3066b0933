import { SigilError } from "../errors";

/** A path parameter as a string; Elysia gives null for one that is not valid percent-encoding. */
export function pathParam(value: unknown, name: string): string {
  if (typeof value !== "string" || value === "") {
    throw new SigilError(
      "invalid_request",
      `the ${name} in the path is not valid percent-encoding`,
    );
  }
  return value;
}
