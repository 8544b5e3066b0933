import { isIPv6 } from "node:net";

/**
 * Which Host headers are valid (RFC 9110 §7.2 with RFC 3986 §3.2.2) and which a listener answers
 * (`server.host_allowlist`), as plain functions for the listeners and the config check alike.
 */

export type HostCheck =
  | {
      readonly ok: true /** Lower case; an IPv6 literal without its brackets. */;
      readonly name: string;
    }
  | { readonly ok: false; readonly reason: string };

const MAX_HOST_LENGTH = 262; // a 255-character name, ":" and a 5-digit port, with room for brackets
const MAX_PORT = 65535;
// reg-name = *( unreserved / pct-encoded / sub-delims ); a port is digits only.
const REG_NAME_PATTERN = "(?:[A-Za-z0-9\\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+";
const REG_NAME = new RegExp(`^${REG_NAME_PATTERN}$`);
const REG_NAME_HOST = new RegExp(`^(${REG_NAME_PATTERN})(?::(\\d*))?$`);
const IP_LITERAL_HOST = /^\[([^\]]+)\](?::(\d*))?$/;

/** Parses a request's Host header; `null` is a missing header (only HTTP/1.0 gets this far). */
export function checkHost(value: string | null): HostCheck {
  if (value === null) return { ok: false, reason: "the request has no Host header" };
  if (value === "") return { ok: false, reason: "the Host header is empty" };
  const shown = JSON.stringify(value.slice(0, 80));
  if (value.length > MAX_HOST_LENGTH) return { ok: false, reason: "the Host header is too long" };
  const literal = IP_LITERAL_HOST.exec(value);
  const match = literal ?? REG_NAME_HOST.exec(value);
  const name = match?.[1];
  if (literal && name?.includes("%")) {
    return {
      ok: false,
      reason: `the Host header ${shown} has an IPv6 zone id: a zone names an interface of the client, not this host`,
    };
  }
  if (!name || (literal && !isIPv6(name))) {
    return { ok: false, reason: `the Host header ${shown} is not a valid host[:port]` };
  }
  const port = match[2];
  if (port !== undefined && port !== "" && Number(port) > MAX_PORT) {
    return { ok: false, reason: `the Host header ${shown} has a port above ${MAX_PORT}` };
  }
  return { ok: true, name: literal ? canonicalIpv6(name) : name.toLowerCase() };
}

/** `::1` and `0:0:0:0:0:0:0:1` are one address: both sides of a comparison take this form. */
function canonicalIpv6(address: string): string {
  return new URL(`http://[${address}]/`).hostname.slice(1, -1);
}

/** The names a listener answers; `any` when the list holds `*`. */
export type HostAllowlist = ReadonlySet<string> | "any";

const WILDCARD_ADDRESSES = new Set(["0.0.0.0", "::", "[::]"]);

/**
 * The configured names plus the address the listener is bound to (a client that names the
 * address itself cannot be a DNS-rebinding page: rebinding needs a domain name). Entries are
 * compared as `checkHost` reports names: lower case, IPv6 without brackets.
 */
export function hostAllowlist(entries: readonly string[], listenAddress: string): HostAllowlist {
  if (entries.includes("*")) return "any";
  const names = new Set<string>();
  const add = (entry: string) => {
    const unbracketed = entry.startsWith("[") && entry.endsWith("]") ? entry.slice(1, -1) : entry;
    names.add(isIPv6(unbracketed) ? canonicalIpv6(unbracketed) : unbracketed.toLowerCase());
  };
  for (const entry of entries) add(entry);
  if (!WILDCARD_ADDRESSES.has(listenAddress)) add(listenAddress);
  return names;
}

export function isHostAllowed(name: string, allowlist: HostAllowlist): boolean {
  return allowlist === "any" || allowlist.has(name);
}

const ZONE_ID_PROBLEM = (entry: string) =>
  `${JSON.stringify(entry)} has an IPv6 zone id (%…), which a Host header never carries: list the address without it`;

/** Why a listen address cannot be bound as given, or undefined when it can be tried. */
export function listenAddressProblem(address: string): string | undefined {
  if (!address.includes("%")) return undefined;
  return `${JSON.stringify(address)} has an IPv6 zone id (%…), which sigil does not take (clients' URLs and Host headers cannot name it): listen on a global or loopback address, or on ::`;
}

/** Why a configured entry can never match a Host header, or undefined when it can. */
export function allowlistEntryProblem(entry: string): string | undefined {
  const unbracketed = entry.startsWith("[") && entry.endsWith("]") ? entry.slice(1, -1) : entry;
  if (unbracketed.includes("%") && isIPv6(unbracketed.split("%")[0] ?? ""))
    return ZONE_ID_PROBLEM(entry);
  if (entry === "*" || isIPv6(unbracketed) || REG_NAME.test(entry)) return undefined;
  return `${JSON.stringify(entry)} is not a host name or address (list names without a port; "*" allows any)`;
}
