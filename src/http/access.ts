import type { Authenticator, Principal } from "../auth/authenticator";
import { requestMeta } from "./request-meta";

/** Who sent this request: the Authorization header and the peer address, nothing else. */
export type Authenticate = (request: Request) => Promise<Principal>;

export function authenticateWith(authenticator: Authenticator): Authenticate {
  return (request) =>
    authenticator.authenticate(request.headers.get("authorization"), requestMeta(request));
}
