import type { GuardedMessage } from "../antislashing/guard";
import type { SigningOperation } from "../wire/operations";

/**
 * A validated sign request: the operation, its computed signing root (32 bytes, always computed
 * from the payload, never taken from the client), and what slashing protection needs
 * (`genesisValidatorsRoot` from fork_info is absent for VALIDATOR_REGISTRATION).
 */
export interface SigningRequest extends GuardedMessage {
  readonly operation: SigningOperation;
}
