import { SigilError } from "../errors";

/** The seal feature's errors, worded once. */

export function invalid(message: string): SigilError {
  return new SigilError("invalid_request", message);
}

export function alreadyInitialized(): SigilError {
  return new SigilError(
    "already_initialized",
    "the signer is already initialized: init runs once (use rotate quorum to change operators)",
  );
}

export function notInitialized(): SigilError {
  return new SigilError(
    "not_initialized",
    "the signer is not initialized: run sigil operator init with the setup token from its log",
  );
}

export function badSetupToken(): SigilError {
  return new SigilError("invalid_token", "invalid or already used setup token");
}
