/**
 * Warnings about who can reach the listeners (shown by `serve` and `config check`, never fatal):
 * a listener on an unspecified address (0.0.0.0, ::) takes every interface of the host, and a
 * signing listener off loopback without TLS carries its tokens in clear.
 */
import type { Config } from "./schema";

const UNSPECIFIED = new Set(["0.0.0.0", "::", "[::]"]);

export function isUnspecifiedAddress(address: string): boolean {
  return UNSPECIFIED.has(address);
}

/** 127.0.0.0/8, ::1 (any spelling), and the name localhost: only this host can connect. */
export function isLoopbackAddress(address: string): boolean {
  const bare = address.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (bare === "localhost") return true;
  if (/^127(?:\.\d{1,3}){3}$/.test(bare)) return true;
  if (!bare.includes(":")) return false;
  try {
    return new URL(`http://[${bare}]/`).hostname === "[::1]";
  } catch {
    return false;
  }
}

/** As app/auth.ts chooses it: which of the four auth modes the configuration sets. */
export function authMode(config: Config): "stateful" | "static" | "legacy" | "none" {
  if (config.signer_state) return "stateful";
  if (config.static_auth) return "static";
  if (config.auth_policies || config.unauthenticated_policy) return "legacy";
  return "none";
}

/**
 * The signing listener, in one line: without auth, anyone who reaches the port can have the keys
 * sign (the Host allow-list is DNS-rebinding protection, not access control: any client can send
 * `Host: localhost`); with the default allow-list, validator clients on other hosts that name
 * this one get 403 until their names are listed; otherwise, that every network can reach it.
 */
function signingListenerWarnings(
  config: Config,
  explicit: ReadonlySet<string>,
  configPath: string | undefined,
): string[] {
  const { listen_address: address, listen_port: port, host_allowlist } = config.server;
  if (!isUnspecifiedAddress(address)) return [];
  const noAuth = authMode(config) === "none";
  const defaultAllowlist = !explicit.has("server.host_allowlist");
  const listening = `server.listen_address is ${address} (every interface${configPath ? "" : ", the default: no -c file was given"})`;
  const allowlist = `server.host_allowlist is the default (${host_allowlist.join(", ")}), so requests naming this host otherwise (a validator client's http://signer:${port}) get 403 host_not_allowed until those names, or "*", are listed`;
  if (noAuth) {
    const open = `${listening} and no auth is configured: anyone who can reach port ${port} can have the loaded keys sign (the Host allow-list does not stop them); listen on 127.0.0.1, or configure auth (docs/auth.md)`;
    return [defaultAllowlist ? `${open}. Also, ${allowlist}` : open];
  }
  if (defaultAllowlist) return [`${listening}, but ${allowlist}`];
  return [
    `${listening}: every network of this host can reach the signing API on port ${port}; listen on the address of the validator clients' network if it has one`,
  ];
}

/** Tokens in an Authorization header over plain http cross every network between in clear. */
function clearTokenWarnings(config: Config): string[] {
  const { listen_address: address, tls } = config.server;
  if (tls || authMode(config) === "none" || isLoopbackAddress(address)) return [];
  return [
    `server.listen_address is ${address} (not loopback) and server.tls is not set: tokens, and what is signed, cross the network in clear; set server.tls (docs/tls.md), or listen on 127.0.0.1 behind a TLS proxy`,
  ];
}

/** The metrics listener has no auth and no TLS: on every interface, anyone can read it. */
function metricsListenerWarnings(config: Config): string[] {
  const { listen_address: address, listen_port: port } = config.metrics;
  if (!isUnspecifiedAddress(address)) return [];
  return [
    `metrics.listen_address is ${address} (every interface): anyone who can reach port ${port} can read the metrics (plain http, no auth); listen on 127.0.0.1 or on the monitoring network's address`,
  ];
}

export function exposureWarnings(
  config: Config,
  explicit: ReadonlySet<string>,
  configPath: string | undefined,
): string[] {
  return [
    ...signingListenerWarnings(config, explicit, configPath),
    ...clearTokenWarnings(config),
    ...metricsListenerWarnings(config),
  ];
}
